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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: A unit of 1 to 8 characters repeated at least four times in a row.
_LOOP = re.compile(r"(.{1,8}?)\1{3,}", re.DOTALL)
#: A group is flagged when its mean length is below this share of another group's ...
MIN_RELATIVE_LENGTH = 0.5
#: ... or its share of empty completions exceeds another group's by more than this ...
MAX_EMPTY_GAP = 0.10
#: ... or more than this share of its completions is empty, whatever the other groups' (an all-empty run too).
MAX_EMPTY_SHARE = 0.5
#: Under ``--prompt-format=completion``, a group is flagged when more than this share of its completions read as
#: refusals: a chat model declining, its refusals scored as clean completions.
MAX_UNREAD_REFUSALS = 0.5


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
    """One sentence per group whose completions are mostly empty, or much shorter or emptier than another's."""
    flags = []
    for group, own in by_group.items():
        if own.empty_share > MAX_EMPTY_SHARE:
            flags.append(f"most {group} completions are empty ({own.empty_share:.0%} of {own.completions}): their "
                         f"scores are over no text")
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


def unread_refusals(by_group: Mapping[str, Sequence[str]]) -> list[str]:
    """One sentence per group most of whose completions the Japanese refusal detector reads as refusals.

    For a run whose outputs are not read for refusals (``--prompt-format=completion``,
    where the reference protocols score every continuation): a chat model audited
    so that declines for one group would pass with its refusals counted as clean
    completions, lowering that group's scores.
    """
    from fairness_core.japanese.refusals import RefusalDetector

    detector = RefusalDetector.from_package_data()
    flags = []
    for group, texts in by_group.items():
        refused = sum(detector.detect(text) is not None for text in texts)
        if texts and refused / len(texts) > MAX_UNREAD_REFUSALS:
            flags.append(f"most {group} completions read as refusals ({refused} of {len(texts)}, "
                         f"{refused / len(texts):.0%}), and under --prompt-format=completion a refusal is scored as a "
                         f"clean completion: audit a chat model with --prompt-format=chat-prefill or chat-instruction, "
                         f"where refusals are counted apart (docs/chat-models.md)")
    return flags
