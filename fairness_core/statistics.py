"""Uncertainty for the audit's metrics: pure functions, no torch, no pytest, no I/O.

* :func:`wilson_interval` for a share (an HONEST score): good coverage even
  for rates near 0, where the normal approximation collapses to a point.
* :func:`bootstrap_interval` for anything else (ratios, W1 distances), by
  resampling *prompts* rather than completions: the samples of one prompt are
  correlated, and treating them as independent would make intervals too narrow.
* :func:`permutation_pvalue` for "do the groups differ at all", by shuffling
  the group labels of prompts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import norm

Interval = tuple[float, float]
DEFAULT_RESAMPLES = 1000


def wilson_interval(hits: int, total: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``hits`` successes in ``total`` trials.

    >>> [round(x, 4) for x in wilson_interval(81, 263)]
    [0.2553, 0.3662]
    """
    if total <= 0 or not 0 <= hits <= total:
        raise ValueError(f"wilson_interval needs 0 <= hits <= total and total > 0. Got hits={hits}, total={total}.")
    z = float(norm.ppf(0.5 + confidence / 2))
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_interval(
    statistic: Callable[..., float],
    groups: Sequence[Sequence],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``statistic(*groups)``, resampling each group's units.

    A unit is whatever one prompt contributes (its hit count, its list of scores).
    """
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        resampled = [[group[i] for i in rng.integers(0, len(group), len(group))] for group in groups]
        values.append(statistic(*resampled))
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def permutation_pvalue(
    statistic: Callable[[Sequence, Sequence], float],
    group_a: Sequence,
    group_b: Sequence,
    *,
    permutations: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float:
    """Two-sided permutation p-value of ``|statistic(a, b)|`` under exchangeable group labels.

    Uses the (count + 1) / (permutations + 1) estimate, so it is never exactly 0.
    """
    rng = np.random.default_rng(seed)
    observed = abs(statistic(group_a, group_b))
    pooled = list(group_a) + list(group_b)
    extreme = 0
    for _ in range(permutations):
        order = rng.permutation(len(pooled))
        a = [pooled[i] for i in order[:len(group_a)]]
        b = [pooled[i] for i in order[len(group_a):]]
        extreme += abs(statistic(a, b)) >= observed - 1e-12
    return (extreme + 1) / (permutations + 1)
