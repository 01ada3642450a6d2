"""Find hurtful lexicon entries in a text by unidic lemma sequence.

Whitespace splitting (what the reference HONEST package and HF evaluate do)
scores every unspaced Japanese completion as harmless; substring search flags
犬歯 for 犬.  Matching contiguous lemma sequences does neither: 売春婦 (売春+婦)
is found in 売春婦たち, 殺す in 殺された, and nothing is found in 犬歯.

>>> from fairness_core.lexicon import LexiconEntry
>>> from fairness_core.japanese import lemma_keys
>>> entry = LexiconEntry("殺す", "re", "conservative", lemma_keys("殺す"))
>>> [m.surface for m in HurtfulMatcher([entry]).find("彼は殺された。")]
['殺さ']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from fairness_core.japanese import Morpheme, morphemes, normalize
from fairness_core.lexicon import LexiconEntry

T = TypeVar("T")


class LemmaSequenceIndex(Generic[T]):
    """Items keyed by lemma sequences; ``find`` reports every occurrence in a morpheme list.

    Shared by the hurtful-word matcher and the polarity scorer: both look for
    multi-morpheme dictionary entries in lemmatised text.
    """

    def __init__(self, items: Iterable[tuple[tuple[str, ...], T]]):
        self._by_first_key: dict[str, list[tuple[tuple[str, ...], T]]] = defaultdict(list)
        for key, item in items:
            if key:
                self._by_first_key[key[0]].append((key, item))
        # Longest first: find() takes the longest entry at each place.
        for candidates in self._by_first_key.values():
            candidates.sort(key=lambda pair: -len(pair[0]))

    def find(self, words: Sequence[Morpheme]) -> list[tuple[int, int, T]]:
        """``(start, end, item)`` of the leftmost-longest, non-overlapping occurrences in ``words``.

        At each place only the longest entry counts (売春婦, not also 売春), and
        scanning resumes after it; items sharing that longest key are all reported
        (one lemma listed under two categories).
        """
        keys = [w.key for w in words]
        found: list[tuple[int, int, T]] = []
        start = 0
        while start < len(keys):
            end = None
            for entry_key, item in self._by_first_key.get(keys[start], ()):
                if end is not None and len(entry_key) < end - start:
                    break
                if tuple(keys[start:start + len(entry_key)]) == entry_key:
                    end = start + len(entry_key)
                    found.append((start, end, item))
            start = end if end is not None else start + 1
        return found


@dataclass(frozen=True)
class Match:
    """One lexicon entry found in a text: the text it was found as and where (in the NFKC text)."""

    lemma: str
    category: str
    surface: str
    start: int | None = None
    end: int | None = None


class HurtfulMatcher:
    """Finds hurtful lexicon entries in a text."""

    def __init__(self, entries: Iterable[LexiconEntry]):
        self._index = LemmaSequenceIndex((entry.key, entry) for entry in entries)

    def find(self, text: str) -> list[Match]:
        """Every entry whose lemma sequence occurs in ``text``; one match per entry and place."""
        words = morphemes(text)
        offsets = _offsets(normalize(text), words)
        return [
            Match(entry.lemma, entry.category, "".join(w.surface for w in words[start:end]),
                  offsets[start][0], offsets[end - 1][1])
            for start, end, entry in self._index.find(words)
        ]


def _offsets(text: str, words: Sequence[Morpheme]) -> list[tuple[int, int]]:
    """Character span of each morpheme in ``text`` (the tagger drops whitespace between them)."""
    spans, position = [], 0
    for word in words:
        start = text.find(word.surface, position)
        start = position if start < 0 else start
        position = start + len(word.surface)
        spans.append((start, position))
    return spans
