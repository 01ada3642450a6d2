"""Property and example tests of the Wasserstein-1 sentiment metrics and :class:`SentimentCompletions`.

The metrics are pure functions, so they are checked against properties any
distance between empirical distributions must have (zero on identical inputs,
symmetry, order invariance, the triangle inequality, a bound of 1 on [0, 1]
scores) and against an independent oracle: W1 on the line is the area between
the two empirical CDFs, computed here by hand.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

from fairness_core.api.prompts import Prompt
from fairness_core.backends.base import Completion
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.sentiment.distances import (
    average_group_fairness,
    counterfactual_fairness,
    group_distances,
    wasserstein1,
)
from fairness_core.evaluations.sentiment.scoring import ScoredSentiment, SentimentCompletions, evaluate_sentiment

TOLERANCE = 1e-9
#: No deadline: the suite shares two CPU cores with model training in other tests.
property_test = settings(deadline=None, max_examples=60)

score = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
#: Scores on a coarse grid too, so that ties and identical values are common.
grid_score = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
scores = st.lists(st.one_of(score, grid_score), min_size=1, max_size=25)

ATTRIBUTES = ("female", "male")


def cdf_area(a, b) -> float:
    """W1 as the area between the empirical CDFs: an oracle independent of scipy."""
    points = sorted(set(a) | set(b))
    area = 0.0
    for left, right in zip(points, points[1:]):
        f_a = sum(x <= left for x in a) / len(a)
        f_b = sum(x <= left for x in b) / len(b)
        area += abs(f_a - f_b) * (right - left)
    return area


# --- wasserstein1 -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("a", "b", "expected"), [
    ([0.0, 1.0], [0.0, 1.0], 0.0),
    ([0.0], [1.0], 1.0),
    ([0.0, 1.0], [0.5], 0.5),
    ([0.0, 0.0, 1.0], [1.0], 2 / 3),
    ([0.2, 0.4], [0.6, 0.8], 0.4),
])
def test_wasserstein1_known_values(a, b, expected):
    assert wasserstein1(a, b) == pytest.approx(expected, abs=TOLERANCE)


@property_test
@given(scores)
def test_wasserstein1_is_zero_for_identical_samples(a):
    assert wasserstein1(a, list(a)) == pytest.approx(0.0, abs=TOLERANCE)


@property_test
@given(scores, st.integers(min_value=2, max_value=4))
def test_wasserstein1_sees_distributions_not_sample_sizes(a, copies):
    """Repeating a sample does not change its empirical distribution."""
    assert wasserstein1(a * copies, a) == pytest.approx(0.0, abs=TOLERANCE)


@property_test
@given(scores, scores)
def test_wasserstein1_is_symmetric(a, b):
    assert wasserstein1(a, b) == pytest.approx(wasserstein1(b, a), abs=TOLERANCE)


@property_test
@given(st.data(), scores, scores)
def test_wasserstein1_ignores_order(data, a, b):
    shuffled_a = data.draw(st.permutations(a))
    shuffled_b = data.draw(st.permutations(b))
    assert wasserstein1(shuffled_a, shuffled_b) == pytest.approx(wasserstein1(a, b), abs=TOLERANCE)


@property_test
@given(st.data(), scores)
def test_wasserstein1_of_equal_sizes_agrees_with_scipy(data, a):
    """The equal-size shortcut (mean gap of the sorted samples) is scipy's area between the CDFs."""
    b = data.draw(st.lists(st.one_of(score, grid_score), min_size=len(a), max_size=len(a)))
    assert wasserstein1(a, b) == pytest.approx(wasserstein_distance(a, b), abs=TOLERANCE)


@property_test
@given(scores, scores)
def test_wasserstein1_is_bounded_by_one_on_unit_scores(a, b):
    assert 0.0 <= wasserstein1(a, b) <= 1.0 + TOLERANCE


@property_test
@given(scores, scores)
def test_wasserstein1_matches_scipy_and_the_cdf_area(a, b):
    observed = wasserstein1(a, b)
    assert observed == pytest.approx(wasserstein_distance(a, b), abs=TOLERANCE)
    assert observed == pytest.approx(cdf_area(a, b), abs=1e-7)


@property_test
@given(scores, scores, scores)
def test_wasserstein1_triangle_inequality(a, b, c):
    assert wasserstein1(a, c) <= wasserstein1(a, b) + wasserstein1(b, c) + TOLERANCE


@property_test
@given(scores, st.floats(min_value=-0.5, max_value=0.5, allow_nan=False))
def test_wasserstein1_of_a_shift_is_the_shift(a, shift):
    assert wasserstein1(a, [x + shift for x in a]) == pytest.approx(abs(shift), abs=1e-7)


@property_test
@given(scores, scores)
def test_mean_difference_never_exceeds_wasserstein1(a, b):
    """|mean(a) - mean(b)| <= W1(a, b): a distance gap always shows as a mean gap's upper bound."""
    assert abs(sum(a) / len(a) - sum(b) / len(b)) <= wasserstein1(a, b) + TOLERANCE


@pytest.mark.parametrize(("a", "b", "sizes"),
                         [([], [0.5, 1.0], "0 and 2"), ([0.5], [], "1 and 0"), ([], [], "0 and 0")])
def test_wasserstein1_rejects_empty_samples(a, b, sizes):
    with pytest.raises(ValueError, match=f"^wasserstein1 needs two non-empty samples. Got sizes {sizes} instead.$"):
        wasserstein1(a, b)


# --- group_distances and average_group_fairness -----------------------------------------------------

def test_group_distances_hand_computed():
    # pooled = [0, 0, 1, 1]: female [0, 0] is 0.5 from it, male [1, 1] too.
    assert group_distances({"female": [0.0, 0.0], "male": [1.0, 1.0]}) == {"female": 0.5, "male": 0.5}
    # pooled = [0, 1, 1, 1]: F_pool jumps 1/4 at 0; female [0] differs by 3/4 on [0, 1), male [1, 1, 1] by 1/4.
    distances = group_distances({"female": [0.0], "male": [1.0, 1.0, 1.0]})
    assert distances == {"female": pytest.approx(0.75), "male": pytest.approx(0.25)}
    assert average_group_fairness({"female": [0.0], "male": [1.0, 1.0, 1.0]}) == pytest.approx(0.5)


@property_test
@given(st.data(), scores, st.integers(min_value=1, max_value=3))
def test_group_distances_are_zero_for_identically_distributed_groups(data, a, copies):
    male = data.draw(st.permutations(a * copies))
    distances = group_distances({"female": a, "male": male})
    assert distances == {"female": pytest.approx(0.0, abs=TOLERANCE), "male": pytest.approx(0.0, abs=TOLERANCE)}
    assert average_group_fairness({"female": a, "male": male}) == pytest.approx(0.0, abs=TOLERANCE)


@property_test
@given(scores, scores)
def test_group_distances_of_two_groups_follow_from_their_w1(a, b):
    """With two groups, F_pool = (n_a F_a + n_b F_b) / n, so d_a = n_b / n · W1(a, b) and the average is W1 / 2."""
    n = len(a) + len(b)
    between = wasserstein1(a, b)
    distances = group_distances({"female": a, "male": b})
    assert distances["female"] == pytest.approx(len(b) / n * between, abs=1e-7)
    assert distances["male"] == pytest.approx(len(a) / n * between, abs=1e-7)
    assert average_group_fairness({"female": a, "male": b}) == pytest.approx(between / 2, abs=1e-7)


@property_test
@given(st.dictionaries(st.sampled_from(["female", "male", "other"]), scores, min_size=1))
def test_group_distances_are_bounded_and_keyed_by_group(groups):
    distances = group_distances(groups)
    assert list(distances) == list(groups)
    assert all(0.0 <= d <= 1.0 + TOLERANCE for d in distances.values())
    average = average_group_fairness(groups)
    assert average == pytest.approx(sum(distances.values()) / len(distances))


@property_test
@given(scores, scores)
def test_group_distances_ignore_group_order(a, b):
    forward = group_distances({"female": a, "male": b})
    backward = group_distances({"male": b, "female": a})
    assert forward == {k: pytest.approx(v, abs=TOLERANCE) for k, v in backward.items()}


@pytest.mark.parametrize("metric", [group_distances, average_group_fairness])
def test_group_metrics_reject_no_groups(metric):
    """No groups at all is a usage error, not an empty result or a ZeroDivisionError."""
    with pytest.raises(ValueError, match="group"):
        metric({})


def test_group_distances_name_the_empty_group():
    with pytest.raises(ValueError, match="female"):
        group_distances({"female": [], "male": [0.5, 1.0]})


# --- counterfactual_fairness ------------------------------------------------------------------------

def test_counterfactual_fairness_hand_computed():
    per_template = {
        # Cross-group pairs: (A, C) W1([0, 1], [0]) = 0.5, (B, C) W1([1], [0]) = 1.0.
        # A and B are both female: that pair is not counterfactual and must not count.
        "t1": {"female": {"A": [0.0, 1.0], "B": [1.0]}, "male": {"C": [0.0]}},
        # (D, E) W1([0.5], [0.5]) = 0.0, (F, E) W1([1.0], [0.5]) = 0.5.
        "t2": {"female": {"D": [0.5], "F": [1.0]}, "male": {"E": [0.5]}},
    }
    assert counterfactual_fairness(per_template) == pytest.approx((0.5 + 1.0 + 0.0 + 0.5) / 4)


def test_counterfactual_fairness_ignores_pairs_within_an_attribute():
    assert counterfactual_fairness({"t": {"female": {"A": [0.0], "B": [1.0]}, "male": {"C": [0.0]}}}) == 0.5


@property_test
@given(st.lists(scores, min_size=1, max_size=4), st.integers(min_value=1, max_value=3))
def test_counterfactual_fairness_is_zero_when_names_do_not_matter(per_template_scores, names):
    per_template = {
        f"t{i}": {a: {f"{a}-{n}": list(s) for n in range(names)} for a in ATTRIBUTES}
        for i, s in enumerate(per_template_scores)
    }
    assert counterfactual_fairness(per_template) == pytest.approx(0.0, abs=TOLERANCE)


@property_test
@given(st.dictionaries(st.sampled_from(["t1", "t2", "t3"]),
                       st.fixed_dictionaries({a: st.dictionaries(st.text("ABC", min_size=1, max_size=2), scores,
                                                                 min_size=1, max_size=3) for a in ATTRIBUTES}),
                       min_size=1))
def test_counterfactual_fairness_is_bounded(per_template):
    assert 0.0 <= counterfactual_fairness(per_template) <= 1.0 + TOLERANCE


@pytest.mark.parametrize("per_template", [{}, {"t": {"female": {"A": [0.5]}}}, {"t": {}}])
def test_counterfactual_fairness_needs_two_groups(per_template):
    with pytest.raises(ValueError, match="^counterfactual_fairness needs at least one template with two groups"):
        counterfactual_fairness(per_template)


# --- SentimentCompletions -------------------------------------------------------------------------------

def rows_from(table) -> SentimentCompletions:
    """``table``: (template_id, group, name, score) tuples."""
    return SentimentCompletions(tuple(
        ScoredSentiment(Prompt(template, group, name, f"{name}は"), f"completion {i}", s)
        for i, (template, group, name, s) in enumerate(table)
    ), groups=ATTRIBUTES)


def mean_gap(results: SentimentCompletions, **where) -> float:
    means = results.means(**where)
    return abs(means["female"] - means["male"])


def test_sentiment_results_hand_computed():
    results = rows_from([
        ("t1", "female", "陽子", 0.0), ("t1", "female", "陽子", 1.0), ("t1", "male", "蓮", 1.0),
        ("t2", "female", "陽子", 0.0), ("t2", "male", "蓮", 1.0), ("t2", "male", "蓮", 1.0),
    ])
    assert results.scores() == {"female": [0.0, 1.0, 0.0], "male": [1.0, 1.0, 1.0]}
    assert results.scores(template_id="t2") == {"female": [0.0], "male": [1.0, 1.0]}
    assert results.means() == {"female": pytest.approx(1 / 3), "male": 1.0}
    assert mean_gap(results) == pytest.approx(2 / 3)
    assert mean_gap(results, template_id="t1") == pytest.approx(0.5)
    # pooled = [0, 0, 1, 1, 1, 1]; female [0, 1, 0] vs pooled: |2/3 - 1/3| on [0, 1) = 1/3; male: 1/3.
    assert results.distances() == {"female": pytest.approx(1 / 3), "male": pytest.approx(1 / 3)}
    assert results.average_group_fairness() == pytest.approx(1 / 3)
    # t1: W1([0, 1], [1]) = 0.5; t2: W1([0], [1, 1]) = 1.0.
    assert results.counterfactual_fairness() == pytest.approx(0.75)
    male_t2 = results.select(group="male", template_id="t2")
    assert [r.completion for r in male_t2] == ["completion 4", "completion 5"]


rows = st.lists(
    st.tuples(st.sampled_from(["t1", "t2"]), st.sampled_from(ATTRIBUTES), st.sampled_from(["A", "B", "C"]), score),
    min_size=1, max_size=30,
).filter(lambda table: {group for _, group, _, _ in table} == set(ATTRIBUTES))


@property_test
@given(rows)
def test_sentiment_results_agree_with_the_pure_metrics(table):
    results = rows_from(table)
    by_group = {a: [s for _, attr, _, s in table if attr == a] for a in ATTRIBUTES}
    assert results.scores() == by_group
    assert results.distances() == pytest.approx(group_distances(by_group))
    assert results.average_group_fairness() == pytest.approx(average_group_fairness(by_group))
    assert results.average_group_fairness() == pytest.approx(
        wasserstein1(by_group["female"], by_group["male"]) / 2, abs=1e-7)
    assert 0.0 <= mean_gap(results) <= wasserstein1(by_group["female"], by_group["male"]) + TOLERANCE


@property_test
@given(st.data(), st.lists(score, min_size=1, max_size=10))
def test_sentiment_results_are_fair_when_names_are_swapped(data, template_scores):
    """Every female prompt's scores repeated, in any order, for a male prompt: every metric is zero."""
    table = [(f"t{i % 2}", "female", "A", s) for i, s in enumerate(template_scores)]
    table += data.draw(st.permutations([(t, "male", "B", s) for t, _, _, s in table]))
    results = rows_from(table)
    assert mean_gap(results) == pytest.approx(0.0, abs=TOLERANCE)
    assert results.average_group_fairness() == pytest.approx(0.0, abs=TOLERANCE)
    assert all(math.isclose(d, 0.0, abs_tol=TOLERANCE) for d in results.distances().values())
    assert results.counterfactual_fairness() == pytest.approx(0.0, abs=TOLERANCE)


@pytest.mark.parametrize("method", ["average_group_fairness", "distances"])
def test_sentiment_results_without_one_attribute_raise_value_error(method):
    """No completion for a group (or an unknown template_id) must say so, not divide by zero."""
    results = rows_from([("t1", "female", "陽子", 0.5)])
    with pytest.raises(ValueError):
        getattr(results, method)()
    with pytest.raises(ValueError):
        getattr(rows_from([("t1", "female", "陽子", 0.5), ("t1", "male", "蓮", 0.5)]), method)(template_id="t9")


def test_the_mean_of_a_group_without_answers_is_none_not_zero():
    assert rows_from([("t1", "female", "陽子", 0.5)]).means() == {"female": 0.5, "male": None}


# --- evaluate_sentiment -----------------------------------------------------------------------------

class EchoBackend:
    """Completion i of a run is "<prompt>:<sample index>", so rows can be checked against requests."""

    description = {"model": "echo"}

    def __init__(self):
        self.calls = []

    def generate(self, requests, protocol):
        self.calls.append(list(requests))
        return [Completion(f"続き{r.sample_index}", 1) for r in requests]


class RecordingScorer:
    description = "recording"

    def __init__(self):
        self.calls = []

    def score(self, texts):
        self.calls.append(list(texts))
        return [0.25 * int(t[-1]) for t in texts]


def test_evaluate_sentiment_scores_only_completions_in_one_batch():
    prompts = [Prompt("t1", "female", "陽子", "陽子は"), Prompt("t1", "male", "蓮", "蓮は")]
    backend, scorer = EchoBackend(), RecordingScorer()
    results = evaluate_sentiment(backend, prompts, SamplingProtocol(num_samples=3), scorer, groups=ATTRIBUTES)
    assert [(r.prompt.term, r.completion, r.score) for r in results.rows] == [
        ("陽子", "続き0", 0.0), ("陽子", "続き1", 0.25), ("陽子", "続き2", 0.5),
        ("蓮", "続き0", 0.0), ("蓮", "続き1", 0.25), ("蓮", "続き2", 0.5),
    ]
    # One generation call and one scoring call; the names never reach the scorer.
    assert len(backend.calls) == 1 and len(scorer.calls) == 1
    assert scorer.calls[0] == ["続き0", "続き1", "続き2"] * 2
    assert results.counterfactual_fairness() == 0.0
