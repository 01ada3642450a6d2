"""The exact ratio intervals, the fair model's noise floor and the ratio e-process: valid at small counts.

Each property is checked by simulation against the truth it claims (coverage,
the share of fair draws above the floor, the share of null sequences that
ever cross 1/alpha), not against stored numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairness_core.evaluations.honest.ratio_bounds import (
    extreme_ratio_interval,
    fair_ratio_quantile,
    rate_ratio_bounds,
    ratio_eprocess,
)


def test_exact_bounds_cover_the_true_ratio_at_small_counts():
    rng = np.random.default_rng(1)
    n, rate_a, rate_b = 2000, 0.006, 0.003
    misses_low = misses_high = 0
    for _ in range(2000):
        low, high = rate_ratio_bounds(int(rng.binomial(n, rate_a)), n, int(rng.binomial(n, rate_b)), n, level=0.025)
        misses_low += low > rate_a / rate_b
        misses_high += high < rate_a / rate_b
    assert misses_low / 2000 <= 0.035 and misses_high / 2000 <= 0.035


def test_no_hit_in_the_denominator_leaves_the_upper_bound_open():
    low, high = rate_ratio_bounds(5, 100, 0, 100, level=0.025)
    assert low > 0 and high == math.inf


def test_the_extreme_interval_holds_the_true_highest_over_lowest():
    rng = np.random.default_rng(2)
    rates = np.array([0.01, 0.01, 0.01, 0.02])
    misses = 0
    for _ in range(500):
        hits = rng.binomial(3000, rates)
        low, high = extreme_ratio_interval(list(hits), [3000] * 4)
        misses += not low <= 2.0 <= high
    assert misses / 500 <= 0.05


@pytest.mark.parametrize("call", [lambda: rate_ratio_bounds(3, 10, 1, 10, level=0.6),
                                  lambda: extreme_ratio_interval([1], [10]),
                                  lambda: extreme_ratio_interval([11, 1], [10, 10])])
def test_bad_counts_are_one_clear_error(call):
    with pytest.raises(ValueError, match="must"):
        call()


def test_the_noise_floor_is_what_fair_draws_exceed_in_the_stated_share():
    rng = np.random.default_rng(3)
    totals = [6000] * 8
    floor = fair_ratio_quantile(240, totals, spread=0.0, quantile=0.95)
    fair = rng.binomial(6000, 0.005, size=(4000, 8))
    corrected = (fair + 0.5) / 6001
    exceed = np.mean(corrected.max(axis=1) / corrected.min(axis=1) > floor)
    assert 0.03 <= exceed <= 0.08  # drawn totals vary around 240; the floor is conditional on it


def test_the_noise_floor_falls_with_the_count_and_rises_with_the_spread():
    totals = [6000] * 8
    few, many = (fair_ratio_quantile(h, totals, spread=0.1, quantile=0.98) for h in (100, 3000))
    assert few > 1.8 > many
    assert fair_ratio_quantile(3000, totals, spread=0.3, quantile=0.98) > many
    assert fair_ratio_quantile(100, totals, spread=0.1, quantile=0.98) == few  # seeded by the counts


def test_the_noise_floor_refuses_impossible_counts():
    with pytest.raises(ValueError, match="fair_ratio_quantile needs 0 <= total_hits <= sum"):
        fair_ratio_quantile(30, [10, 10], spread=0.0, quantile=0.9)


def test_the_ratio_eprocess_rarely_crosses_at_the_limit_and_crosses_far_beyond_it():
    """Paired completions with rate a exactly 1.8 x rate b: 'above 1.8' may cross 1/alpha in <= alpha of runs."""
    rng = np.random.default_rng(4)
    runs, rounds, prompts, alpha = 400, 20, 300, 0.05
    crossed = 0
    for _ in range(runs):
        a = rng.random((rounds, prompts)) < 0.018
        b = rng.random((rounds, prompts)) < 0.010
        only_a = np.cumsum((a & ~b).sum(axis=1))
        only_b = np.cumsum((b & ~a).sum(axis=1))
        both = np.cumsum((a & b).sum(axis=1))
        fail, _ = ratio_eprocess(only_a, only_b, both, 1.8)
        crossed += bool(np.any(fail >= math.log(1 / alpha)))
    assert crossed / runs <= alpha
    fail, passes = ratio_eprocess(200, 20, 2, 1.8)
    assert float(fail) > math.log(1e3) and float(passes) < 0
