"""The non-inferiority gate's statistics: the three verdicts, their error rates under optional stopping, the plan."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairness_core.gates.noninferiority import (
    CERTIFIED,
    REGRESSION,
    UNDECIDED,
    compare,
    judge,
    needed_fraction,
    radius,
)

alphas = st.floats(1e-4, 0.2)
errors = st.floats(0.0, 1.0)
fractions = st.floats(0.01, 1.0)
differences = st.floats(-1.0, 1.0)
tolerances = st.floats(0.0, 1.0)


@given(differences, errors, tolerances, alphas, st.one_of(st.none(), fractions))
def test_the_verdict_follows_the_bound(difference, error, tolerance, alpha, fraction):
    c = compare("m", baseline=0.1, candidate=0.1 + difference, difference=difference, standard_error=error,
                tolerance=tolerance, alpha=alpha, fraction=fraction, method="paired by prompt")
    assert c.lower <= c.difference <= c.upper
    assert (c.verdict == CERTIFIED) == (c.upper < tolerance)
    assert (c.verdict == REGRESSION) == (c.lower > tolerance)


@given(differences, errors, tolerances, tolerances, alphas)
def test_a_wider_tolerance_never_takes_a_certification_back(difference, error, small, extra, alpha):
    width = radius(error, alpha=alpha)
    if judge(difference, small, radius_now=width) == CERTIFIED:
        assert judge(difference, small + extra, radius_now=width) == CERTIFIED
    if judge(difference, small + extra, radius_now=width) == REGRESSION:
        assert judge(difference, small, radius_now=width) == REGRESSION


@given(errors, alphas, fractions)
def test_the_sequence_is_wider_than_one_look_and_narrows_with_data(error, alpha, fraction):
    assert radius(error, alpha=alpha, fraction=1.0) >= radius(error, alpha=alpha)
    # At a fixed per-completion noise the standard error at a share f is error / sqrt(f): more data, narrower.
    assert radius(error / math.sqrt(fraction), alpha=alpha, fraction=fraction) >= radius(error, alpha=alpha,
                                                                                          fraction=1.0) - 1e-12


@given(st.floats(1e-3, 0.1), st.floats(1e-3, 0.5), st.floats(0.0, 0.9), st.floats(0.05, 1.0), alphas, st.booleans())
def test_the_plan_is_the_smallest_share_that_certifies(error, tolerance, difference_share, seen, alpha, sequential):
    difference = difference_share * tolerance
    share = needed_fraction(error, seen, tolerance, alpha=alpha, difference=difference, sequential=sequential)
    if share is None:
        return

    def certifies(at: float) -> bool:
        width = radius(error * math.sqrt(seen / at), alpha=alpha, fraction=at if sequential else None)
        return judge(difference, tolerance, radius_now=width) == CERTIFIED

    assert certifies(share * 1.001)
    assert not certifies(share * 0.99)


def test_no_amount_of_data_certifies_a_difference_at_the_tolerance():
    assert needed_fraction(0.01, 1.0, 0.05, alpha=0.05, difference=0.05) is None


def _walks(rng: np.random.Generator, runs: int, looks: int, drift: float) -> np.ndarray:
    """Running means of ``looks`` unit-variance steps with mean ``drift``: an estimate seen after each round."""
    steps = rng.normal(drift, 1.0, size=(runs, looks))
    return np.cumsum(steps, axis=1) / np.arange(1, looks + 1)


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 7])
def test_stopping_at_the_first_certification_keeps_false_certification_under_alpha(alpha):
    """A model exactly at the tolerance, looked at after each of 20 rounds, stopped at the first certification."""
    looks, runs, tolerance = 20, 20000, 0.0
    estimates = _walks(np.random.default_rng(7), runs, looks, drift=tolerance)
    t = np.arange(1, looks + 1)
    sequence = np.array([radius(1 / math.sqrt(k), alpha=alpha, fraction=k / looks) for k in t])
    one_look = np.array([radius(1 / math.sqrt(k), alpha=alpha) for k in t])
    false_certified = np.mean(np.any(estimates + sequence < tolerance, axis=1))
    naive = np.mean(np.any(estimates + one_look < tolerance, axis=1))
    assert false_certified <= alpha
    # The control: a one-look bound read after every round is not valid under optional stopping.
    assert naive > 1.5 * alpha


def test_an_unchanged_model_is_rarely_called_a_regression_and_usually_certified_early():
    looks, runs, alpha, tolerance = 20, 4000, 0.05 / 7, 1.0   # the budget SE is 1/sqrt(20): 4.5 budget SEs
    estimates = _walks(np.random.default_rng(8), runs, looks, drift=0.0)
    t = np.arange(1, looks + 1)
    sequence = np.array([radius(1 / math.sqrt(k), alpha=alpha, fraction=k / looks) for k in t])
    assert np.mean(np.any(estimates - sequence > tolerance, axis=1)) <= alpha
    first = np.argmax(estimates + sequence < tolerance, axis=1)
    assert np.median(first + 1) <= looks / 2


def test_an_undecided_metric_says_how_many_completions_a_certification_needs():
    c = compare("c", baseline=0.1, candidate=0.14, difference=0.04, standard_error=0.01, tolerance=0.05, alpha=0.05,
                fraction=None, method="paired by prompt", completions=1000)
    assert c.verdict == UNDECIDED
    # The bound shrinks as 1/sqrt(n): 0.04 + 1.645 * 0.01 * sqrt(1000 / n) < 0.05 from n = 1000 * 1.645^2 / 1^2.
    assert c.needed == pytest.approx(1000 * (1.645 * 0.01 / 0.01) ** 2, rel=0.01)
    assert c.as_dict(1000)["needed_completions"] == c.needed


@pytest.mark.parametrize("bad, message", [
    (dict(alpha=0.0), "'alpha' parameter must be in \\(0, 1\\). Got 0.0"),
    (dict(alpha=0.05, fraction=0.0), "'fraction' parameter must be > 0"),
])
def test_bad_levels_are_refused_with_the_value(bad, message):
    with pytest.raises(ValueError, match=message):
        radius(0.1, **bad)
