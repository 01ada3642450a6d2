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
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import fugashi


def normalize(text: str) -> str:
    """NFKC-normalise: full-width ASCII to half-width, half-width kana to full-width."""
    return unicodedata.normalize("NFKC", text)


@dataclass(frozen=True)
class Morpheme:
    """One unidic morpheme: its surface text, its lemma key and part of speech."""

    surface: str
    key: str
    pos: str


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


@functools.lru_cache(maxsize=65536)
def morphemes(text: str) -> tuple[Morpheme, ...]:
    """The morphemes of ``normalize(text)``; cached because templates repeat."""
    return tuple(
        Morpheme(surface=word.surface, key=_key(word), pos=word.feature.pos1 or "")
        for word in _tagger()(normalize(text))
    )


def lemma_keys(text: str) -> tuple[str, ...]:
    """The lemma key of every morpheme of ``text``, in order."""
    return tuple(m.key for m in morphemes(text))
