"""What the HONEST ratio test can detect: the samples per prompt for 90% power at a given ratio (``plan --ratio``).

A normal approximation, quick enough for a command line; the measured
operating characteristics (``benchmarks/operating_characteristics.py``) are
the reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy.stats import norm

from fairness_core.evaluations.prompts import Prompt

#: The simulation's reference world: base hurtful rate, and logit sd of term and prompt effects.
REFERENCE_RATE, TERM_SD, PROMPT_SD = 0.05, 0.3, 0.3
POWER = 0.9


def samples_for_power(ratio: float, *, max_ratio: float, groups: int, prompts_per_group: int, terms_per_group: int,
                      rate: float = REFERENCE_RATE, power: float = POWER) -> int | None:
    """Samples per prompt for the ratio test to fail with ``power`` when one group is ``ratio`` times as hurtful.

    A normal approximation on the log scale: a group's log HONEST score has
    variance ``(1 - p) / (n P p)`` (binomial) plus ``term_sd² / T + prompt_sd² / P``
    (which terms and prompts the set has; more samples do not shrink it).  With
    k groups the ratio is the shifted group over the lowest of the other k - 1,
    whose expected shortfall is the expected maximum of k - 1 standard normals.
    ``None`` when no number of samples reaches the power (term variation alone
    hides the effect).

    >>> samples_for_power(2.0, max_ratio=1.6, groups=2, prompts_per_group=960, terms_per_group=30)
    2
    """
    if ratio <= max_ratio:
        return None
    shortfall = _expected_maximum(groups - 1)
    needed = float(norm.ppf(power))
    for samples in range(1, 1001):
        group_sd = math.sqrt((1 - rate) / (samples * prompts_per_group * rate)
                             + TERM_SD ** 2 / terms_per_group + PROMPT_SD ** 2 / prompts_per_group)
        if (math.log(ratio) + shortfall * group_sd - math.log(max_ratio)) / (math.sqrt(2) * group_sd) >= needed:
            return samples
    return None


def _expected_maximum(count: int) -> float:
    """E[max of ``count`` standard normals], by quadrature (0 for one)."""
    if count <= 1:
        return 0.0
    grid = [i / 100 for i in range(-800, 801)]
    return sum(x * count * norm.pdf(x) * norm.cdf(x) ** (count - 1) for x in grid) / 100


def samples_line(prompts: Sequence[Prompt], max_ratio: float, ratio: float) -> str:
    """``plan --ratio``: the samples per prompt that ``prompts`` need for 90% power at ``ratio`` against ``max_ratio``.

    The limit is two-sided, so a ratio below 1 is read as its inverse.
    """
    effect = max(ratio, 1 / ratio)
    groups = {p.group for p in prompts}
    terms = {(p.group, p.term) for p in prompts}
    needed = samples_for_power(effect, max_ratio=max_ratio, groups=len(groups),
                               prompts_per_group=len(prompts) // len(groups), terms_per_group=len(terms) // len(groups))
    found = (str(needed) if needed else
             f"not reachable (limit {max_ratio:g}; " + ("the ratio is within the limit)" if effect <= max_ratio
                                                        else "term-to-term variation alone hides it)"))
    stated = f"{ratio:g}" + (f" (1/{effect:g}: the limit is two-sided)" if ratio < 1 else "")
    return (f"samples per prompt for 90% power at an HONEST ratio of {stated}: {found} "
            f"(normal approximation at a base rate of {REFERENCE_RATE:g})")
