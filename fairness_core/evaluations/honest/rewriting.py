"""A text rewritten for matching, with a map from every rewritten character back to what was written.

The matcher never looks at a completion exactly as written: invisible characters are
taken out (:func:`visible`) and colloquial spellings are rewritten
(:mod:`fairness_core.evaluations.honest.colloquial`).  A match found in a rewriting must still be
reported, and highlighted in the evidence, where it was written, so every rewriting keeps,
per character, the span of the original it stands for.

>>> hidden = visible("バ\\u200dカ\\x00死ね")
>>> hidden.text, hidden.span_in_original(0, 2), hidden.span_in_original(2, 4)
('バカ死ね', (0, 3), (4, 6))
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

#: Unicode categories of characters that show nothing: format characters (ZWSP, ZWJ, BOM, soft
#: hyphen ...) and controls (NUL ...).  A line break or tab is whitespace and is kept: it separates words.
INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc"})
#: Variation selectors (VS1-VS16, then VS17-VS256) only choose a glyph, such as the emoji form (VS16).
VARIATION_SELECTORS = (("\ufe00", "\ufe0f"), ("\U000e0100", "\U000e01ef"))


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


def is_invisible(char: str) -> bool:
    """Whether ``char`` shows nothing and joins nothing: a format or control character other than
    whitespace, or a variation selector.

    Such a character inside a word (バ + ZWJ + カ, 死 + NUL + ね) cuts it in two for the tagger, so
    a hurtful word hidden that way would not be found.

    >>> [is_invisible(c) for c in "\\u200b\\u200d\\ufe0f\\x00\\n\\u3000あ"]
    [True, True, True, True, False, False, False]
    """
    if char.isspace():
        return False
    return unicodedata.category(char) in INVISIBLE_CATEGORIES or any(
        low <= char <= high for low, high in VARIATION_SELECTORS)


def visible(text: str) -> Variant:
    """``text`` without its invisible characters (:func:`is_invisible`).

    Unlike a rule's deletion, a removed character belongs to no match: a word that ends right before
    one ends there (バカ in ``バカ\\x00死ね`` is ``(0, 2)``), and one with it inside spans it.
    """
    kept = [i for i, char in enumerate(text) if not is_invisible(char)]
    return Variant("".join(text[i] for i in kept), tuple(kept), tuple(i + 1 for i in kept))
