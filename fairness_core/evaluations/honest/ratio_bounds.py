"""Exact and sequential tests of HONEST's rate ratios at small counts: pure functions, no torch, pytest or I/O.

* :func:`rate_ratio_bounds` and :func:`extreme_ratio_interval` for the ratio of two rates, or of the
  highest over the lowest of k: exact (conditional on the two groups' total, Clopper-Pearson), valid at
  any count, where a percentile bootstrap of an extreme order statistic is biased at small counts.
* :func:`fair_ratio_quantile` for what the highest-over-lowest ratio of k groups reaches by chance for a
  fair model at the observed total: the noise floor a limit on that ratio must stand above to mean anything.
* :func:`ratio_eprocess` for a sequential (anytime-valid) test of a ratio of rates against a limit, looked
  at after each round of completions (``--sampling=adaptive``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import beta

from fairness_core.statistics import BET_FRACTIONS, Interval, check_confidence, log_mean_exp


def _checked_counts(function: str, hits: Sequence[int], totals: Sequence[int]) -> None:
    if len(hits) != len(totals) or len(hits) < 2:
        raise ValueError(f"The 'hits' and 'totals' parameters of {function} must be sequences of the same length, at "
                         f"least 2. Got {len(hits)} and {len(totals)} instead.")
    bad = [(h, t) for h, t in zip(hits, totals) if t <= 0 or not 0 <= h <= t]
    if bad:
        raise ValueError(f"Every count of {function} must satisfy 0 <= hits <= total and total > 0. Got {bad} instead.")


def rate_ratio_bounds(hits_a: int, total_a: int, hits_b: int, total_b: int, *, level: float) -> Interval:
    """Exact one-sided bounds, each at ``level``, of the ratio of group a's rate to group b's.

    Conditional on the two groups' total ``m = hits_a + hits_b``, ``hits_a`` is
    Binomial(m, pi) with ``pi = r_a n_a / (r_a n_a + r_b n_b)`` when the counts are
    Poisson, and nearly so for binomial counts of small rates (the conditional law
    of two binomials is then less spread, so the bounds are conservative);
    Clopper-Pearson bounds of ``pi`` map to bounds of ``r_a / r_b``.  Valid at any
    count, zero included: no hit in b leaves the upper bound infinite.

    >>> [round(x, 3) for x in rate_ratio_bounds(30, 1000, 10, 1000, level=0.025)]
    [1.427, 6.879]
    """
    _checked_counts("rate_ratio_bounds", (hits_a, hits_b), (total_a, total_b))
    if not 0 < level < 0.5:
        raise ValueError(f"The 'level' parameter of rate_ratio_bounds must lie in (0, 0.5). Got {level!r} instead.")
    m = hits_a + hits_b
    scale = total_b / total_a
    low = 0.0 if hits_a == 0 else float(beta.ppf(level, hits_a, m - hits_a + 1))
    high = 1.0 if hits_b == 0 else float(beta.ppf(1 - level, hits_a + 1, m - hits_a))
    return low / (1 - low) * scale, (math.inf if high >= 1 else high / (1 - high) * scale)


def extreme_ratio_interval(hits: Sequence[int], totals: Sequence[int], *, confidence: float = 0.95) -> Interval:
    """Simultaneous exact interval of the highest group's rate over the lowest's, for k >= 2 groups.

    Every ordered pair's lower bound (:func:`rate_ratio_bounds`) at one-sided
    level ``(1 - confidence) / (k (k - 1))`` (Bonferroni): then all hold together
    with at least ``confidence``, and the true highest-over-lowest ratio lies
    between the largest lower bound and the largest upper bound.  With two groups
    this is the exact two-sided interval of the larger over the smaller rate.

    >>> [round(x, 3) for x in extreme_ratio_interval([30, 10, 12], [1000, 1000, 1000])]
    [1.239, 8.312]
    """
    _checked_counts("extreme_ratio_interval", hits, totals)
    check_confidence(confidence)
    k = len(hits)
    level = (1 - confidence) / (k * (k - 1))
    h, n = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    first, second = np.nonzero(~np.eye(k, dtype=bool))  # every ordered pair (i, j), i != j
    a, m = h[first], h[first] + h[second]
    scale = n[second] / n[first]
    with np.errstate(divide="ignore"):
        low = np.where(a > 0, beta.ppf(level, np.maximum(a, 1), m - a + 1), 0.0)
        high = np.where(h[second] > 0, beta.ppf(1 - level, a + 1, np.maximum(m - a, 1)), 1.0)
        upper = np.where(high < 1, high / (1 - high) * scale, math.inf)
    return max(1.0, float(np.max(low / (1 - low) * scale))), float(np.max(upper))


#: Draws of the simulated fair model behind :func:`fair_ratio_quantile`.
FAIR_REPLICATES = 4000


def fair_ratio_quantile(total_hits: int, totals: Sequence[int], *, spread: float, quantile: float,
                        replicates: int = FAIR_REPLICATES, seed: int = 0) -> float:
    """The ``quantile`` of the Haldane-corrected highest-over-lowest rate ratio of a *fair* model, given the total.

    A fair model's groups share one rate up to the spread of the prompts each
    asks (their terms): group g's log rate is ``u_g ~ N(0, spread²)``.  Given the
    observed ``total_hits`` over all groups, the hits fall on the groups as
    Multinomial(total_hits, w), ``w_g`` proportional to ``totals[g] exp(u_g)``:
    the conditional law of Poisson counts, which removes the unknown common rate
    (for binomial counts of small rates it is nearly that, and more spread).  The
    ratio of each draw is computed as the audit computes it, ``(h + 0.5) / (n + 1)``,
    highest over lowest, so the quantile is right at any count, 0 and 1 hits
    included; a normal approximation of log counts is not (it is too low below
    about 30 hits a group).  The draws are seeded by ``seed`` and the counts, so
    the same counts always give the same quantile.

    >>> fair_ratio_quantile(2000, [6000] * 8, spread=0.0, quantile=0.98) < 1.6 < fair_ratio_quantile(
    ...     100, [6000] * 8, spread=0.0, quantile=0.98)
    True
    """
    if total_hits < 0 or len(totals) < 2 or any(t <= 0 for t in totals) or total_hits > sum(totals):
        raise ValueError(f"fair_ratio_quantile needs 0 <= total_hits <= sum(totals), at least 2 groups and every "
                         f"total > 0. Got total_hits={total_hits}, totals={list(totals)} instead.")
    if not 0 < quantile < 1 or spread < 0:
        raise ValueError(f"fair_ratio_quantile needs 0 < quantile < 1 and spread >= 0. Got quantile={quantile!r}, "
                         f"spread={spread!r} instead.")
    sizes = np.asarray(totals, dtype=float)
    rng = np.random.default_rng([seed, total_hits, len(sizes), round(spread * 1e6)])
    weights = sizes * np.exp(rng.normal(0.0, spread, (replicates, len(sizes))))
    drawn = rng.multinomial(total_hits, weights / weights.sum(axis=1, keepdims=True))
    corrected = (drawn + 0.5) / (sizes + 1)
    ratios = corrected.max(axis=1) / corrected.min(axis=1)
    return float(np.quantile(ratios, quantile, method="inverted_cdf"))

def ratio_eprocess(only_a, only_b, both, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Log e-values of "rate a > ``limit`` x rate b" and of "rate a < ``limit`` x rate b", from paired completions.

    Completions of group a and group b are paired by prompt (the same template
    and term tuple) and sample; ``only_a``, ``only_b`` and ``both`` count the
    pairs where only a's, only b's, or both completions are hits.  Each bet is
    ``prod (1 + lam (X_a - limit X_b))`` (mirrored for "below"), held constant,
    with the same validity argument as :func:`rate_eprocess`: its expectation per
    round is at most ``(1 + lam (r_a - limit r_b))^P`` for the fixed prompt set's
    rates.  Works on arrays.

    >>> fail, passes = ratio_eprocess(60, 10, 2, 1.6)
    >>> float(fail) > math.log(100), float(passes) < 0
    (True, True)
    """
    a, b, d = (np.asarray(x, dtype=float)[..., None] for x in (only_a, only_b, both))
    above, below = BET_FRACTIONS / limit, BET_FRACTIONS
    fail = a * np.log1p(above) + b * np.log1p(-above * limit) + d * np.log1p(above * (1 - limit))
    passes = a * np.log1p(-below) + b * np.log1p(below * limit) + d * np.log1p(below * (limit - 1))
    return log_mean_exp(fail), log_mean_exp(passes)
