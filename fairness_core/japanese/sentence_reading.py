"""How far a chat answer is read to tell whether it is a refusal: past its scored window, to its opening sentences' end.

A chat answer is scored (HONEST, sentiment) on the protocol's window of new
tokens, 10 under ``chat-prefill``.  A refusal written as people write it
opens with an apology and reaches its verb later: 申し訳ありませんが、特定の性別が
就くべき職業を決めつける文章は作成できません。 has its できません at about the 20th
token, so the window alone holds 申し訳ありませんが、特定の性別が and no refusal.
So the refusal reader reads on past the window until the answer's opening
sentences are complete: the first :data:`READ_SENTENCES`, the sentences the
detector reads (:data:`fairness_core.japanese.refusals.WINDOW_SENTENCES`), so
that a refusal whose verb is in its second sentence (申し訳ありません。この文の続きは
書けません。) is read whole too.  The backends stop generating there or at a bound
of tokens (``protocol.chat.refusal_window``, measured in
``benchmarks/refusal_window.py``), whichever comes first.

A sentence ends at 。, ！, ？ (full- or half-width), ． or a line break, the
marks a Japanese answer closes its sentences with; a mark with nothing but
spaces since the previous one ends no sentence (a blank line, 。。).

>>> cut_reading("申し訳ありませんが、特定の性別が就くべき職業を決めつける文章は作成できません。別の話題なら", 16)
'申し訳ありませんが、特定の性別が就くべき職業を決めつける文章は作成できません。別の話題なら'
>>> cut_reading("申し訳ありません。この文の続きは書けません。別の話題でしたら", 12)
'申し訳ありません。この文の続きは書けません。'
"""

from __future__ import annotations

import re

from fairness_core.japanese.refusals import WINDOW_SENTENCES

#: The marks that end a sentence in an answer (NFKC turns ！？ into !?, both are listed: texts are read raw).
SENTENCE_END = re.compile(r"[。!?！？．\n]")
#: The opening sentences read for a refusal: those the detector reads.
READ_SENTENCES = WINDOW_SENTENCES


def opening_end(text: str, sentences: int = READ_SENTENCES) -> int | None:
    """Where the first ``sentences`` sentences of ``text`` end (exclusive); ``None`` while they are not complete.

    >>> opening_end("申し訳ありません。書けません。以上"), opening_end("申し訳ありません。書け") is None
    (15, True)
    """
    start, found = 0, 0
    for mark in SENTENCE_END.finditer(text):
        if text[start:mark.start()].strip():
            found += 1
            if found == sentences:
                return mark.end()
        start = mark.end()
    return None


def needs_more(text: str) -> bool:
    """Whether an answer whose text so far is ``text`` must be read further: its opening sentences are not complete.

    >>> needs_more("申し訳ありませんが、お答えでき"), needs_more("申し訳ありませんが、お答えできません。以上です。")
    (True, False)
    """
    return opening_end(text) is None


def cut_reading(text: str, window_chars: int) -> str:
    """``text`` (the window ``text[:window_chars]`` and what was generated after it) cut where its opening sentences
    end, never inside the window; all of it when they do not end in it (the bound came first).

    >>> cut_reading("申し訳ありません。お答えできません。別の話題でしたら", 5)
    '申し訳ありません。お答えできません。'
    >>> cut_reading("彼女は優しい。明るい。よく笑う。", 14)  # never shorter than the window
    '彼女は優しい。明るい。よく笑'
    """
    end = opening_end(text)
    return text if end is None else text[:max(end, window_chars)]
