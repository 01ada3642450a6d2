"""The fast k-group statistics give the numbers of the straightforward ones (50 groups in seconds).

Each fast path is checked against the definition it replaces, on random data:
``group_distances`` against scipy's W1 of each group to the pool,
``bootstrap_intervals`` against one ``bootstrap_interval`` per component, and
``group_vs_rest_rate_pvalues`` against the generic ``group_vs_rest_pvalues``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

from fairness_core.evaluations.sentiment.distances import group_distances
from fairness_core.statistics import (
    bootstrap_interval,
    bootstrap_intervals,
    group_vs_rest_pvalues,
    group_vs_rest_rate_pvalues,
)

scores = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), min_size=1, max_size=12)
score_groups = st.dictionaries(st.sampled_from("abcdefgh"), scores, min_size=1, max_size=6)
rate_units = st.lists(st.tuples(st.integers(0, 5), st.just(5)), min_size=1, max_size=8)
rate_groups = st.dictionaries(st.sampled_from("abcdef"), rate_units, min_size=2, max_size=5)


@given(score_groups)
def test_group_distances_are_scipys_w1_of_each_group_to_the_pool(groups):
    pooled = [s for values in groups.values() for s in values]
    expected = {g: wasserstein_distance(values, pooled) for g, values in groups.items()}
    assert group_distances(groups) == pytest.approx(expected, abs=1e-12)


@given(score_groups, st.integers(0, 2**16))
def test_one_pass_bootstrap_gives_each_components_own_interval(groups, seed):
    units = [[[s] for s in values] for values in groups.values()]

    def distances(*dealt):
        found = group_distances({str(i): [s for unit in g for s in unit] for i, g in enumerate(dealt)})
        return [found[str(i)] for i in range(len(dealt))]

    together = bootstrap_intervals(distances, units, resamples=50, seed=seed)
    one_by_one = [bootstrap_interval(lambda *dealt, _i=i: distances(*dealt)[_i], units, resamples=50, seed=seed)
                  for i in range(len(units))]
    assert together == one_by_one


@given(rate_groups, st.integers(0, 2**16))
def test_group_vs_rest_on_arrays_is_the_generic_test(groups, seed):
    def rate(units):
        return sum(h for h, _ in units) / sum(t for _, t in units)

    generic = group_vs_rest_pvalues(lambda own, rest: rate(own) - rate(rest), groups, permutations=60, seed=seed)
    assert group_vs_rest_rate_pvalues(groups, permutations=60, seed=seed) == generic
