"""What the HONEST ratio test can detect at a given count: the underpowered verdict, and the ``plan`` table.

A normal model of the noise-floor rule (:mod:`fairness_core.evaluations.honest.metrics`),
quick enough for every run and for a command line; the measured operating
characteristics (``benchmarks/operating_characteristics.py``) are the reference.

A group's log HONEST score is ``m + u_g + e_g``: ``u_g ~ N(0, tau²)`` is what the
fixed prompt set makes of the group (``tau² = term_sd² / terms + prompt_sd² /
prompts``: more samples do not shrink it) and ``e_g ~ N(0, 1 / lam)`` the
sampling noise of ``lam`` expected hurtful completions.  A fair model's log
ratio is then the range of k such normals, and the rule fails when the log
ratio exceeds ``max(log max_ratio, w log floor)`` with the floor the ``1 - alpha``
quantile of that range; a model with one group ``R`` times as hurtful adds
``log R`` to one of them.  The detectable ratio at ``lam`` and the ``lam``
needed for a ratio follow by bisection on Monte Carlo draws fixed once (so
the same question always gets the same answer).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

#: Logit sd of a prompt's own effect (what its template and term do not explain), as the simulation draws it.
PROMPT_SD = 0.3
#: The base hurtful rates ``plan`` prints a row for: from a lexicon that rarely fires to a model that often insults.
PLAN_RATES = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
#: The base hurtful rate ``plan --ratio`` answers at: the simulation's reference world.
REFERENCE_RATE = 0.05
_DRAWS = np.random.default_rng(20261203).standard_normal((40_000, 65))


def fair_variance(term_sd: float, *, terms: int, prompts: int) -> float:
    """``tau²``: the variance of a fair group's log HONEST score that its terms and prompts make, per group.

    >>> round(fair_variance(0.3, terms=10, prompts=300), 4)
    0.0093
    """
    return term_sd ** 2 / terms + PROMPT_SD ** 2 / prompts


@functools.cache
def _range_quantile(groups: int, quantile: float) -> float:
    draws = _DRAWS[:, :groups]
    return float(np.quantile(draws.max(axis=1) - draws.min(axis=1), quantile))


def power(ratio: float, *, groups: int, max_ratio: float, variance: float, hits: float, alpha: float) -> float:
    """The share of runs the noise-floor rule fails when one group is ``ratio`` times as hurtful as the others.

    ``hits``: expected hurtful completions per (unshifted) group.
    """
    floor = max(math.log(max_ratio), _range_quantile(groups, 1 - alpha) * math.sqrt(variance + 1 / hits))
    half = len(_DRAWS) // 2
    others = _DRAWS[:half, 1:groups] * math.sqrt(variance + 1 / hits)
    shifted = math.log(ratio) + _DRAWS[half:2 * half, 0] * math.sqrt(variance + 1 / (hits * ratio))
    spread = np.maximum(shifted, others.max(axis=1)) - np.minimum(shifted, others.min(axis=1))
    return float(np.mean(spread > floor))


def _bisect(below, low: float, high: float) -> float:
    """The smallest x in [low, high] (log scale) where ``below(x)`` turns False; ``inf`` when it never does."""
    if below(high):
        return math.inf
    for _ in range(40):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if below(middle) else (low, middle)
    return high


@functools.cache
def hits_needed(*, groups: int, max_ratio: float, variance: float, ratio: float, target: float, alpha: float) -> float:
    """Expected hurtful completions per group at which the rule fails a model ``ratio`` x with ``target`` power.

    ``inf`` when no count does: the prompt set's own spread hides the effect.

    >>> round(hits_needed(groups=8, max_ratio=1.8, variance=fair_variance(0.3, terms=10, prompts=300), ratio=2.0,
    ...                   target=0.9, alpha=0.02))
    80
    """
    def short(hits: float) -> bool:
        return power(ratio, groups=groups, max_ratio=max_ratio, variance=variance, hits=hits, alpha=alpha) < target
    return _bisect(short, 1.0, 1e7)


def detectable_ratio(*, groups: int, max_ratio: float, variance: float, hits: float, target: float,
                     alpha: float) -> float:
    """The smallest ratio (one group x R) that the rule fails with ``target`` power at ``hits`` per group."""
    def short(ratio: float) -> bool:
        return power(ratio, groups=groups, max_ratio=max_ratio, variance=variance, hits=hits, alpha=alpha) < target
    return _bisect(short, 1.0, 1000.0)


@dataclass(frozen=True)
class RatioDesign:
    """What the ratio test of one prompt set is asked to detect, and the shape of the set."""

    groups: int
    prompts_per_group: int
    terms_per_group: int
    max_ratio: float
    alpha: float
    ratio: float
    target: float

    def variance(self, term_sd: float) -> float:
        return fair_variance(term_sd, terms=self.terms_per_group, prompts=self.prompts_per_group)

    def hits_needed(self, term_sd: float) -> float:
        """Expected hurtful completions per group for ``target`` power at ``ratio`` (term sd rounded up to 0.01)."""
        return hits_needed(groups=self.groups, max_ratio=self.max_ratio, variance=self.variance(_up(term_sd)),
                           ratio=self.ratio, target=self.target, alpha=self.alpha)

    def samples_needed(self, term_sd: float, rate: float) -> float:
        """Samples per prompt that give :meth:`hits_needed` at the hurtful ``rate`` (``inf``: none do)."""
        needed = self.hits_needed(term_sd)
        return math.inf if not math.isfinite(needed) or rate <= 0 else math.ceil(needed / (self.prompts_per_group * rate))

    def detectable(self, term_sd: float, hits: float) -> float:
        return detectable_ratio(groups=self.groups, max_ratio=self.max_ratio, variance=self.variance(_up(term_sd)),
                                hits=hits, target=self.target, alpha=self.alpha)


def _up(term_sd: float) -> float:
    return math.ceil(term_sd * 100 - 1e-9) / 100


def plan_table(design: RatioDesign, *, samples: int, term_sd: float, rates: Sequence[float] = PLAN_RATES) -> list[str]:
    """``plan``'s lines: per base hurtful rate, the hits per group, the ratio detected and the samples needed.

    >>> design = RatioDesign(groups=2, prompts_per_group=960, terms_per_group=30, max_ratio=1.6, alpha=0.02,
    ...                      ratio=2.0, target=0.9)
    >>> plan_table(design, samples=20, term_sd=0.3)[2]
    '  0.002          38              2.30             34'
    """
    power_share = f"{design.target:.0%}"
    lines = [f"HONEST ratio (noise-floor rule, limit {design.max_ratio:g}), at {samples} samples per prompt: the ratio "
             f"detected with {power_share} power per base hurtful rate, and the samples per prompt for a ratio of "
             f"{design.ratio:g}",
             "  base   hits/group  detectable ratio  samples for " + f"{design.ratio:g}"]
    for rate in rates:
        hits = design.prompts_per_group * samples * rate
        detectable = design.detectable(term_sd, hits)
        needed = design.samples_needed(term_sd, rate)
        lines.append(f"  {rate:<6g} {hits:>10.0f}  {_shown(detectable, '.2f'):>16}  {_shown(needed, 'd'):>13}")
    return lines


def _shown(value: float, spec: str) -> str:
    if not math.isfinite(value):
        return "not reachable"
    return format(int(value) if spec == "d" else value, spec)


def samples_line(design: RatioDesign, ratio: float, *, term_sd: float) -> str:
    """``plan --ratio``: the samples per prompt for ``design``'s power at ``ratio``, at :data:`REFERENCE_RATE`.

    The limit is two-sided, so a ratio below 1 is read as its inverse.
    """
    effect = max(ratio, 1 / ratio)
    needed = math.inf if effect <= design.max_ratio else replace(design, ratio=effect).samples_needed(
        term_sd, REFERENCE_RATE)
    found = (str(int(needed)) if math.isfinite(needed) else
             f"not reachable (limit {design.max_ratio:g}; " + ("the ratio is within the limit)"
                                                              if effect <= design.max_ratio
                                                              else "term-to-term variation alone hides it)"))
    stated = f"{ratio:g}" + (f" (1/{effect:g}: the limit is two-sided)" if ratio < 1 else "")
    return (f"samples per prompt for {design.target:.0%} power at an HONEST ratio of {stated}: {found} "
            f"(base hurtful rate {REFERENCE_RATE:g})")
