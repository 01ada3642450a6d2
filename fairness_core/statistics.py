"""Uncertainty for the audit's metrics: pure functions, no torch, no pytest, no I/O.

* :func:`wilson_interval` for a share (an HONEST score): good coverage even
  for rates near 0, where the normal approximation collapses to a point.
* :func:`bootstrap_interval` for anything else (ratios, W1 distances), by
  resampling *prompts* rather than completions: the samples of one prompt are
  correlated, and treating them as independent would make intervals too narrow.
* :func:`permutation_pvalue` for "do the groups differ at all", by shuffling
  the group labels of prompts; it takes two groups or more.
* :func:`overdispersion` for how much more than binomial noise the units of a group vary by.
* :func:`rate_eprocess` for a sequential (anytime-valid) test of a rate against a limit, looked at after
  each round of completions (``--sampling=adaptive``); :func:`log_mean_exp` mixes such bets.
* :func:`group_vs_rest_pvalues` and :func:`holm` for "which group differs":
  each group tested against all the others, the k p-values corrected with
  Holm's step-down method, so that an attribute set with more groups does not
  raise more false alarms.  Holm controls the family-wise error rate under any
  dependence between the tests (the k tests share their data), which
  Benjamini-Hochberg's false discovery rate does not promise, and it is
  uniformly more powerful than plain Bonferroni.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

Interval = tuple[float, float]
DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True)
class Disparity:
    """How far apart k groups are: ``value``, between the ``highest`` and the ``lowest`` group."""

    value: float
    highest: str
    lowest: str


def check_k_groups(function: str, parameter: str, groups: Mapping) -> None:
    """A comparison between groups needs two of them at least."""
    if len(groups) < 2:
        raise ValueError(f"The {parameter!r} parameter of {function} must have at least 2 groups. "
                         f"Got {len(groups)} instead.")


def wilson_interval(hits: int, total: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``hits`` successes in ``total`` trials.

    >>> [round(x, 4) for x in wilson_interval(81, 263)]
    [0.2553, 0.3662]
    """
    if total <= 0 or not 0 <= hits <= total:
        raise ValueError(f"wilson_interval needs 0 <= hits <= total and total > 0. Got hits={hits}, total={total}.")
    check_confidence(confidence)
    z = _two_sided_z(confidence)
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    # Exact ends where rounding would otherwise leave 0 hits with a lower end of 1e-17.
    low = 0.0 if hits == 0 else max(0.0, centre - half)
    high = 1.0 if hits == total else min(1.0, centre + half)
    return low, high


@functools.cache
def _two_sided_z(confidence: float) -> float:
    return float(norm.ppf(0.5 + confidence / 2))


def check_confidence(confidence: float) -> None:
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
    return bootstrap_intervals(lambda *dealt: (statistic(*dealt),), groups, resamples=resamples,
                               confidence=confidence, seed=seed)[0]


def bootstrap_intervals(
    statistics: Callable[..., Sequence[float]],
    groups: Sequence[Sequence],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Interval]:
    """One percentile interval per component of ``statistics(*groups)``, from one shared set of resamples.

    The resamples are those :func:`bootstrap_interval` draws for the same
    ``seed``, so each interval is exactly the one a separate call would give.
    It exists for k groups: each group's distance to the pool computed in one
    pass per resample, not k passes that each recompute the pool (50 groups
    took minutes that way).

    >>> bootstrap_intervals(lambda a, b: (sum(a), sum(b)), [[1, 1], [2, 2]], resamples=20)
    [(2.0, 2.0), (4.0, 4.0)]
    """
    check_confidence(confidence)
    _check_groups(groups, resamples, "resamples")
    values = [list(statistics(*resampled)) for resampled in group_resamples(groups, resamples, seed)]
    tail = (1 - confidence) / 2 * 100
    lows, highs = np.nanpercentile(np.array(values, dtype=float), [tail, 100 - tail], axis=0)
    return [(float(low), float(high)) for low, high in zip(lows, highs)]


def group_resamples(groups: Sequence[Sequence], resamples: int, seed: int) -> Iterator[list[list]]:
    """``resamples`` bootstrap draws of every group at once, each group's units drawn with replacement.

    The one resampling stream of the package: the intervals and the paired
    regression test (``baseline.paired_standard_errors``) draw the same units
    for the same ``seed``.
    """
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        yield [[group[i] for i in rng.integers(0, len(group), len(group))] for group in groups]


def permutation_pvalue(
    statistic: Callable[..., float],
    group_a: Sequence,
    group_b: Sequence,
    *more_groups: Sequence,
    permutations: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float:
    """Two-sided permutation p-value of ``|statistic(*groups)|`` under exchangeable group labels.

    The units of all groups are pooled, shuffled, and dealt back into groups of
    the original sizes; with k groups the statistic takes k arguments (e.g. the
    largest minus the smallest group mean).  Two groups draw exactly the
    shuffles they always drew.  Uses the (count + 1) / (permutations + 1)
    estimate, so it is never exactly 0.

    >>> spread = lambda *groups: max(map(sum, groups)) - min(map(sum, groups))
    >>> permutation_pvalue(spread, [1, 1], [1, 1], [1, 1], permutations=9)
    1.0
    """
    groups = (group_a, group_b, *more_groups)
    names = ["group_a", "group_b", *(f"more_groups[{i}]" for i in range(len(more_groups)))]
    for name, group in zip(names, groups):
        if len(group) == 0:
            raise ValueError(f"permutation_pvalue needs a non-empty {name}. Got an empty one.")
    _check_groups(groups, permutations, "permutations")
    observed = abs(statistic(*groups))
    if not math.isfinite(observed):
        raise ValueError(f"permutation_pvalue needs a finite statistic on the observed groups. Got {observed!r}.")
    rng = np.random.default_rng(seed)
    pooled = [unit for group in groups for unit in group]
    bounds = np.cumsum([0, *map(len, groups)])
    extreme = 0
    for _ in range(permutations):
        order = rng.permutation(len(pooled))
        shuffled = [[pooled[i] for i in order[start:end]] for start, end in zip(bounds[:-1], bounds[1:])]
        extreme += abs(statistic(*shuffled)) >= observed - 1e-12
    return (extreme + 1) / (permutations + 1)


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    The i-th smallest of m p-values is multiplied by ``m - i + 1``, made
    non-decreasing along that order, and capped at 1; rejecting each adjusted
    p-value below alpha keeps the chance of any false rejection below alpha.

    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03})
    {'a': 0.03, 'b': 0.06, 'c': 0.06}
    """
    bad = {key: p for key, p in p_values.items() if not 0 <= p <= 1}
    if bad:
        raise ValueError(f"The 'p_values' parameter of holm must hold probabilities in [0, 1]. Got {bad} instead.")
    m = len(p_values)
    adjusted: dict[str, float] = {}
    running = 0.0
    for rank, key in enumerate(sorted(p_values, key=p_values.__getitem__)):
        running = max(running, min(1.0, (m - rank) * p_values[key]))
        adjusted[key] = running
    return {key: adjusted[key] for key in p_values}


def group_vs_rest_pvalues(
    statistic: Callable[[Sequence, Sequence], float],
    groups: Mapping[str, Sequence],
    *,
    permutations: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, float]:
    """Holm-adjusted permutation p-values of each group against all other groups pooled.

    ``statistic(group, rest)`` compares one group's units with the others'
    (e.g. the difference of their pooled HONEST scores).  Which group stands
    out is then a claim with a family-wise error rate, whatever the number of
    groups.  A raw p-value is at least ``1 / (permutations + 1)`` and Holm
    multiplies the smallest by k, so ``permutations`` must be well above
    ``k / alpha``: the default 1000 leaves room for about 40 groups at 0.05.

    >>> mean = lambda units: sum(units) / len(units)
    >>> groups = {name: [0, 1] * 10 for name in "abcde"} | {"f": [1] * 20}
    >>> p = group_vs_rest_pvalues(lambda g, rest: mean(g) - mean(rest), groups)
    >>> [name for name, value in p.items() if value < 0.05]
    ['f']
    """
    if len(groups) < 2:
        raise ValueError(f"The 'groups' parameter of group_vs_rest_pvalues must have at least 2 groups. "
                         f"Got {len(groups)} instead.")
    raw = {
        name: permutation_pvalue(
            statistic, units, [u for other, rest in groups.items() if other != name for u in rest],
            permutations=permutations, seed=seed)
        for name, units in groups.items()
    }
    return holm(raw)


def group_vs_rest_rate_pvalues(
    groups: Mapping[str, Sequence[tuple[int, int]]],
    *,
    permutations: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, float]:
    """:func:`group_vs_rest_pvalues` for the difference of pooled rates, with ``(hits, total)`` units, in numpy.

    Exactly the p-values of ``group_vs_rest_pvalues(lambda g, rest: rate(g) -
    rate(rest), groups)``: the same shuffles from the same seed, the rates
    summed from the same integers, only the loop over shuffles is done on
    arrays.  With 50 groups of 32 prompts the generic loop took about half a
    minute; this takes about a second.

    >>> groups = {name: [(1, 10)] * 10 for name in "abcde"} | {"f": [(9, 10)] * 10}
    >>> [name for name, value in group_vs_rest_rate_pvalues(groups).items() if value < 0.05]
    ['f']
    """
    if len(groups) < 2:
        raise ValueError(f"The 'groups' parameter of group_vs_rest_rate_pvalues must have at least 2 groups. "
                         f"Got {len(groups)} instead.")
    raw = {}
    for name, units in groups.items():
        rest = [u for other, theirs in groups.items() if other != name for u in theirs]
        _check_groups((units, rest), permutations, "permutations")
        pooled = np.array([*units, *rest], dtype=float)
        hits, totals, size = pooled[:, 0], pooled[:, 1], len(units)
        rng = np.random.default_rng(seed)
        orders = np.array([rng.permutation(len(pooled)) for _ in range(permutations)])
        own, others = orders[:, :size], orders[:, size:]
        spreads = hits[own].sum(1) / totals[own].sum(1) - hits[others].sum(1) / totals[others].sum(1)
        observed = abs(hits[:size].sum() / totals[:size].sum() - hits[size:].sum() / totals[size:].sum())
        raw[name] = (int(np.sum(np.abs(spreads) >= observed - 1e-12)) + 1) / (permutations + 1)
    return holm(raw)


def standard_error_towards(value: float, interval: Interval, other: float, *, confidence: float = 0.95) -> float:
    """A standard error read off ``value``'s interval, on the side that faces ``other``.

    Bootstrap intervals of ratios and distances are skewed; the side between
    the two estimates is the one a test of their difference crosses.

    >>> round(standard_error_towards(0.2, (0.1, 0.5), 0.0), 4)
    0.051
    """
    check_confidence(confidence)
    low, high = interval
    half = value - min(low, value) if other <= value else max(high, value) - value
    return half / float(norm.ppf(0.5 + confidence / 2))


def worsening_pvalue(new: float, new_error: float, old: float, old_error: float) -> float:
    """One-sided p-value of "``new`` is higher than ``old``" for two independent noisy estimates.

    The regression gate compares two runs, and the baseline is as noisy as the
    new run: testing the new value against the baseline as if the baseline were
    exact (is it outside the new interval?) flags a re-run of the same model far
    more often than the nominal rate.  ``z = (new - old) / sqrt(se_new² + se_old²)``.

    >>> round(worsening_pvalue(0.12, 0.01, 0.10, 0.01), 4)
    0.0786
    >>> worsening_pvalue(0.2, 0.0, 0.1, 0.0)
    0.0
    """
    if new_error < 0 or old_error < 0:
        raise ValueError(f"The standard errors of worsening_pvalue must be >= 0. Got {new_error!r} and {old_error!r} "
                         f"instead.")
    error = math.hypot(new_error, old_error)
    if error == 0:
        return 0.0 if new > old else 1.0
    return float(norm.sf((new - old) / error))


def overdispersion(hits: Sequence[Sequence[int]], totals: Sequence[Sequence[int]]) -> float:
    """The relative variance of the units' rates within groups beyond binomial noise (0 when there is none).

    ``hits[g][u]`` of ``totals[g][u]`` for unit u (a term) of group g.  The
    moment estimator of quasi-likelihood: Pearson's X² of each group's units
    against the group's own rate has expectation ``(U - 1)(1 + e s²)`` when
    unit rates vary with relative variance ``s²`` around the group's and each
    unit expects ``e`` hits, so ``s² = sum(X² - (U - 1)) / sum((U - 1) e)`` over
    groups, floored at 0.  It needs no logarithm of a count, so a unit with no
    hit is no problem: at a handful of hits per unit it is noisy but not biased.

    >>> overdispersion([[10, 10, 10]], [[100, 100, 100]])
    0.0
    >>> round(overdispersion([[5, 20, 5, 20]], [[1000] * 4]), 3)
    0.406
    """
    numerator = denominator = 0.0
    for group_hits, group_totals in zip(hits, totals, strict=True):
        h, n = np.asarray(group_hits, dtype=float), np.asarray(group_totals, dtype=float)
        if len(h) < 2 or h.sum() == 0:
            continue
        rate = h.sum() / n.sum()
        expected = n * rate
        pearson = float(np.sum((h - expected) ** 2 / (expected * (1 - rate)))) if rate < 1 else 0.0
        numerator += pearson - (len(h) - 1)
        denominator += (len(h) - 1) * float(expected.mean())
    return max(0.0, numerator / denominator) if denominator > 0 else 0.0


#: The bets that the sequential tests mix, as fractions of the largest bet a test can make without going broke.
BET_FRACTIONS = np.geomspace(1e-3, 0.98, 40)


def log_mean_exp(log_values: np.ndarray) -> np.ndarray:
    """The log of the mean of ``exp(log_values)`` over the last axis, without overflow."""
    top = log_values.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(log_values - top).mean(axis=-1, keepdims=True)))[..., 0]


def rate_eprocess(hits, total, limit) -> tuple[np.ndarray, np.ndarray]:
    """Log e-values of "the rate is above ``limit``" and of "it is below", after ``hits`` of ``total`` completions.

    A mixture over :data:`BET_FRACTIONS` of bets held constant over the whole
    run, each ``prod (1 + lam (X - limit))`` over the completions (and the mirror
    for "below").  Under "rate <= limit" each bet has expectation <= 1 at every
    round end, also when the completions come from prompts whose own rates
    differ, provided every round draws the same number of completions from every
    prompt: given the prompts' rates ``p_t`` the round's bet has expectation
    ``prod (1 + lam (p_t - limit)) <= (1 + lam (mean p - limit))^P`` (the
    geometric mean of non-negative numbers is at most their mean), and ``mean p``
    is the rate of the fixed prompt set.  By Ville's inequality an e-value that
    ever reaches ``1 / alpha`` does so with probability <= alpha under the null:
    it may be looked at after every round and acted on at once.  Works on arrays
    (``limit`` too).

    >>> fail, passes = rate_eprocess(300, 1000, 0.10)
    >>> float(fail) > math.log(1e6), float(passes) < 0
    (True, True)
    """
    hits, total = np.asarray(hits, dtype=float)[..., None], np.asarray(total, dtype=float)[..., None]
    limit = np.asarray(limit, dtype=float)[..., None]
    above, below = BET_FRACTIONS / limit, BET_FRACTIONS / (1 - limit)
    fail = hits * np.log1p(above * (1 - limit)) + (total - hits) * np.log1p(-above * limit)
    passes = hits * np.log1p(-below * (1 - limit)) + (total - hits) * np.log1p(below * limit)
    return log_mean_exp(fail), log_mean_exp(passes)
