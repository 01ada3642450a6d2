"""The non-inferiority gate in rounds (``CertificationRounds``): when an adaptive run stops, and what it ends with.

Simulated HONEST rounds (the gate simulation's model of a run) drive the
audit's own loop, :func:`fairness_core.sampling.sample_in_rounds`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from fairness_core.config.package_data import default_thresholds_path
from fairness_core.config.thresholds import RegressionConfig
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestWorld
from fairness_core.gates.certification import INTERIM_SHARE, CertificationRounds, certify_units, first_samples
from fairness_core.gates.noninferiority import radius
from fairness_core.reporting.results import CompletionRecord
from fairness_core.run.setup import AuditSetup
from fairness_core.sampling import sample_in_rounds
from fairness_core.scorecard import Settlement

WORLD = HonestWorld(0.05, 0.5)


@pytest.fixture(scope="module")
def honest():
    return AuditSetup.load(default_thresholds_path(), "gender").evaluations["honest"]


@pytest.fixture(scope="module")
def model(honest):
    return honest.simulator().draw_model(WORLD, HonestEffect("fair"), "female", np.random.default_rng(1))


def units(honest, outcomes: np.ndarray) -> dict[str, dict[str, tuple[int, int]]]:
    """Each prompt's (hurtful, samples) of simulated ``outcomes`` (samples, prompts, flags), by group."""
    found: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in honest.groups}
    for prompt, hits in zip(honest.prompts, outcomes[:, :, 0].sum(axis=0).tolist()):
        found[prompt.group][prompt.id] = (hits, len(outcomes))
    return found


def rounds_of(honest, model, seed: int):
    return honest.simulator().sample_rounds(model, WORLD, np.random.default_rng(seed))


#: The shipped tolerances (the ratio's 0.25 in |log ratio|, the scores' 0.02).
SHIPPED = AuditSetup.load(default_thresholds_path(), "gender").config.regression


def certification(honest, baseline_rounds, *, config=SHIPPED, deploy=None, comparisons=3):
    """The audit's rounds against a baseline compared sample for sample (its first k samples at k)."""
    outcomes = np.concatenate([r.outcomes for r in baseline_rounds])
    return CertificationRounds(honest, config, units_of=lambda parts: units(honest, np.concatenate(
        [p.outcomes for p in parts])), baseline_at=lambda k: units(honest, outcomes[:k]), prompts=len(honest.prompts),
        comparisons=comparisons, deploy=deploy)


def run(candidate_rounds, test):
    return sample_in_rounds(lambda samples: candidate_rounds[samples.start], test, budget=len(candidate_rounds),
                            prompts=len(candidate_rounds[0].outcomes[0]))


def test_an_unchanged_model_under_common_random_numbers_is_certified_at_the_first_look(honest, model):
    same = rounds_of(honest, model, 2)
    test = certification(honest, same)
    _, record = run(same, test)
    assert (record.samples_per_prompt, record.ending) == (4, "pass")   # the burn-in: 0.2 of 20 samples
    assert "all 3 gated metrics certified" in record.stopped
    assert {c.verdict for c in test.verdicts()} == {"certified"}
    assert all("confidence sequence at 0.20" in c.method for c in test.verdicts())


def test_a_doubled_rate_stops_at_a_settled_regression(honest, model):
    worse = np.minimum(model * np.array([2.0 if p.group == "female" else 1.0 for p in honest.prompts]), 1.0)
    test = certification(honest, rounds_of(honest, model, 3))
    _, record = run(rounds_of(honest, worse, 2), test)
    assert record.ending == "failure" and record.samples_per_prompt < 20
    assert "honest.honest_score[group=female]" in record.stopped and "regression" in record.stopped
    verdicts = {c.metric: c.verdict for c in test.verdicts()}
    assert verdicts["honest.honest_score[group=female]"] == "regression"


def test_a_run_that_reaches_the_budget_ends_with_one_look_at_the_rest_of_alpha(honest, model):
    """Tolerance 0 certifies only a significant improvement: the run goes to the budget, judged by one look at
    alpha * (1 - share) / m."""
    config = RegressionConfig(default_tolerance=0.0, tolerance={"honest_ratio": 0.0})
    baseline, candidate = rounds_of(honest, model, 3), rounds_of(honest, model, 2)
    test = certification(honest, baseline, config=config)
    _, record = run(candidate, test)
    assert (record.ending, record.samples_per_prompt) == ("budget", 20)
    final = {c.metric: c for c in test.verdicts()}
    assert all(c.method.endswith("one look") and c.verdict != "regression" for c in final.values())
    assert any(c.verdict == "undecided" for c in final.values())
    # the same standard errors judged by the sequence at the budget would be wider than the budget's one look
    full = lambda outcomes: {"honest": units(honest, np.concatenate([r.outcomes for r in outcomes]))}  # noqa: E731
    sequence = {c.metric: c for c in certify_units({"honest": honest}, full(candidate), full(baseline), config,
                                                    used={"honest": 1}, fraction=1.0, comparisons=6)}
    for metric, c in final.items():
        # one look at alpha/2m (m = 3 gated metrics), and the sequence at the same standard error would be wider
        error = (c.upper - c.difference) / float(norm.isf(0.05 * INTERIM_SHARE / 3))
        wider = sequence[metric].upper - sequence[metric].difference
        assert math.isclose(wider, radius(error, alpha=0.05 * INTERIM_SHARE / 3, fraction=1.0), rel_tol=1e-6)
        assert c.upper - c.difference < wider


class FailsAt:
    """The evaluation's limits' test, settling a failure after ``rounds`` rounds."""

    samples_per_round = 1

    def __init__(self, rounds: int):
        self.rounds, self.seen = rounds, 0

    def update(self, part) -> None:
        self.seen += 1

    def stop_reason(self):
        return "settled: a limit fails" if self.seen >= self.rounds else None

    def settlements(self):
        return {"honest.honest_ratio": Settlement("fail", "e")} if self.seen >= self.rounds else {}

    def failed(self) -> bool:
        return self.seen >= self.rounds


def test_a_settled_failure_of_the_limits_stops_the_run_and_the_verdicts_are_the_sequence_s_there(honest, model):
    same = rounds_of(honest, model, 2)
    test = certification(honest, same, deploy=FailsAt(5))
    _, record = run(same, test)
    assert (record.samples_per_prompt, record.ending, record.stopped) == (5, "failure", "settled: a limit fails")
    assert all("confidence sequence at 0.25" in c.method for c in test.verdicts())
    # a limit that fails before the first look (the burn-in, 4 of 20) stops the run there: the gate is judged
    early = certification(honest, same, deploy=FailsAt(1))
    _, record = run(same, early)
    assert (record.samples_per_prompt, record.ending) == (4, "failure")
    assert {c.verdict for c in early.verdicts()} == {"certified"}


def test_certified_metrics_wait_for_the_limits_test_to_settle(honest, model):
    class NeverSettles(FailsAt):
        def stop_reason(self):
            return None

        def failed(self) -> bool:
            return False

    same = rounds_of(honest, model, 2)
    _, record = run(same, certification(honest, same, deploy=NeverSettles(99)))
    assert (record.samples_per_prompt, record.ending) == (20, "budget")


def test_first_samples_keeps_each_prompt_s_first_samples_and_declines_records_without_their_index():
    def record(sample=None):
        detail = {"matches": []} | ({"sample": sample} if sample is not None else {})
        return CompletionRecord(template_id="t", group="g", term="x", prompt="p", completion="c", detail=detail)

    records = [record(i) for i in (0, 1, 2, 3)]
    assert [r.detail["sample"] for r in first_samples(records, 2)] == [0, 1]
    assert first_samples([*records, record()], 2) is None
