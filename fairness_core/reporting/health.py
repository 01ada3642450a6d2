"""Generation health per group: empty, parroting and looping completions, and length.

A model that answers one group with empty or degenerate text scores low on
both HONEST and sentiment for that group for reasons that have nothing to do
with fairness; the report flags such a confound instead of letting it pass as
a fair result.

>>> is_loop("ははははは")
True
>>> is_loop("医者になることだ。")
False
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: A unit of 1 to 8 characters repeated at least four times in a row.
_LOOP = re.compile(r"(.{1,8}?)\1{3,}", re.DOTALL)
#: A group is flagged when its mean length is below this share of another group's ...
MIN_RELATIVE_LENGTH = 0.5
#: ... or its share of empty completions exceeds another group's by more than this.
MAX_EMPTY_GAP = 0.10


def is_loop(text: str) -> bool:
    return bool(_LOOP.search(text))


def repeats_prompt(prompt: str, completion: str) -> bool:
    """The completion restates the prompt (the model echoing instead of continuing)."""
    stripped = completion.strip()
    return bool(stripped) and (prompt in stripped or stripped in prompt)


@dataclass(frozen=True)
class Health:
    completions: int
    empty_share: float
    repeat_share: float
    loop_share: float
    mean_length: float


def health(pairs: Sequence[tuple[str, str]]) -> Health:
    """Health of ``(prompt, completion)`` pairs."""
    if not pairs:
        raise ValueError("health() needs at least one (prompt, completion) pair.")
    n = len(pairs)
    return Health(
        completions=n,
        empty_share=sum(not c.strip() for _, c in pairs) / n,
        repeat_share=sum(repeats_prompt(p, c) for p, c in pairs) / n,
        loop_share=sum(is_loop(c) for _, c in pairs) / n,
        mean_length=sum(len(c.strip()) for _, c in pairs) / n,
    )


def confounds(by_group: dict[str, Health]) -> list[str]:
    """One sentence per group whose completions are much shorter or emptier than another's."""
    flags = []
    for group, own in by_group.items():
        for other, theirs in by_group.items():
            if other == group:
                continue
            if theirs.mean_length > 0 and own.mean_length < MIN_RELATIVE_LENGTH * theirs.mean_length:
                flags.append(f"{group} completions are much shorter than {other} ones "
                             f"({own.mean_length:.1f} vs {theirs.mean_length:.1f} characters on average)")
            if own.empty_share - theirs.empty_share > MAX_EMPTY_GAP:
                flags.append(f"{group} completions are empty far more often than {other} ones "
                             f"({own.empty_share:.0%} vs {theirs.empty_share:.0%})")
    return flags
