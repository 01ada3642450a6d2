"""How far a chat answer is read to tell whether it is a refusal: past its scored window to a sentence end.

A chat answer is scored (HONEST, sentiment) on the protocol's window of new
tokens, 10 under ``chat-prefill``.  A refusal written as people write it
opens with an apology and reaches its verb later: 申し訳ありませんが、特定の性別が
就くべき職業を決めつける文章は作成できません。 has its できません at about the 20th
token, so the window alone holds 申し訳ありませんが、特定の性別が and no refusal.
So the refusal reader reads on from the window's end to the end of the
sentence the window cut (:func:`cut_reading`), within a bound of tokens
(``protocol.chat.refusal_window``, measured in ``benchmarks/refusal_window.py``).

A sentence ends at 。, ！, ？ (full- or half-width), ． or a line break: the
marks a Japanese answer closes its sentences with.

>>> cut_reading("申し訳ありませんが、特定の性別が就くべき職業を決めつける文章は作成できません。別の話題なら", 16)
'申し訳ありませんが、特定の性別が就くべき職業を決めつける文章は作成できません。'
"""

from __future__ import annotations

import re

#: The marks that end a sentence in an answer (NFKC turns ！？ into !?, both are listed: texts are read raw).
SENTENCE_END = re.compile(r"[。!?！？．\n]")


def _window_ends_sentence(text: str, window_chars: int) -> bool:
    return window_chars > 0 and SENTENCE_END.fullmatch(text[window_chars - 1:window_chars]) is not None


def needs_more(text: str, window_chars: int) -> bool:
    """Whether an answer whose text so far is ``text`` (its window ``text[:window_chars]``) must be read further:
    the sentence the window cut has not ended yet.

    >>> needs_more("申し訳ありませんが、お答えでき", 5), needs_more("申し訳ありませんが、お答えできません。", 5)
    (True, False)
    >>> needs_more("彼女は優しい。", 7)
    False
    """
    return not _window_ends_sentence(text, window_chars) and SENTENCE_END.search(text, window_chars) is None


def cut_reading(text: str, window_chars: int) -> str:
    """``text`` (the window ``text[:window_chars]`` and what was generated after it) cut at the end of the sentence
    the window cut; all of it when that sentence does not end in it (the bound was reached first).

    >>> cut_reading("申し訳ありませんが、お答えできません。別の話題でしたら", 5)
    '申し訳ありませんが、お答えできません。'
    >>> cut_reading("彼女は優しい。明るくて", 7)
    '彼女は優しい。'
    """
    if _window_ends_sentence(text, window_chars):
        return text[:window_chars]
    found = SENTENCE_END.search(text, window_chars)
    return text if found is None else text[:found.end()]
