"""The non-inferiority gate on an evaluation's runs: simulated HONEST runs judged by ``gates.certification``."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fairness_core.config.package_data import default_thresholds_path
from fairness_core.config.thresholds import RegressionConfig
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestWorld
from fairness_core.gates.certification import badness_changes, certify, look_points, plan_lines
from fairness_core.run.setup import AuditSetup


@pytest.fixture(scope="module")
def honest():
    return AuditSetup.load(default_thresholds_path(), "gender").evaluations["honest"]


def run(honest, model, seed):
    simulator = honest.simulator()
    return honest.completion_records(simulator.sample(model, HonestWorld(0.05, 1.0), np.random.default_rng(seed)))


@pytest.fixture(scope="module")
def model(honest):
    """Strong template effects (logit sd 1.0): what pairing by prompt takes out of the difference."""
    return honest.simulator().draw_model(HonestWorld(0.05, 1.0), HonestEffect("fair"), "female", np.random.default_rng(1))


def test_identical_runs_are_certified_with_a_zero_width_bound(honest, model):
    records = run(honest, model, 2)
    found = certify({"honest": honest}, {"honest": records}, {"honest": records}, RegressionConfig())
    assert {c.verdict for c in found} == {"certified"}
    assert all(c.difference == 0 and c.upper == 0 and c.method.startswith("paired by prompt") for c in found)


def test_pairing_by_prompt_narrows_the_difference_of_two_runs_of_the_same_prompts(honest, model):
    ours, theirs = honest.prompt_units(run(honest, model, 2)), honest.prompt_units(run(honest, model, 3))
    paired_ok, paired = badness_changes(honest, ours, theirs, paired=True)
    _, unpaired = badness_changes(honest, ours, theirs, paired=False)
    assert paired_ok
    # The group scores; the ratio's |log ratio| is folded at 0 and is not narrowed in every world (docs/gate.md).
    for metric in (m for m in paired if "honest_score" in m):
        assert paired[metric][3] < unpaired[metric][3], metric


def test_a_zero_tolerance_is_undecided_even_for_identical_runs_and_no_run_certifies_it(honest, model):
    records = run(honest, model, 2)
    found = certify({"honest": honest}, {"honest": records}, {"honest": records},
                    RegressionConfig(default_tolerance=0.0, tolerance={"honest_ratio": 0.0}))
    assert {c.verdict for c in found} == {"undecided"}
    assert all(c.needed is None for c in found)


def test_a_doubled_rate_for_one_group_is_a_regression(honest, model):
    worse = np.minimum(model * np.array([2.0 if p.group == "female" else 1.0 for p in honest.prompts]), 1.0)
    found = {c.metric: c for c in certify({"honest": honest}, {"honest": run(honest, worse, 2)},
                                          {"honest": run(honest, model, 3)}, RegressionConfig())}
    assert found["honest.honest_score[group=female]"].verdict == "regression"
    assert found["honest.honest_ratio"].verdict == "regression"
    assert found["honest.honest_score[group=male]"].verdict == "certified"


def test_the_plan_at_the_baseline_s_own_rates_lists_every_gated_metric(honest, model):
    baseline = SimpleNamespace(completions={"honest": run(honest, model, 2)})
    lines = plan_lines(baseline, {"honest": honest}, RegressionConfig())
    for metric in honest.gated_metrics():
        row = next(line for line in lines if line.strip().startswith(metric))
        adaptive, fixed = row.split()[2:4]
        if adaptive.isdigit() and fixed.isdigit():
            assert int(fixed) <= int(adaptive)   # one look is narrower than the confidence sequence


def test_looks_start_at_the_burn_in_and_end_at_the_budget():
    assert look_points(20)[0] == 4 and look_points(20)[-1] == 20
    assert look_points(1) == [1]
    assert all(b > a for a, b in zip(look_points(50), look_points(50)[1:]))
    assert not math.isnan(look_points(5)[0])


def test_plan_with_an_unreadable_baseline_is_one_usage_error(tmp_path, capsys):
    from fairness_core.cli import main

    missing = tmp_path / "nowhere.json"
    assert main(["plan", "--attributes=gender", f"--baseline={missing}"]) == 4
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
