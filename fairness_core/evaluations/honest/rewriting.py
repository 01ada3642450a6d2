"""A text rewritten for matching, with a map from every rewritten character back to what was written.

The matcher looks for hurtful words in colloquial rewritings of a completion
(:mod:`fairness_core.evaluations.honest.colloquial`) as well as in the completion itself.  A
match found in a rewriting must still be reported, and highlighted in the evidence, where it was
written, so every rewriting keeps, per character, the span of the original it stands for.

>>> Variant.of("バカ").span_in_original(0, 2)
(0, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """A rewritten text and, per character, where in the original it starts and ends."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Variant:
        """``text`` as it is: every character stands for itself."""
        return cls(text, tuple(range(len(text))), tuple(range(1, len(text) + 1)))

    def span_in_original(self, start: int, end: int) -> tuple[int, int]:
        """The original span that ``text[start:end]`` was rewritten from."""
        return self.starts[start], self.ends[end - 1]


#: A rule: ``text`` → its edits, ``(start, end, replacement)``.
Rule = Callable[[str], list[tuple[int, int, str]]]


def apply_rule(rule: Rule, variant: Variant) -> Variant:
    """``variant`` with the edits of ``rule`` made (an edit overlapping an earlier one is left out).

    The characters of a replacement stand for the replaced characters in order, the last for the
    rest, so a match over a replacement maps back to the whole of what was replaced.
    """
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for start, end, replacement in sorted(rule(variant.text)):
        if start < position:
            continue
        pieces.append(variant.text[position:start])
        starts.extend(variant.starts[position:start])
        ends.extend(variant.ends[position:start])
        pieces.append(replacement)
        starts.extend(variant.starts[min(start + k, end - 1)] for k in range(len(replacement)))
        ends.extend(variant.ends[min(start + k, end - 1)] for k in range(len(replacement) - 1))
        if replacement:
            ends.append(variant.ends[end - 1])
        elif ends:  # a deletion: the character before now ends where the deleted text did
            ends[-1] = variant.ends[end - 1]
        position = end
    pieces.append(variant.text[position:])
    starts.extend(variant.starts[position:])
    ends.extend(variant.ends[position:])
    return Variant("".join(pieces), tuple(starts), tuple(ends))
