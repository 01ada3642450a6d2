"""The regression gate's paired test: two runs of the same prompts compared prompt by prompt.

The runs here are drawn from known per-prompt rates, so the standard error of
the difference has a closed form to check the paired bootstrap against.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairness_core.config.package_data import default_thresholds_path
from fairness_core.config.thresholds import RegressionConfig
from fairness_core.evaluations.honest.evaluation import HonestEvaluation
from fairness_core.evaluations.honest.matching import Match
from fairness_core.evaluations.honest.scoring import HonestCompletions, ScoredCompletion
from fairness_core.evaluations.sentiment.scoring import ScoredSentiment, SentimentCompletions
from fairness_core.gates.regression import gate_regressions, paired_standard_errors, regression
from fairness_core.reporting.results import CompletionRecord, MetricRecord, metric_records
from fairness_core.run.setup import AuditSetup
from fairness_core.scorecard import Limit, MetricResult

SAMPLES = 10
HURTFUL = Match("バカ", "ddf", "バカ")


@pytest.fixture(scope="module")
def plan():
    return AuditSetup.load(default_thresholds_path(), "gender")


def prompt_rates(prompts) -> dict[str, float]:
    """Strong prompt effects: every other prompt of a group is never hurtful, the rest are hurtful 60% of the time."""
    seen: dict[str, int] = {}
    rates = {}
    for prompt in prompts:
        seen[prompt.group] = seen.get(prompt.group, -1) + 1
        rates[prompt.id] = 0.6 * (seen[prompt.group] % 2)
    return rates


def honest_run(prompts, rates, rng, groups) -> HonestCompletions:
    return HonestCompletions(tuple(
        ScoredCompletion(prompt, "。", (HURTFUL,) if rng.random() < rates[prompt.id] else ())
        for prompt in prompts for _ in range(SAMPLES)), groups=groups)


def records(evaluation, scored) -> list[CompletionRecord]:
    return evaluation.completion_records(scored)


def test_gated_values_are_the_metrics_values(plan):
    """What the paired bootstrap resamples is exactly what the audit reports, for both evaluations."""
    rng = np.random.default_rng(0)
    honest, sentiment = plan.evaluations["honest"], plan.evaluations["sentiment"]
    scored = honest_run(honest.prompts, prompt_rates(honest.prompts), rng, honest.groups)
    feelings = SentimentCompletions(tuple(ScoredSentiment(p, "。", float(rng.choice([0.0, 0.5, 1.0])))
                                          for p in sentiment.prompts), groups=sentiment.groups)
    for evaluation, run in ((honest, scored), (sentiment, feelings)):
        units = evaluation.prompt_units(records(evaluation, run))
        values = evaluation.gated_values([list(units[g].values()) for g in evaluation.groups])
        reported = {m.id: m.value for m in evaluation.metrics(run, seed=0)}
        assert values and values.keys() <= set(evaluation.gated_metrics())
        for metric_id, value in values.items():
            assert value == pytest.approx(reported[metric_id]), metric_id


def test_paired_error_of_a_rerun_matches_the_closed_form(plan):
    """Same prompts, same per-prompt rates: the difference's variance is the within-prompt binomial part only.

    For a group's HONEST score, ``var(new - old) = 2 * sum_i n p_i (1 - p_i) / N**2``.
    The unpaired test uses each run's Wilson interval, ``p(1 - p) / N`` with the pooled
    rate, which counts the prompt effects as noise: here it is 1.3x the paired one.
    """
    honest = plan.evaluations["honest"]
    rates = prompt_rates(honest.prompts)
    rng = np.random.default_rng(1)
    current, baseline = (records(honest, honest_run(honest.prompts, rates, rng, honest.groups)) for _ in range(2))
    errors = paired_standard_errors(honest, current, baseline, resamples=400, seed=0)
    female = [p for p in honest.prompts if p.group == "female"]
    total = SAMPLES * len(female)
    expected = math.sqrt(2 * sum(SAMPLES * rates[p.id] * (1 - rates[p.id]) for p in female)) / total
    assert errors["honest.honest_score[group=female]"] == pytest.approx(expected, rel=0.15)
    pooled = sum(rates[p.id] for p in female) / len(female)
    assert math.sqrt(2 * pooled * (1 - pooled) / total) > 1.25 * expected
    assert set(errors) == {"honest.honest_score[group=female]", "honest.honest_score[group=male]",
                           "honest.honest_ratio"}


def test_runs_of_different_prompts_are_not_paired(plan):
    honest = plan.evaluations["honest"]
    rng = np.random.default_rng(2)
    current = records(honest, honest_run(honest.prompts, prompt_rates(honest.prompts), rng, honest.groups))
    dropped = current[0].prompt_id
    assert paired_standard_errors(honest, current, [r for r in current if r.prompt_id != dropped]) == {}


def test_a_paired_error_replaces_the_runs_intervals():
    """Wide intervals alone give p = 0.08; the paired error of the same difference is small: significant."""
    config = RegressionConfig(default_tolerance=0.02)
    now = MetricResult("x.honest_score", "x", "honest_score", value=0.20, interval=(0.10, 0.30), limit=Limit(1.0),
                       sample="now")
    then = MetricRecord(id="x.honest_score", evaluation="x", metric="honest_score", group=None, template_id=None,
                        category=None, value=0.10, interval=(0.0, 0.20), p_value=None, limit_upper=1.0,
                        limit_lower=None, decision="pass", skip_reason=None, aggregate=True, sample="then")
    spec = HonestEvaluation.metric_spec("honest_score")
    assert regression(now, then, config, spec=spec) is None
    verdict = regression(now, then, config, spec=spec, paired_error=0.03)
    assert verdict == ("0.200 [95% CI 0.100, 0.300] vs baseline 0.100: worse by 0.100 > tolerance 0.02; "
                       "one-sided p = 0.0004 < 0.0500 for the difference (paired by prompt)")
    assert regression(now, then, config, spec=spec, paired_error=0.08) is None


def test_the_whole_gate_flags_a_worse_group_and_passes_a_rerun(plan):
    """``gate_regressions`` (what the gate benchmarks count) on a same-model re-run and on a degraded one.

    The degraded run keeps the baseline's prompts and makes female's hurtful
    prompts hurtful 90% of the time instead of 60%: its female score rises
    from 0.30 to 0.45, far beyond the tolerance and the noise, paired or not.
    """
    honest = plan.evaluations["honest"]
    evaluations, config = {"honest": honest}, plan.config.regression
    rates = prompt_rates(honest.prompts)
    worse = {p.id: rate * 1.5 if p.group == "female" else rate for p, rate in zip(honest.prompts, rates.values())}
    rng = np.random.default_rng(3)
    base_run = honest_run(honest.prompts, rates, rng, honest.groups)
    base = {r.id: r for r in metric_records(honest.metrics(base_run, seed=0), plan.config.decision_rule)}
    for run_rates, expected in ((rates, []), (worse, ["honest.honest_score[group=female]", "honest.honest_ratio"])):
        run = honest_run(honest.prompts, run_rates, rng, honest.groups)
        current = {m.id: m for m in honest.metrics(run, seed=0)}
        completions = ({"honest": records(honest, run)}, {"honest": records(honest, base_run)})
        paired = gate_regressions(evaluations, current, base, config, completions=completions)
        unpaired = gate_regressions(evaluations, current, base, config)
        assert [line.split(":")[0] for line in paired] == expected
        assert all(line.endswith("(paired by prompt)") for line in paired)
        assert [line.split(":")[0] for line in unpaired] == expected
        assert all(line.endswith("(unpaired)") for line in unpaired)
