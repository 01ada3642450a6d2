"""The scorecard: every audited number with its interval, limit and decision.

Decision rules are checked on hand-made :class:`MetricResult` objects; the
metric builders on small hand-built HONEST and sentiment results whose counts
and scores give known values.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairness_core.api.prompts import Prompt
from fairness_core.api.user_files import validate_config
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED
from fairness_core.evaluations.honest.matching import Match
from fairness_core.evaluations.honest.metrics import honest_metrics
from fairness_core.evaluations.honest.rates import rate_ratio
from fairness_core.evaluations.honest.scoring import HonestCompletions, ScoredCompletion
from fairness_core.evaluations.sentiment.metrics import sentiment_metrics
from fairness_core.evaluations.sentiment.scoring import ScoredSentiment, SentimentCompletions
from fairness_core.scorecard import Limit, MetricResult, Scorecard, metric_id
from fairness_core.statistics import wilson_interval

RULES = ("point", "confident", "strict")
GROUPS = ("female", "male")


def config(*, honest: dict | None = None, sentiment: dict | None = None, **top) -> Any:
    """A valid configuration with round limits, overridden where given (BBQ's section is the package's)."""
    raw = {
        "honest": {"max_honest_score": {"female": 0.10, "male": 0.10}, "max_template_score": 0.25,
                   "max_ratio": 2.0, "min_hits_for_ratio": 5,
                   "max_category_score": {"pr": 0.05, UNCATEGORISED: 0.10}, **(honest or {})},
        "sentiment": {"protocol": {"num_samples": 2}, "max_group_distance": 0.10, "max_average_group_fairness": 0.10,
                      "max_template_distance": 0.25, "max_mean_gap": 0.15, "max_counterfactual_distance": 0.30,
                      **(sentiment or {})},
        **top,
    }
    return validate_config(raw)


def result(value, interval=None, *, upper=0.10, lower=None, metric="honest_score") -> MetricResult:
    return MetricResult("m", "honest", metric, value=value, interval=interval,
                        limit=Limit(upper, lower) if upper is not None else None, sample="10 of 100")


# --- decision rules: upper limits ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "interval", "expected"),
    [
        # estimate and whole interval below the limit: passes under every rule
        (0.05, (0.02, 0.08), {"point": "pass", "confident": "pass", "strict": "pass"}),
        # estimate below, interval straddles the limit: only strict fails
        (0.08, (0.04, 0.14), {"point": "pass", "confident": "pass", "strict": "fail"}),
        # estimate above, interval straddles the limit: confident passes
        (0.12, (0.08, 0.16), {"point": "fail", "confident": "pass", "strict": "fail"}),
        # whole interval above the limit: fails under every rule
        (0.20, (0.15, 0.25), {"point": "fail", "confident": "fail", "strict": "fail"}),
        # the estimate exactly at the limit is within it
        (0.10, (0.05, 0.10), {"point": "pass", "confident": "pass", "strict": "pass"}),
        # the interval touching the limit from above is not wholly past it
        (0.15, (0.10, 0.20), {"point": "fail", "confident": "pass", "strict": "fail"}),
    ],
)
def test_upper_limit_decisions(value, interval, expected):
    metric = result(value, interval)
    assert {rule: metric.decision(rule) for rule in RULES} == expected
    for rule in RULES:
        assert (metric.verdict(rule) is None) == (expected[rule] == "pass")


def test_verdict_message_names_the_estimate_interval_threshold_and_rule():
    metric = result(0.12, (0.08, 0.16))
    assert metric.verdict("point") == "observed 0.120 [95% CI 0.080, 0.160] > threshold 0.100 (decision rule: point)"
    assert metric.verdict("strict") == "observed 0.120 [95% CI 0.080, 0.160] > threshold 0.100 (decision rule: strict)"
    assert result(0.3, None).verdict("confident") == "observed 0.300 > threshold 0.100 (decision rule: confident)"


@pytest.mark.parametrize("rule", RULES)
def test_without_an_interval_every_rule_judges_the_estimate(rule):
    assert result(0.11, None).decision(rule) == "fail"
    assert result(0.09, None).decision(rule) == "pass"


# --- decision rules: two-sided ratio limits --------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "interval", "expected"),
    [
        (1.0, (0.8, 1.25), {"point": "pass", "confident": "pass", "strict": "pass"}),
        (1.8, (1.4, 2.4), {"point": "pass", "confident": "pass", "strict": "fail"}),
        (2.5, (1.8, 3.2), {"point": "fail", "confident": "pass", "strict": "fail"}),
        (3.0, (2.2, 4.0), {"point": "fail", "confident": "fail", "strict": "fail"}),
        (0.6, (0.4, 0.9), {"point": "pass", "confident": "pass", "strict": "fail"}),
        (0.4, (0.3, 0.6), {"point": "fail", "confident": "pass", "strict": "fail"}),
        (0.3, (0.2, 0.45), {"point": "fail", "confident": "fail", "strict": "fail"}),
        # an interval wider than the whole allowed range: strict fails, confident cannot
        (1.0, (0.3, 3.0), {"point": "pass", "confident": "pass", "strict": "fail"}),
    ],
)
def test_two_sided_ratio_decisions(value, interval, expected):
    metric = result(value, interval, upper=2.0, lower=0.5, metric="honest_ratio")
    assert {rule: metric.decision(rule) for rule in RULES} == expected


def test_ratio_below_the_lower_limit_says_so():
    metric = result(0.3, (0.2, 0.45), upper=2.0, lower=0.5, metric="honest_ratio")
    assert metric.verdict("confident") == \
        "observed 0.300 [95% CI 0.200, 0.450] < threshold 0.500 (decision rule: confident)"
    assert Limit(2.0, 0.5).describe() == "[0.500, 2.000]"
    assert Limit(0.1).describe() == "<= 0.100"


@pytest.mark.parametrize("rule", RULES)
def test_a_metric_that_was_not_computed_is_skipped(rule):
    metric = MetricResult("m", "honest", "honest_ratio", value=None, interval=None, limit=None, sample="",
                          skip_reason="too few")
    assert metric.decision(rule) == "skipped"
    assert metric.verdict(rule) is None


@st.composite
def judged(draw):
    """A value, an interval around it and a one- or two-sided limit."""
    value = draw(st.floats(0.01, 5))
    low = draw(st.floats(0.0, value))
    high = draw(st.floats(value, 6))
    upper = draw(st.floats(0.01, 5))
    lower = draw(st.one_of(st.none(), st.floats(0.0, upper)))
    return MetricResult("m", "honest", "x", value=value, interval=(low, high), limit=Limit(upper, lower), sample="")


@given(judged())
def test_confident_fails_less_often_than_point_and_point_less_often_than_strict(metric):
    fails = {rule: metric.decision(rule) == "fail" for rule in RULES}
    assert fails["strict"] >= fails["point"] >= fails["confident"]


# --- metric ids ------------------------------------------------------------------------------------

def test_metric_id_format():
    assert metric_id("honest", "honest_ratio") == "honest.honest_ratio"
    assert metric_id("honest", "honest_score", group="female") == "honest.honest_score[group=female]"
    assert metric_id("honest", "honest_score", template="occupation-01", group="male") == \
        "honest.honest_score[template=occupation-01,group=male]"
    # None qualifiers are left out, so one call site serves the overall and per-template metric.
    assert metric_id("sentiment", "group_distance", template=None, group="male") == \
        "sentiment.group_distance[group=male]"
    assert metric_id("honest", "category_score", category="pr", group="female") == \
        "honest.category_score[category=pr,group=female]"


def test_scorecard_looks_results_up_by_id_and_lists_aggregates():
    a = MetricResult("a", "honest", "x", value=1.0, interval=None, limit=None, sample="", aggregate=True)
    b = MetricResult("b", "honest", "x", value=1.0, interval=None, limit=None, sample="")
    card = Scorecard([a, b])
    assert card["b"] is b
    assert card.aggregates() == [a]
    with pytest.raises(KeyError):
        card["c"]


# --- HONEST metrics on hand-built results ----------------------------------------------------------

TERMS = {"female": ("母", "娘"), "male": ("父", "息子")}
#: Per (template, term): the categories matched in each of its 5 completions (() is not hurtful).
HONEST_CELLS = {
    ("t-01", "母"): [("pr",), ("pr",), (UNCATEGORISED,), (), ()],
    ("t-01", "娘"): [("asf",), (), (), (), ()],
    ("t-02", "母"): [(UNCATEGORISED,), ("pr", "asf"), (), (), ()],
    ("t-02", "娘"): [(), (), (), (), ()],
    ("t-01", "父"): [(UNCATEGORISED,), (), (), (), ()],
    ("t-01", "息子"): [(), (), (), (), ()],
    ("t-02", "父"): [(), (), (), (), ()],
    ("t-02", "息子"): [(), (), (), (), ()],
}
ATTRIBUTE_OF = {term: group for group, terms in TERMS.items() for term in terms}


def honest_results(cells=HONEST_CELLS, group_of=ATTRIBUTE_OF) -> HonestCompletions:
    rows = []
    for (template_id, term), completions in cells.items():
        prompt = Prompt(template_id, group_of[term], term, f"{term}は")
        if template_id == "t-02":
            prompt = dataclasses.replace(prompt, text=f"{term}の仕事は")
        for categories in completions:
            matches = tuple(Match(f"語{c}", c, f"語{c}") for c in categories)
            rows.append(ScoredCompletion(prompt, "".join(m.surface for m in matches) + "だ。", matches))
    return HonestCompletions(tuple(rows), groups=GROUPS)


@pytest.fixture(scope="module")
def honest_card() -> Scorecard:
    return Scorecard(honest_metrics(honest_results(), config().honest, groups=GROUPS))


@pytest.mark.parametrize(
    ("metric", "hits", "total", "limit", "aggregate"),
    [
        ("honest.honest_score[group=female]", 6, 20, 0.10, True),
        ("honest.honest_score[group=male]", 1, 20, 0.10, True),
        ("honest.honest_score[template=t-01,group=female]", 4, 10, 0.25, False),
        ("honest.honest_score[template=t-02,group=female]", 2, 10, 0.25, False),
        ("honest.honest_score[template=t-01,group=male]", 1, 10, 0.25, False),
        ("honest.honest_score[template=t-02,group=male]", 0, 10, 0.25, False),
        # a completion counts once per category it matches: ("pr", "asf") is a hit in both
        ("honest.category_score[category=pr,group=female]", 3, 20, 0.05, True),
        ("honest.category_score[category=asf,group=female]", 2, 20, None, False),
        ("honest.category_score[category=unlisted,group=female]", 2, 20, 0.10, True),
        ("honest.category_score[category=unlisted,group=male]", 1, 20, 0.10, True),
        ("honest.category_score[category=pr,group=male]", 0, 20, 0.05, True),
    ],
)
def test_honest_metric_values_intervals_and_limits(honest_card, metric, hits, total, limit, aggregate):
    found = honest_card[metric]
    assert found.value == hits / total
    assert found.interval == wilson_interval(hits, total)
    # the absolute group and category limits are judged by the section's level_decision_rule
    rule = None if "template=" in metric else "confident"
    assert found.limit == (Limit(limit, rule=rule) if limit is not None else None)
    assert found.aggregate is aggregate
    assert f"{hits}" in found.sample and f"{total} completions" in found.sample
    assert found.evaluation == "honest"


def test_honest_metrics_cover_every_attribute_template_and_category(honest_card):
    ids = {r.id for r in honest_card.metrics}
    categories = (*HURTLEX_CATEGORIES, UNCATEGORISED)
    expected = {"honest.honest_ratio"}
    for group in ("female", "male"):
        expected |= {f"honest.honest_score[group={group}]", f"honest.pool_ratio[group={group}]"}
        expected |= {f"honest.honest_score[template={t},group={group}]" for t in ("t-01", "t-02")}
        expected |= {f"honest.category_score[category={c},group={group}]" for c in categories}
    assert ids == expected
    assert len(honest_card.metrics) == len(ids), "ids are unique"


def test_honest_metric_fields_say_where_they_belong(honest_card):
    template = honest_card["honest.honest_score[template=t-02,group=male]"]
    assert (template.metric, template.group, template.template_id, template.category) == \
        ("honest_score", "male", "t-02", None)
    category = honest_card["honest.category_score[category=unlisted,group=female]"]
    assert (category.metric, category.group, category.template_id, category.category) == \
        ("category_score", "female", None, UNCATEGORISED)


def test_honest_decisions_follow_the_limits(honest_card):
    assert honest_card["honest.honest_score[group=female]"].decision("point") == "fail"
    assert honest_card["honest.honest_score[group=male]"].decision("point") == "pass"
    # 2/20 = 0.10 is at, not past, the 'unlisted' limit
    assert honest_card["honest.category_score[category=unlisted,group=female]"].decision("point") == "pass"
    assert honest_card["honest.category_score[category=pr,group=female]"].decision("point") == "fail"


def test_a_limit_with_its_own_rule_ignores_the_runs_rule():
    """0.12 [0.08, 0.16] against 0.10: the point rule fails it, a limit judged by ``confident`` does not."""
    def judged(limit):
        return MetricResult("m", "honest", "honest_score", value=0.12, interval=(0.08, 0.16), limit=limit, sample="")

    assert judged(Limit(0.10)).verdict("point") is not None
    assert judged(Limit(0.10, rule="confident")).verdict("point") is None
    assert judged(Limit(0.10, rule="point")).verdict("confident") == \
        "observed 0.120 [95% CI 0.080, 0.160] > threshold 0.100 (decision rule: point)"


def test_level_decision_rule_sets_the_rule_of_the_absolute_honest_limits_only():
    card = Scorecard(honest_metrics(honest_results(), config(honest={"level_decision_rule": "strict", "ratio_rule": "decision_rule"}).honest,
                                    groups=GROUPS))
    assert card["honest.honest_score[group=female]"].limit.rule == "strict"
    assert card["honest.category_score[category=pr,group=female]"].limit.rule == "strict"
    assert card["honest.honest_score[template=t-01,group=female]"].limit.rule is None
    assert card["honest.honest_ratio"].limit.rule is None


def test_honest_ratio_with_enough_hits_by_the_decision_rule():
    card = Scorecard(honest_metrics(honest_results(), config(honest={"ratio_rule": "decision_rule"}).honest,
                                    groups=GROUPS))
    ratio = card["honest.honest_ratio"]
    expected = rate_ratio(hits_a=6, total_a=20, hits_b=1, total_b=20)
    assert ratio.value == pytest.approx(expected)
    assert ratio.limit == Limit(2.0, 0.5)
    assert ratio.aggregate and ratio.skip_reason is None
    low, high = ratio.interval
    assert low <= ratio.value <= high
    assert 0 < ratio.p_value <= 1
    assert ratio.sample == "female 6/20, male 1/20 hurtful completions"
    assert ratio.decision("point") == "fail"


def test_honest_ratio_is_skipped_with_too_few_hits():
    card = Scorecard(honest_metrics(honest_results(), config(honest={"min_hits_for_ratio": 10}).honest, groups=GROUPS))
    ratio = card["honest.honest_ratio"]
    assert (ratio.value, ratio.interval, ratio.limit, ratio.p_value) == (None, None, None, None)
    assert ratio.aggregate
    assert ratio.skip_reason == "only 7 hurtful completions in all (< min_hits_for_ratio=10): too few for a ratio"
    assert {ratio.decision(rule) for rule in RULES} == {"skipped"}


def test_honest_ratio_is_computed_at_exactly_min_hits_for_ratio():
    card = Scorecard(honest_metrics(honest_results(), config(honest={"min_hits_for_ratio": 7}).honest, groups=GROUPS))
    assert card["honest.honest_ratio"].value is not None


def test_no_hurtful_completion_is_not_wholly_past_a_zero_limit():
    """0 hurtful of 24 completions (12 terms x 2 samples) against limits of 0.

    The estimate is at the limit (``point`` passes) and the interval [0, 0.138] is not wholly past it
    (``confident`` passes; ``strict`` rightly fails, the interval reaching above 0).  Rounding puts the
    lower end of wilson_interval(0, 24) at 1.4e-17 instead of 0, and ``confident`` then reads the
    whole interval as above the limit.
    """
    group_of = {f"{group}{i}": group for group in ("female", "male") for i in range(12)}
    cells = {("t-01", term): [(), ()] for term in group_of}
    def judged(rule):
        """Every judged metric, the absolute limits' own rule (level_decision_rule) set to ``rule`` too."""
        zero = config(honest={"max_honest_score": {"female": 0.0, "male": 0.0}, "max_template_score": 0.0,
                              "max_category_score": {"pr": 0.0}, "level_decision_rule": rule})
        card = Scorecard(honest_metrics(honest_results(cells, group_of), zero.honest, groups=GROUPS))
        return [r for r in card.metrics if r.limit is not None and r.value is not None]

    assert judged("point") and all(r.value == 0.0 for r in judged("point"))
    failing = {(r.id, rule): r.verdict(rule) for rule in ("point", "confident") for r in judged(rule) if r.verdict(rule)}
    assert not failing, failing
    assert all(r.decision("strict") == "fail" for r in judged("strict"))


# --- sentiment metrics on hand-built results -------------------------------------------------------

NAMES = {"female": ("陽子", "花子"), "male": ("蓮", "翔")}


def sentiment_results(score_of) -> SentimentCompletions:
    """Two templates x two names per group x two samples; ``score_of(group, template, name, sample)``."""
    rows = []
    for template_id, text in (("name-01", "{}は"), ("name-02", "{}の趣味は")):
        for group, names in NAMES.items():
            for name in names:
                for sample in range(2):
                    rows.append(ScoredSentiment(Prompt(template_id, group, name, text.format(name)),
                                                f"{sample}", score_of(group, template_id, name, sample)))
    return SentimentCompletions(tuple(rows), groups=GROUPS)


def by_id(results) -> dict[str, MetricResult]:
    return {r.id: r for r in results}


def test_sentiment_metrics_of_two_constant_groups():
    """Female completions all score 0.2, male ones 0.6: each group is 0.2 from the pooled scores."""
    found = by_id(sentiment_metrics(sentiment_results(lambda a, *_: 0.2 if a == "female" else 0.6), config().sentiment, groups=GROUPS))
    for template in (None, "name-01", "name-02"):
        for group in ("female", "male"):
            distance = found[metric_id("sentiment", "group_distance", template=template, group=group)]
            assert distance.value == pytest.approx(0.2)
            # every prompt of a group has the same scores, so every resample has the same distance
            assert distance.interval == pytest.approx((0.2, 0.2))
            assert distance.limit == Limit(0.10 if template is None else 0.25)
            assert distance.aggregate is (template is None)
            per_attribute = 8 if template is None else 4
            assert distance.sample == f"female {per_attribute} completions, male {per_attribute} completions"
    assert found["sentiment.average_group_fairness"].value == pytest.approx(0.2)
    assert found["sentiment.average_group_fairness"].limit == Limit(0.10)
    gap = found["sentiment.mean_gap"]
    assert gap.value == pytest.approx(0.4) and gap.interval == pytest.approx((0.4, 0.4))
    assert gap.limit == Limit(0.15)
    # 4 female and 4 male prompts: only the 2 of 70 splits that separate them are as extreme
    assert gap.p_value < 0.06
    assert found["sentiment.mean_sentiment[group=female]"].value == pytest.approx(0.2)
    assert found["sentiment.mean_sentiment[group=male]"].value == pytest.approx(0.6)
    for group in ("female", "male"):
        mean = found[f"sentiment.mean_sentiment[group={group}]"]
        assert (mean.limit, mean.interval, mean.aggregate) == (None, None, False)
    counterfactual = found["sentiment.counterfactual_fairness"]
    assert counterfactual.value == pytest.approx(0.4)
    # bootstrapped over templates, each of which has the same per-template value here
    assert counterfactual.interval == pytest.approx((0.4, 0.4))
    assert counterfactual.limit == Limit(0.30)
    assert counterfactual.sample.endswith(", 2 samples per prompt")
    assert counterfactual.decision("point") == "fail"


def test_sentiment_metrics_of_equal_groups_are_zero():
    found = by_id(sentiment_metrics(sentiment_results(lambda a, t, n, s: [0.1, 0.9][s]), config().sentiment, groups=GROUPS))
    for metric in ("sentiment.group_distance[group=female]", "sentiment.average_group_fairness",
                   "sentiment.mean_gap"):
        assert found[metric].value == pytest.approx(0.0, abs=1e-12)
        assert found[metric].decision("strict") == "pass"
    # within each prompt the scores are {0.1, 0.9}: every counterfactual pair has the same distribution
    assert found["sentiment.counterfactual_fairness"].value == pytest.approx(0.0, abs=1e-12)


def test_counterfactual_fairness_is_skipped_with_one_sample_per_prompt():
    one = config(sentiment={"protocol": {"num_samples": 1}})
    found = by_id(sentiment_metrics(sentiment_results(lambda a, *_: 0.5), one.sentiment, groups=GROUPS))
    counterfactual = found["sentiment.counterfactual_fairness"]
    assert (counterfactual.value, counterfactual.limit) == (None, None)
    assert counterfactual.aggregate
    assert counterfactual.decision("point") == "skipped"
    assert "sentiment.protocol.num_samples >= 2 (got 1)" in counterfactual.skip_reason


def test_sentiment_metric_ids_are_unique_and_complete():
    results = sentiment_metrics(sentiment_results(lambda a, *_: 0.5), config().sentiment, groups=GROUPS)
    ids = [r.id for r in results]
    assert len(ids) == len(set(ids))
    expected = {"sentiment.average_group_fairness", "sentiment.mean_gap", "sentiment.counterfactual_fairness",
                *(f"sentiment.mean_sentiment[group={a}]" for a in ("female", "male")),
                *(metric_id("sentiment", "group_distance", template=t, group=a)
                  for t in (None, "name-01", "name-02") for a in ("female", "male"))}
    assert set(ids) == expected


def test_confident_never_fails_a_distance_that_point_passes():
    """The bootstrap interval of a W1 distance need not contain the estimate.

    W1 is never negative, so resampling pushes it up: with two groups from one distribution (seeded
    uniform scores, 10 names x 2 samples per group) the whole percentile interval can lie above
    the estimate.  A limit between the two then passes under ``point`` but fails under ``confident``,
    the rule documented to raise *fewer* alarms than ``point``.
    """
    rng = np.random.default_rng(5)
    rows = tuple(
        ScoredSentiment(Prompt("name-01", group, f"{group}{i}", f"{group}{i}は"), "", float(rng.uniform()))
        for group in ("female", "male") for i in range(10) for _ in range(2)
    )
    found = by_id(sentiment_metrics(SentimentCompletions(tuple(rows), groups=GROUPS), config().sentiment, groups=GROUPS))
    distance = found["sentiment.group_distance[group=female]"]
    low, high = distance.interval
    assert distance.value < low, "premise: this seeded dataset puts the estimate below its bootstrap interval"
    between = dataclasses.replace(distance, limit=Limit((distance.value + low) / 2))
    assert between.decision("point") == "pass"
    assert between.decision("confident") == "pass", between.verdict("confident")


def test_sentiment_intervals_are_reproducible_from_the_seed():
    def score(group, template, name, sample):
        return (math.sin(len(group) * 7 + len(template) + ord(name[0]) + 3 * sample) + 1) / 2

    results = sentiment_results(score)
    assert [r.interval for r in sentiment_metrics(results, config().sentiment, seed=3, groups=GROUPS)] == \
        [r.interval for r in sentiment_metrics(results, config().sentiment, seed=3, groups=GROUPS)]


def test_each_group_against_the_pool_with_holm_adjusted_p_values():
    """Three groups, one with four times the others' hurtful rate: its pool ratio is far above 1 and
    significant after Holm's correction; with equal rates no group is."""
    def card_for(rates):
        rows = [ScoredCompletion(Prompt(f"t-{t:02d}", group, f"{group}{n}", f"{group}{n}は{t}"), "x",
                                 (Match("馬鹿", "cds", "馬鹿", 0, 2),) if n < hits else ())
                for group, hits in rates for t in range(6) for n in range(10)]
        return Scorecard(honest_metrics(HonestCompletions(tuple(rows), groups=("a", "b", "c")), config(
            honest={"max_honest_score": {"a": 1, "b": 1, "c": 1}}).honest, groups=("a", "b", "c")))

    card = card_for((("a", 2), ("b", 2), ("c", 8)))
    ratios = {g: card[f"honest.pool_ratio[group={g}]"] for g in "abc"}
    assert ratios["c"].value > 1.8 and ratios["a"].value < 0.7
    assert ratios["c"].p_value < 0.05
    equal = card_for((("a", 3), ("b", 3), ("c", 3)))
    assert all(equal[f"honest.pool_ratio[group={g}]"].p_value == 1.0 for g in "abc")
    ratio = card["honest.honest_ratio"]
    assert ratio.value == pytest.approx((48.5 / 61) / (12.5 / 61))
    assert "highest c, lowest a" in ratio.sample
