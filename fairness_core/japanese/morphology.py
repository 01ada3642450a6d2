"""Japanese morphology: one cached fugashi tagger (unidic-lite), NFKC everywhere.

Every Japanese string that the project compares - completions, lexicon entries,
identity terms - goes through :func:`normalize` and :func:`lemma_keys`, so that
full-width/half-width variants and inflections meet in one form.  Matching on
unidic lemmas finds 殺される for the entry 殺す and バカ for 馬鹿, and never
finds 犬 inside 犬歯 because unidic splits words into morphemes, not characters.

>>> lemma_keys("殺された")
('殺す', 'れる', 'た')
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import fugashi



def normalize(text: str) -> str:
    """NFKC-normalise: full-width ASCII to half-width, half-width kana to full-width."""
    return unicodedata.normalize("NFKC", text)


#: unidic parts of speech that carry no content of their own: a key made only of them is no word.
FUNCTION_POS = frozenset({"助詞", "助動詞"})


@dataclass(frozen=True)
class Morpheme:
    """One unidic morpheme: its surface text, its lemma key, part of speech and inflected form.

    ``form`` is unidic's conjugation form (``命令形``, ``仮定形-一般``, ... or ``*``):
    the lemma 死ぬ alone cannot tell the imperative 死ね from 死ぬ.
    """

    surface: str
    key: str
    pos: str
    form: str = "*"
    #: unidic's reading in hiragana (ばか for 馬鹿); the surface where unidic has none.
    reading: str = ""


@functools.lru_cache(maxsize=1)
def _tagger() -> fugashi.Tagger:
    """The tagger, created on first use: importing this module must not load the dictionary."""
    import fugashi

    return fugashi.Tagger()


def _key(word) -> str:
    lemma = word.feature.lemma
    if not lemma or lemma == "*":
        return normalize(word.surface)
    # unidic spells loanword lemmas with their origin: ゲイ-gay, ブス has no suffix.
    return normalize(lemma).split("-", 1)[0]


#: The most characters handed to MeCab at once: it crashed the process (a segfault) on a 9 MB line.
MAX_TAGGER_CHARS = 20_000


@functools.lru_cache(maxsize=65536)
def morphemes(text: str) -> tuple[Morpheme, ...]:
    """The morphemes of ``normalize(text)``; cached because templates repeat.

    Text longer than :data:`MAX_TAGGER_CHARS` is tagged in pieces cut after a
    line break or 。 where there is one (a word is never split across them).
    """
    return tuple(
        Morpheme(surface=word.surface, key=_key(word), pos=word.feature.pos1 or "", form=word.feature.cForm or "*",
                 reading=to_hiragana(word.feature.kana if word.feature.kana not in (None, "*") else word.surface))
        for piece in _pieces(normalize(text)) for word in _tagger()(piece)
    )


def _pieces(text: str) -> list[str]:
    pieces = []
    while len(text) > MAX_TAGGER_CHARS:
        window = text[:MAX_TAGGER_CHARS]
        cut = max(window.rfind("\n"), window.rfind("。")) + 1 or MAX_TAGGER_CHARS
        pieces.append(text[:cut])
        text = text[cut:]
    return [*pieces, text]


def morpheme_spans(text: str, words: Sequence[Morpheme]) -> list[tuple[int, int]]:
    """Character span of each morpheme in ``normalize(text)`` (the tagger drops whitespace between them).

    >>> morpheme_spans("馬鹿 だ", morphemes("馬鹿 だ"))
    [(0, 2), (3, 4)]
    """
    text = normalize(text)
    spans, position = [], 0
    for word in words:
        start = text.find(word.surface, position)
        start = position if start < 0 else start
        position = start + len(word.surface)
        spans.append((start, position))
    return spans


def is_katakana(text: str) -> bool:
    """Whether ``text`` is non-empty and written in katakana only (with the long-vowel mark ー).

    >>> is_katakana("チョン"), is_katakana("ちょん"), is_katakana("")
    (True, False, False)
    """
    return bool(text) and all("ァ" <= c <= "ヺ" or c == "ー" for c in text)


def is_kana(char: str) -> bool:
    """Whether ``char`` is hiragana, katakana or the long-vowel mark ー."""
    return "ぁ" <= char <= "ゖ" or "ァ" <= char <= "ヺ" or char == "ー"


def is_kanji(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph (the unified block or extension A) or the iteration mark 々.

    >>> is_kanji("毛"), is_kanji("々"), is_kanji("け")
    (True, True, False)
    """
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf" or char == "々"


def to_hiragana(text: str) -> str:
    """Katakana to hiragana, everything else as it is: readings compare in one script.

    >>> to_hiragana("ブスー")
    'ぶすー'
    """
    return "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" else c for c in text)


def kana_runs(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every maximal run of kana in ``text``.

    >>> kana_runs("お前しね。ブス")
    [(0, 1), (2, 4), (5, 7)]
    """
    runs: list[tuple[int, int]] = []
    for i, char in enumerate(text):
        if not is_kana(char):
            continue
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def lemma_keys(text: str) -> tuple[str, ...]:
    """The lemma key of every morpheme of ``text``, in order."""
    return tuple(m.key for m in morphemes(text))
