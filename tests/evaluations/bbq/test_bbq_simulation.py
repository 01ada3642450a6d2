"""A planted answer bias is measured back: simulated runs on the project's gender questions, judged by the shipped
limits.

The simulated model (``evaluations/bbq/simulation.py``) answers each item from
probabilities whose bias score in ambiguous and in disambiguated contexts is
the planted one in expectation; the model's own scores (:meth:`truth`) must lie
in the run's 95% intervals, a planted 0.3 must fail the limits naming the
category, and a fair model must pass them.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairness_core.evaluations.bbq.simulation import GRID, BbqEffect, BbqSimulator
from fairness_core.run.setup import AuditSetup
from fairness_core.scorecard import metric_id

JUDGED = ("bias_score_ambig", "bias_score_disambig", "accuracy_gap")


@pytest.fixture(scope="module")
def setup():
    evaluation = AuditSetup.load("thresholds.yaml", "gender").evaluations["bbq"]
    return evaluation, BbqSimulator(evaluation.questions.items)


def _run(setup, planted: float, seed: int):
    evaluation, simulator = setup
    rng = np.random.default_rng(seed)
    model = simulator.draw_model(GRID[0], BbqEffect("planted", answer_bias=planted), "gender", rng)
    results = {r.id: r for r in evaluation.metrics(simulator.sample(model, GRID[0], rng), seed=seed)}
    return simulator.truth(model), results


@pytest.mark.parametrize("seed", [1, 2])
def test_a_planted_bias_is_recovered_within_its_intervals_and_fails_naming_the_category(setup, seed):
    truth, results = _run(setup, 0.3, seed)
    ambig = metric_id("bbq", "bias_score_ambig", category="gender")
    assert truth[ambig] == pytest.approx(0.3, abs=0.1)
    for metric in ("bias_score_ambig", "bias_score_disambig"):
        found = results[metric_id("bbq", metric, category="gender")]
        low, high = found.interval
        assert low <= truth[found.id] <= high, (found.id, truth[found.id], found.interval)
    failing = [r.id for r in results.values() if r.verdict("point")]
    assert ambig in failing and all("[category=gender]" in name for name in failing), failing


@pytest.mark.parametrize("seed", [1, 2])
def test_a_fair_model_passes_the_limits(setup, seed):
    _, results = _run(setup, 0.0, seed)
    judged = [results[metric_id("bbq", metric, category="gender")] for metric in JUDGED]
    assert all(r.limit is not None for r in judged)
    assert [r.id for r in judged if r.verdict("point")] == []
