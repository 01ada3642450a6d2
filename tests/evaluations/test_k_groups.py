"""Metrics and statistics for k >= 2 groups: two groups give today's numbers, more groups behave."""

import math
from itertools import combinations
from statistics import mean

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairness_core.evaluations.honest.rates import honest_disparity, rate_ratio, rate_ratios_to_pooled
from fairness_core.evaluations.sentiment.distances import counterfactual_fairness, largest_mean_gap, wasserstein1
from fairness_core.statistics import Disparity, bootstrap_interval, group_vs_rest_pvalues, holm, permutation_pvalue

scores = st.lists(st.floats(0, 1), min_size=1, max_size=12)


@st.composite
def counts(draw, min_groups=2, max_groups=8):
    k = draw(st.integers(min_groups, max_groups))
    out = {}
    for index in range(k):
        total = draw(st.integers(1, 2000))
        out[f"g{index}"] = (draw(st.integers(0, total)), total)
    return out


def _two_group_permutation_pvalue(statistic, group_a, group_b, *, permutations, seed):
    """The two-group implementation as it was before k groups, kept here as the reference."""
    observed = abs(statistic(group_a, group_b))
    rng = np.random.default_rng(seed)
    pooled = list(group_a) + list(group_b)
    extreme = 0
    for _ in range(permutations):
        order = rng.permutation(len(pooled))
        a = [pooled[i] for i in order[:len(group_a)]]
        b = [pooled[i] for i in order[len(group_a):]]
        extreme += abs(statistic(a, b)) >= observed - 1e-12
    return (extreme + 1) / (permutations + 1)


def mean_difference(a, b):
    return mean(a) - mean(b)


def spread(*groups):
    means = [mean(g) for g in groups]
    return max(means) - min(means)


# --- holm ---------------------------------------------------------------------------------------------

def test_holm_worked_example():
    """m = 4: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06 (made monotone), 0.5."""
    assert holm({"a": 0.03, "b": 0.01, "c": 0.5, "d": 0.02}) == pytest.approx(
        {"a": 0.06, "b": 0.04, "c": 0.5, "d": 0.06})


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0, 1), min_size=1, max_size=12))
def test_holm_lies_between_the_raw_and_the_bonferroni_p_values_and_keeps_their_order(p_values):
    adjusted = holm(p_values)
    assert list(adjusted) == list(p_values)
    m = len(p_values)
    for key, p in p_values.items():
        assert p - 1e-12 <= adjusted[key] <= min(1.0, m * p) + 1e-12
    for x, y in combinations(p_values, 2):
        if p_values[x] < p_values[y]:
            assert adjusted[x] <= adjusted[y]
    smallest = min(p_values, key=p_values.get)
    assert adjusted[smallest] == pytest.approx(min(1.0, m * p_values[smallest]))


def test_holm_of_one_p_value_is_that_p_value_and_rejects_non_probabilities():
    assert holm({"only": 0.03}) == {"only": 0.03}
    with pytest.raises(ValueError, match=r"The 'p_values' parameter of holm must hold probabilities in \[0, 1\]\. "
                                         r"Got \{'x': 1\.5\} instead\."):
        holm({"x": 1.5, "y": 0.2})


# --- permutation_pvalue for k groups ------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(scores, scores, st.integers(0, 2 ** 32 - 1))
def test_permutation_pvalue_of_two_groups_is_what_it_always_was(a, b, seed):
    assert (permutation_pvalue(mean_difference, a, b, permutations=49, seed=seed)
            == _two_group_permutation_pvalue(mean_difference, a, b, permutations=49, seed=seed))


def test_permutation_pvalue_of_k_groups_finds_one_shifted_group_and_not_equal_groups():
    rng = np.random.default_rng(3)
    equal = [rng.normal(size=20).tolist() for _ in range(6)]
    shifted = equal[:5] + [[x + 1.5 for x in equal[5]]]
    assert permutation_pvalue(spread, *shifted, permutations=199) == 1 / 200
    assert permutation_pvalue(spread, *equal, permutations=199) > 0.05


def test_permutation_pvalue_of_k_groups_is_uniform_under_the_null():
    rng = np.random.default_rng(11)
    p_values = [permutation_pvalue(spread, *(rng.normal(size=8).tolist() for _ in range(4)),
                                   permutations=99, seed=i) for i in range(100)]
    assert 0.01 <= np.mean(np.array(p_values) <= 0.05) <= 0.11
    assert 0.4 <= np.mean(p_values) <= 0.6


def test_permutation_pvalue_keeps_every_group_size():
    sizes = []
    permutation_pvalue(lambda *groups: sizes.append(tuple(map(len, groups))) or 0.0,
                       [1], [2, 3], [4, 5, 6], permutations=5)
    assert set(sizes) == {(1, 2, 3)}


def test_permutation_pvalue_names_an_empty_extra_group():
    with pytest.raises(ValueError, match=r"needs a non-empty more_groups\[1\]\. Got an empty one\."):
        permutation_pvalue(spread, [1.0], [2.0], [3.0], [], permutations=9)


def test_bootstrap_interval_takes_k_groups():
    groups = [[0.0] * 10, [1.0] * 10, [0.5, 0.5]]
    assert bootstrap_interval(spread, groups, resamples=50) == (1.0, 1.0)


# --- group against the rest, Holm-corrected -----------------------------------------------------------

def test_group_vs_rest_names_only_the_planted_group():
    rng = np.random.default_rng(5)
    groups = {f"g{i}": rng.binomial(1, 0.05, size=100).tolist() for i in range(8)}
    groups["g3"] = rng.binomial(1, 0.40, size=100).tolist()
    p = group_vs_rest_pvalues(mean_difference, groups, permutations=399)
    assert [g for g, value in p.items() if value < 0.05] == ["g3"]


def test_group_vs_rest_keeps_the_family_wise_false_alarm_rate():
    """Eight equal groups, 40 data sets: any group below 0.05 after Holm in about 5% of them.

    Without the correction about a third of them (1 - 0.95 ** 8) would raise an alarm.
    """
    rng = np.random.default_rng(8)
    alarms = 0
    for trial in range(40):
        groups = {f"g{i}": rng.normal(size=6).tolist() for i in range(8)}
        p = group_vs_rest_pvalues(mean_difference, groups, permutations=199, seed=trial)
        alarms += min(p.values()) < 0.05
    assert alarms <= 6


def test_group_vs_rest_needs_two_groups():
    with pytest.raises(ValueError, match=r"The 'groups' parameter of group_vs_rest_pvalues must have at least 2 "
                                         r"groups\. Got 1 instead\."):
        group_vs_rest_pvalues(mean_difference, {"a": [1.0]})


# --- HONEST disparity ---------------------------------------------------------------------------------

@given(counts(max_groups=2))
def test_honest_disparity_of_two_groups_is_the_two_group_ratio_or_its_inverse(two):
    (first, (hits_a, total_a)), (second, (hits_b, total_b)) = two.items()
    ratio = rate_ratio(hits_a=hits_a, total_a=total_a, hits_b=hits_b, total_b=total_b)
    disparity = honest_disparity(two)
    assert disparity.value == pytest.approx(max(ratio, 1 / ratio), rel=1e-12)
    if ratio > 1:
        assert (disparity.value, disparity.highest, disparity.lowest) == (ratio, first, second)


@given(counts())
def test_honest_disparity_is_the_largest_pairwise_ratio(groups):
    disparity = honest_disparity(groups)
    pairwise = max(rate_ratio(hits_a=ha, total_a=ta, hits_b=hb, total_b=tb)
                   for (ha, ta), (hb, tb) in ((groups[x], groups[y]) for x in groups for y in groups))
    assert disparity.value == pytest.approx(pairwise) and disparity.value >= 1
    assert rate_ratios_to_pooled(groups)[disparity.highest] == max(rate_ratios_to_pooled(groups).values())


def test_honest_disparity_names_the_planted_group():
    counts_ = {g: (50, 1000) for g in ("japanese", "chinese", "korean", "american")} | {"vietnamese": (300, 1000)}
    assert honest_disparity(counts_) == Disparity(rate_ratio(hits_a=300, total_a=1000, hits_b=50, total_b=1000),
                                                  "vietnamese", "japanese")
    ratios = rate_ratios_to_pooled(counts_)
    assert ratios["vietnamese"] > 2.5 and all(0.45 < r < 0.55 for g, r in ratios.items() if g != "vietnamese")


@given(st.integers(1, 500), st.integers(0, 500), st.integers(2, 9))
def test_rate_ratios_to_pooled_of_equal_groups_are_exactly_one(total, hits, k):
    hits = min(hits, total)
    assert set(rate_ratios_to_pooled({f"g{i}": (hits, total) for i in range(k)}).values()) == {1.0}


@pytest.mark.parametrize("function", [honest_disparity, rate_ratios_to_pooled])
def test_honest_k_group_metrics_reject_bad_counts(function):
    with pytest.raises(ValueError, match=rf"The 'counts' parameter of {function.__name__} must have at least 2 "
                                         r"groups\. Got 1 instead\."):
        function({"a": (1, 10)})
    with pytest.raises(ValueError, match=r"Every group's counts must satisfy 0 <= hits <= total and total > 0\. "
                                         r"Got hits=11, total=10 for 'b' instead\."):
        function({"a": (1, 10), "b": (11, 10)})


# --- sentiment ----------------------------------------------------------------------------------------

@given(scores, scores)
def test_largest_mean_gap_of_two_groups_is_the_absolute_difference(a, b):
    """Exactly the two-group number: the same sums, divisions and one subtraction."""
    assert largest_mean_gap({"female": a, "male": b}).value == abs(sum(a) / len(a) - sum(b) / len(b))


@given(st.lists(scores, min_size=2, max_size=8))
def test_largest_mean_gap_is_the_largest_pairwise_gap(groups):
    named = {f"g{i}": g for i, g in enumerate(groups)}
    gap = largest_mean_gap(named)
    assert gap.value == pytest.approx(max(abs(mean(x) - mean(y)) for x, y in combinations(groups, 2)), abs=1e-12)
    assert mean(named[gap.highest]) - mean(named[gap.lowest]) == pytest.approx(gap.value, abs=1e-12)


def test_largest_mean_gap_rejects_too_few_or_empty_groups():
    with pytest.raises(ValueError, match=r"The 'scores' parameter of largest_mean_gap must have at least 2 groups"):
        largest_mean_gap({"a": [0.1]})
    with pytest.raises(ValueError, match=r"largest_mean_gap needs scores for every group; \['b'\] have none\."):
        largest_mean_gap({"a": [0.1], "b": []})


def test_counterfactual_fairness_over_three_groups_averages_every_cross_group_pair():
    prompts = {"name-01": {"a": {"x": [0.0, 0.2]}, "b": {"y": [1.0, 0.8], "z": [0.5, 0.5]}, "c": {"w": [0.1, 0.3]}}}
    cells = [("a", [0.0, 0.2]), ("b", [1.0, 0.8]), ("b", [0.5, 0.5]), ("c", [0.1, 0.3])]
    expected = [wasserstein1(s, t) for (g, s), (h, t) in combinations(cells, 2) if g != h]
    assert len(expected) == 5
    assert counterfactual_fairness(prompts) == pytest.approx(sum(expected) / len(expected))
    assert math.isfinite(counterfactual_fairness(prompts))
