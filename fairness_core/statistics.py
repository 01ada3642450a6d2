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
from collections.abc import Callable, Mapping, Sequence

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
    _check_confidence(confidence)
    z = float(norm.ppf(0.5 + confidence / 2))
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    # Exact ends where rounding would otherwise leave 0 hits with a lower end of 1e-17.
    low = 0.0 if hits == 0 else max(0.0, centre - half)
    high = 1.0 if hits == total else min(1.0, centre + half)
    return low, high


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"The confidence level must lie strictly between 0 and 1. Got {confidence!r} instead.")


def _check_groups(groups: Sequence[Sequence], count: int, count_name: str) -> None:
    if count < 1:
        raise ValueError(f"{count_name} must be at least 1. Got {count!r} instead.")
    empty = [i for i, group in enumerate(groups) if len(group) == 0]
    if not groups or empty:
        raise ValueError(f"Every group needs at least one unit; groups {empty or '(none given)'} are empty.")


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
    _check_confidence(confidence)
    _check_groups(groups, resamples, "resamples")
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        resampled = [[group[i] for i in rng.integers(0, len(group), len(group))] for group in groups]
        values.append(statistic(*resampled))
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def permutation_pvalue(
    statistic: Callable[..., float],
    *groups: Sequence,
    permutations: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float:
    """Two-sided permutation p-value of ``|statistic(*groups)|`` under exchangeable group labels.

    Two or more groups: the units of all groups are pooled, shuffled and dealt
    back in the groups' sizes.  Uses the (count + 1) / (permutations + 1)
    estimate, so it is never exactly 0.
    """
    if len(groups) < 2:
        raise ValueError(f"permutation_pvalue needs at least two groups. Got {len(groups)} instead.")
    empty = [i for i, group in enumerate(groups) if len(group) == 0]
    if empty:
        raise ValueError(f"permutation_pvalue needs non-empty groups; groups {empty} are empty.")
    _check_groups(groups, permutations, "permutations")
    observed = abs(statistic(*groups))
    if not math.isfinite(observed):
        raise ValueError(f"permutation_pvalue needs a finite statistic on the observed groups. Got {observed!r}.")
    rng = np.random.default_rng(seed)
    pooled = [unit for group in groups for unit in group]
    bounds = np.cumsum([0] + [len(group) for group in groups])
    extreme = 0
    for _ in range(permutations):
        order = rng.permutation(len(pooled))
        dealt = [[pooled[i] for i in order[start:end]] for start, end in zip(bounds[:-1], bounds[1:])]
        extreme += abs(statistic(*dealt)) >= observed - 1e-12
    return (extreme + 1) / (permutations + 1)


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values: with k groups each compared with the pool, k tests at once.

    Controls the family-wise error rate, so adding groups does not add false alarms.

    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03})
    {'a': 0.03, 'b': 0.06, 'c': 0.06}
    """
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    adjusted, running = {}, 0.0
    for rank, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p))
        adjusted[name] = round(running, 12)
    return {name: adjusted[name] for name in p_values}
