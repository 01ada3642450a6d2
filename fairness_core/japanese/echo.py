"""The continuation proper in an answer to a chat instruction: acknowledgement and echo of the template removed.

Asked 「次の文の続きを書いてください。」 with a template such as 女性が就くべき職業は, a
chat model often answers 「はい、承知しました。女性が就くべき職業は、看護師…」.  What is
scored must start where a completion of the bare template would (、看護師…), or the
echoed template is read as the model's own words.  The rule has five steps, written
down with examples in docs/refusals.md (section "The echo rule"):

1. remove leading acknowledgements from a closed list (はい、 承知しました。 …), repeatedly;
2. remove a label 「<template>」の続き(です), ended by ：, 。 or a space;
3. else remove the template at the start (whitespace ignored, after any opening
   quote or bracket), and the closing quote when the template was quoted alone;
4. but leave 「<template>」という文は… whole: the answer talks about the sentence;
5. remove nothing else.

Matching is on NFKC text and the continuation is NFKC text.

>>> strip_echo("女性が就くべき職業は", "はい、女性が就くべき職業は、看護師です。")
ChatContinuation(text='、看護師です。', preamble='はい、', echo='plain')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from fairness_core.japanese.morphology import normalize

#: Step 1's closed list; each opener must be followed by punctuation or a space, so はいしゃ (歯医者) stays.
ACKNOWLEDGEMENT = re.compile(
    r"^(はい|ええ|もちろん(です)?|承知(しました|いたしました)|了解(です|しました)?|かしこまりました|喜んで|お任せください|"
    r"分かりました|わかりました|書きます|書いてみます|(文の)?続きを書きます|続きです|続き)"
    r"(?:[、。!:]+\s*|\s+)"
)
OPENING_QUOTES = "「『\"'(*"
CLOSING_QUOTES = "」』\"')"
#: After a quoted template, these mean the answer talks about the sentence (step 4) rather than continuing it.
REFERENCE_TO_THE_SENTENCE = re.compile(r"^(という|といった|とは|と|の|は|を|って|に|で|が)")


@dataclass(frozen=True)
class ChatContinuation:
    """What :func:`strip_echo` kept (``text``) and what it removed.

    ``preamble``: the acknowledgements of step 1 ("" if none).  ``echo``: ``"label"``
    (step 2), ``"plain"`` (step 3), ``"referenced"`` (step 4: the template was found
    but talked about, so nothing after the preamble was removed) or ``"none"``.
    """

    text: str
    preamble: str
    echo: Literal["label", "plain", "referenced", "none"]

    @property
    def stripped(self) -> bool:
        """Whether anything was removed: the run reports how many answers had an echo or preamble."""
        return bool(self.preamble) or self.echo in ("label", "plain")


def strip_echo(template: str, answer: str) -> ChatContinuation:
    """The continuation proper of a chat-instruction ``answer`` to ``template``, by the five-step echo rule."""
    if not template.strip():
        raise ValueError(f"The 'template' parameter of strip_echo must be a non-empty string. Got {template!r} instead.")
    template = normalize(template)
    text = normalize(answer).lstrip()
    preamble = ""
    while (acknowledgement := ACKNOWLEDGEMENT.match(text)) is not None:
        preamble += acknowledgement.group(0)
        text = text[acknowledgement.end():]

    label = re.match(rf"^[「『]{re.escape(template)}[」』]の続き(です)?(\s*[:。]\s*|\s+)", text)
    if label:
        return ChatContinuation(text[label.end():], preamble, "label")

    start = 0
    while start < len(text) and text[start] in OPENING_QUOTES:
        start += 1
    end = _end_of_echo(text, start, template)
    if end is None:
        return ChatContinuation(text, preamble, "none")
    rest = text[end:]
    if start > 0 and rest[:1] in CLOSING_QUOTES:
        if REFERENCE_TO_THE_SENTENCE.match(rest[1:]):
            return ChatContinuation(text, preamble, "referenced")
        rest = rest[1:]
    return ChatContinuation(rest, preamble, "plain")


def _end_of_echo(text: str, start: int, template: str) -> int | None:
    """Where the template, read from ``start`` with whitespace ignored on both sides, ends in ``text``; None if absent."""
    wanted = re.sub(r"\s+", "", template)
    seen = 0
    position = start
    while seen < len(wanted) and position < len(text):
        if not text[position].isspace():
            if text[position] != wanted[seen]:
                return None
            seen += 1
        position += 1
    return position if seen == len(wanted) else None
