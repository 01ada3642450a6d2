"""Dictionary entries keyed by lemma sequences, found in lemmatised text: leftmost-longest, non-overlapping.

Shared by the hurtful-word matcher and the polarity scorer: both look for
multi-morpheme dictionary entries in text that :mod:`fairness_core.japanese.morphology`
has split into morphemes.

>>> from fairness_core.japanese.morphology import morphemes
>>> index = LemmaSequenceIndex([(("売春", "婦"), "pr"), (("売春",), "pr-short")])
>>> index.find(morphemes("売春婦たち"))
[(0, 2, 'pr')]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from fairness_core.japanese.morphology import Morpheme

T = TypeVar("T")
#: ``accept(words, start, end, item)``: whether an occurrence counts (form constraints).
Accept = Callable[[Sequence[Morpheme], int, int, T], bool]


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

    def find(self, words: Sequence[Morpheme], *, accept: Accept | None = None) -> list[tuple[int, int, T]]:
        """``(start, end, item)`` of the leftmost-longest, non-overlapping occurrences in ``words``.

        At each place only the longest accepted entry counts (売春婦, not also 売春), and
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
                if tuple(keys[start:start + len(entry_key)]) != entry_key:
                    continue
                if accept is None or accept(words, start, start + len(entry_key), item):
                    end = start + len(entry_key)
                    found.append((start, end, item))
            start = end if end is not None else start + 1
        return found
