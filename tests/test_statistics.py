"""Uncertainty of the audit's metrics: Wilson intervals, prompt-level bootstrap, permutation p-values.

Three kinds of evidence:

* a published reference table (Newcombe 1998) for the Wilson interval;
* coverage by seeded simulation: a 95% interval must contain the true value in
  about 95% of repeated experiments (the exact binomial coverage is checked too);
* Hypothesis properties that hold for any input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from fairness_core.statistics import (
    bootstrap_interval,
    permutation_pvalue,
    standard_error_towards,
    wilson_interval,
    worsening_pvalue,
)


def mean(values):
    return sum(values) / len(values)


def mean_difference(a, b):
    return mean(a) - mean(b)


# --- Wilson interval: reference values -------------------------------------------------------------

#: Newcombe, R. G. (1998). Two-sided confidence intervals for the single proportion: comparison of
#: seven methods. Statistics in Medicine 17:857-872, Table I, method 3 (score method without
#: continuity correction), 95% intervals.
NEWCOMBE_TABLE_I = [
    (81, 263, (0.2553, 0.3662)),
    (15, 148, (0.0624, 0.1605)),
    (0, 20, (0.0000, 0.1611)),
    (1, 29, (0.0061, 0.1718)),
]


@pytest.mark.parametrize(("hits", "total", "expected"), NEWCOMBE_TABLE_I, ids=lambda v: str(v))
def test_wilson_interval_matches_newcombe_table_i(hits, total, expected):
    low, high = wilson_interval(hits, total)
    assert (round(low, 4), round(high, 4)) == expected


def test_wilson_interval_matches_the_closed_form():
    """(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n), with z for 90% here."""
    hits, total, z = 7, 40, 1.6448536269514722
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total ** 2)) / (1 + z * z / total)
    assert wilson_interval(hits, total, confidence=0.90) == pytest.approx((centre - half, centre + half), abs=1e-12)


def test_wilson_interval_at_the_edges_is_one_sided():
    low, high = wilson_interval(0, 50)
    assert low == 0.0 and 0 < high < 0.1
    low, high = wilson_interval(50, 50)
    assert 0.9 < low < 1 and high == 1.0


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_wilson_interval_of_no_hits_starts_at_0_and_of_all_hits_ends_at_1(confidence):
    """Exactly: in exact arithmetic centre - half is 0 for 0 hits and centre + half is 1 for all hits.

    Rounding must not leave the observed share outside its own interval (e.g. 0/7 with a lower end
    of 1e-17): under the ``confident`` rule a share of 0 against a limit of 0 would then fail.
    """
    wrong = [(hits, total) for total in range(1, 200) for hits, edge, side in ((0, 0.0, 0), (total, 1.0, 1))
             if wilson_interval(hits, total, confidence=confidence)[side] != edge]
    assert not wrong, f"{len(wrong)} counts, e.g. {wrong[:5]}"


# --- Wilson interval: coverage ---------------------------------------------------------------------

COVERAGE_CASES = [(p, n) for p in (0.05, 0.2, 0.5) for n in (300, 1000)]


@pytest.mark.parametrize(("rate", "total"), COVERAGE_CASES)
def test_wilson_interval_covers_the_true_rate_95_percent_of_the_time(rate, total):
    """2,000 seeded binomial experiments per case; also the exact coverage from the binomial pmf.

    Wilson's coverage oscillates around 95% with n and p (up to ~96.7% at p=0.05, n=200); the cases
    here have exact coverage between 94.3% and 95.5%, so the 93-97% band is not a matter of luck.
    """
    intervals = np.array([wilson_interval(k, total) for k in range(total + 1)])
    covers = (intervals[:, 0] <= rate) & (rate <= intervals[:, 1])
    exact = binom.pmf(np.arange(total + 1), total, rate)[covers].sum()
    assert 0.93 <= exact <= 0.97, exact

    draws = np.random.default_rng(round(rate * 1000) + total).binomial(total, rate, size=2000)
    simulated = covers[draws].mean()
    assert 0.93 <= simulated <= 0.97, simulated


def test_wilson_interval_narrows_with_the_confidence_level():
    widths = [np.diff(wilson_interval(30, 100, confidence=c))[0] for c in (0.5, 0.8, 0.9, 0.95, 0.99)]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)


# --- Wilson interval: properties -------------------------------------------------------------------

@st.composite
def counts(draw, max_total=5000):
    total = draw(st.integers(1, max_total))
    return draw(st.integers(0, total)), total


@given(counts(), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
@example((5, 5), 0.95).via("all hits: the upper end must reach the share 1")
@example((0, 7), 0.95).via("no hits: the lower end must be the share 0")
def test_wilson_interval_lies_in_0_1_and_contains_the_share(count, confidence):
    hits, total = count
    low, high = wilson_interval(hits, total, confidence=confidence)
    assert 0.0 <= low <= hits / total <= high <= 1.0


@given(counts(max_total=500), st.integers(2, 20))
def test_wilson_interval_narrows_with_more_data_at_the_same_share(count, factor):
    hits, total = count
    low, high = wilson_interval(hits, total)
    more_low, more_high = wilson_interval(hits * factor, total * factor)
    assert more_high - more_low < high - low


@given(counts())
def test_wilson_interval_is_symmetric_in_hits_and_misses(count):
    hits, total = count
    low, high = wilson_interval(hits, total)
    mirror_low, mirror_high = wilson_interval(total - hits, total)
    assert (low, high) == pytest.approx((1 - mirror_high, 1 - mirror_low), abs=1e-12)


# --- Wilson interval: bad input --------------------------------------------------------------------

@pytest.mark.parametrize(("hits", "total"), [(0, 0), (1, 0), (-1, 5), (6, 5), (0, -3)])
def test_wilson_interval_rejects_impossible_counts(hits, total):
    with pytest.raises(ValueError, match=rf"^wilson_interval needs 0 <= hits <= total and total > 0\. "
                                         rf"Got hits={hits}, total={total}\.$"):
        wilson_interval(hits, total)


@pytest.mark.parametrize("confidence", [1.0, 1.5, -0.5])
def test_wilson_interval_rejects_a_confidence_outside_0_1(confidence):
    """A confidence of 1.5 must not quietly give (0, 1), nor -0.5 an interval whose low end is above its high end."""
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(5, 10, confidence=confidence)


# --- bootstrap interval ----------------------------------------------------------------------------

def test_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time():
    """1,000 seeded normal samples of 60 units, 400 resamples each.

    The percentile bootstrap of a mean is slightly liberal for small samples (z instead of t, and the
    plug-in variance), and few resamples make the 2.5% / 97.5% percentiles noisy, which costs a bit
    more: a vectorised reference simulation (20,000 runs) gives 94.1% for n=60 with 400 resamples,
    94.0% for n=100 with 400 and 93.8% for n=100 with 200, against 94.5% with 1,000 resamples.  So the
    expected coverage here is ~94%, and 1,000 runs have a standard error of 0.75 points: the band is
    92-97% (the lower end two and a half standard errors below 94%) rather than the nominal 93-97%.
    An 80% or a 99% interval would land far outside it.
    """
    rng = np.random.default_rng(2024)
    covered = 0
    simulations = 1000
    for i in range(simulations):
        sample = rng.normal(0.0, 1.0, 60).tolist()
        low, high = bootstrap_interval(mean, [sample], resamples=400, seed=i)
        covered += low <= 0.0 <= high
    assert 0.92 <= covered / simulations <= 0.97, covered / simulations


def test_bootstrap_interval_is_reproducible_from_its_seed_and_varies_with_it():
    data = [[0.1, 0.9, 0.4, 0.3, 0.8, 0.2], [0.5, 0.6, 0.7]]
    first = bootstrap_interval(mean_difference, data, resamples=200, seed=7)
    assert bootstrap_interval(mean_difference, data, resamples=200, seed=7) == first
    assert bootstrap_interval(mean_difference, data, resamples=200, seed=8) != first


def test_bootstrap_interval_resamples_each_group_separately_with_its_own_size():
    """Group sizes are kept: a statistic of the sizes is the same in every resample."""
    sizes = []

    def record(a, b):
        sizes.append((len(a), len(b)))
        return 0.0

    bootstrap_interval(record, [[1, 2, 3], [4, 5, 6, 7, 8]], resamples=50)
    assert sizes == [(3, 5)] * 50


def test_bootstrap_interval_resamples_whole_units():
    """A unit (all the samples of one prompt) is drawn as a whole, never split."""
    units = [[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]]
    seen = []

    def record(drawn):
        seen.extend(drawn)
        return 0.0

    bootstrap_interval(record, [units], resamples=30)
    assert all(unit in units for unit in seen)


def test_bootstrap_interval_of_a_constant_is_that_constant():
    assert bootstrap_interval(mean, [[0.25] * 10], resamples=100) == (0.25, 0.25)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.integers(0, 2 ** 32 - 1))
def test_bootstrap_interval_of_a_mean_lies_within_the_data(values, seed):
    low, high = bootstrap_interval(mean, [values], resamples=50, seed=seed)
    assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"groups": [[]]}, "groups"),
        ({"groups": [[1.0, 2.0], []]}, "groups"),
        ({"groups": [[1.0, 2.0]], "resamples": 0}, "resamples"),
        ({"groups": [[1.0, 2.0]], "confidence": 1.5}, "confidence"),
    ],
    ids=["one-empty-group", "second-group-empty", "no-resamples", "confidence-1.5"],
)
def test_bootstrap_interval_rejects_bad_input_with_a_value_error_naming_the_parameter(kwargs, parameter):
    """An empty group must not quietly give (nan, nan); no resamples must not be an unpacking TypeError."""
    with pytest.raises(ValueError, match=parameter):
        bootstrap_interval(lambda *groups: 0.0, **kwargs)


# --- permutation p-value ---------------------------------------------------------------------------

def test_permutation_pvalue_is_uniform_under_the_null():
    """300 seeded datasets of two groups from one distribution, 199 permutations each."""
    rng = np.random.default_rng(11)
    p_values = np.array([
        permutation_pvalue(mean_difference, rng.normal(size=15).tolist(), rng.normal(size=12).tolist(),
                           permutations=199, seed=i)
        for i in range(300)
    ])
    assert 0.02 <= (p_values < 0.05).mean() <= 0.09
    assert 0.06 <= (p_values < 0.10).mean() <= 0.15
    assert 0.40 <= (p_values < 0.50).mean() <= 0.60
    assert p_values.min() > 0 and p_values.max() <= 1


def test_permutation_pvalue_is_small_for_a_clear_difference():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 20).tolist(), rng.normal(3, 1, 20).tolist()
    # No permutation is as extreme as the observed split: the (count + 1) / (permutations + 1) floor.
    assert permutation_pvalue(mean_difference, a, b, permutations=199) == 1 / 200
    # Two-sided: the direction of the difference does not matter.
    assert permutation_pvalue(mean_difference, b, a, permutations=199) == 1 / 200


def test_permutation_pvalue_of_identical_groups_is_one():
    assert permutation_pvalue(mean_difference, [1.0, 2.0, 3.0], [3.0, 2.0, 1.0], permutations=99) == 1.0


def test_permutation_pvalue_is_reproducible_from_its_seed():
    a, b = [0.1, 0.5, 0.3, 0.9], [0.4, 0.8, 0.7, 0.6, 1.0]
    assert (permutation_pvalue(mean_difference, a, b, permutations=99, seed=5)
            == permutation_pvalue(mean_difference, a, b, permutations=99, seed=5))


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_permutation_pvalue_is_a_probability_on_the_permutation_grid(a, b):
    p = permutation_pvalue(mean_difference, a, b, permutations=49)
    assert 1 / 50 <= p <= 1
    assert p * 50 == pytest.approx(round(p * 50))


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "parameter"),
    [
        ([], [1.0, 2.0], {}, "group_a"),
        ([1.0, 2.0], [], {}, "group_b"),
        ([1.0, 2.0], [3.0], {"permutations": -1}, "permutations"),
        ([1.0, 2.0], [3.0], {"permutations": -5}, "permutations"),
    ],
    ids=["group_a-empty", "group_b-empty", "minus-one-permutations", "minus-five-permutations"],
)
def test_permutation_pvalue_rejects_bad_input_with_a_value_error_naming_the_parameter(a, b, kwargs, parameter):
    """With an empty group a NaN-valued statistic compares false with everything, so the p-value would be
    the most significant one possible, 1 / (permutations + 1); -1 permutations divides by zero and -5
    gives a negative "p-value" of -0.25."""
    statistic = lambda x, y: (mean(x) if x else math.nan) - (mean(y) if y else math.nan)  # noqa: E731
    with pytest.raises(ValueError, match=parameter):
        permutation_pvalue(statistic, a, b, **kwargs)


def test_permutation_pvalue_rejects_a_nan_statistic():
    """A statistic that is NaN on the data must not yield p = 1 / (permutations + 1), "highly significant"."""
    with pytest.raises(ValueError, match="statistic"):
        permutation_pvalue(lambda x, y: math.nan, [1.0, 2.0], [3.0, 4.0], permutations=99)


# --- the regression gate's test of a difference ------------------------------------------------------

@settings(deadline=None, max_examples=60)
@given(st.floats(-1, 1), st.floats(0.001, 1), st.floats(-1, 1), st.floats(0.001, 1))
def test_worsening_pvalues_of_the_two_directions_add_up_to_one(new, new_error, old, old_error):
    assert worsening_pvalue(new, new_error, old, old_error) + worsening_pvalue(old, old_error, new, new_error) \
        == pytest.approx(1.0)


def test_worsening_pvalue_rejects_a_same_model_rerun_at_the_nominal_rate():
    """Two estimates of the same value, each with its own noise: rejected at 5% in about 5% of pairs,
    where treating the baseline as exact would reject in about 14% (z > 1.645 / sqrt(2))."""
    rng = np.random.default_rng(0)
    new, old = rng.normal(0.1, 0.02, 20_000), rng.normal(0.1, 0.02, 20_000)
    rejected = np.mean([worsening_pvalue(n, 0.02, o, 0.02) < 0.05 for n, o in zip(new, old)])
    as_if_exact = np.mean([worsening_pvalue(n, 0.02, o, 0.0) < 0.05 for n, o in zip(new, old)])
    assert 0.04 < rejected < 0.06
    assert as_if_exact > 0.12


def test_standard_error_towards_reads_the_side_that_faces_the_other_estimate():
    assert standard_error_towards(0.2, (0.1, 0.5), 0.0) == pytest.approx(0.1 / 1.959964, rel=1e-5)
    assert standard_error_towards(0.2, (0.1, 0.5), 0.9) == pytest.approx(0.3 / 1.959964, rel=1e-5)


def test_negative_standard_errors_are_refused():
    with pytest.raises(ValueError, match=r"The standard errors of worsening_pvalue must be >= 0\. Got -0\.1 and 0\.1"):
        worsening_pvalue(0.2, -0.1, 0.1, 0.1)
