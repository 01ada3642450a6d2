"""The non-inferiority gate on an evaluation's runs: simulated HONEST runs judged by ``gates.certification``."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fairness_core.config.package_data import default_thresholds_path
from fairness_core.config.thresholds import RegressionConfig
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestWorld
from fairness_core.gates.certification import (
    NearOne,
    badness_changes,
    certify,
    certify_units,
    look_points,
    plan_lines,
)
from fairness_core.gates.noninferiority import radius
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


def test_identical_runs_are_certified_with_the_bound_of_one_discordant_prompt(honest, model):
    records = run(honest, model, 2)
    found = certify({"honest": honest}, {"honest": records}, {"honest": records}, RegressionConfig())
    assert {c.verdict for c in found} == {"certified"}
    assert all(c.difference == 0 and 0 < c.upper < c.tolerance / 4 and c.method.startswith("paired by prompt")
               for c in found)


def units_with_hits(honest, hits: dict[str, int], samples: int) -> dict[str, dict[str, tuple[int, int]]]:
    """Each group's prompts with ``samples`` completions, the first ``hits[group]`` of them with one hurtful."""
    units: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in honest.groups}
    for prompt in honest.prompts:
        own = units[prompt.group]
        own[prompt.id] = (int(len(own) < hits[prompt.group]), samples)
    return units


@pytest.mark.parametrize(("hits", "ratio_verdict"), [(7, "undecided"), (150, "certified")])
def test_same_completions_certify_the_ratio_only_when_one_more_hurtful_completion_would_not_undo_it(
        honest, hits, ratio_verdict):
    # Common random numbers and no discordant completion at the first look (4 of 20 samples): the paired bootstrap's
    # standard error is 0.  With 7 hurtful completions a group, one more moves |log ratio| by about 0.13, and a
    # model exactly at the tolerance (28% more) shows none often enough at base rate 0.002: not certified.
    units = units_with_hits(honest, dict.fromkeys(honest.groups, hits), 4)
    found = {c.metric: c for c in certify_units({"honest": honest}, {"honest": units}, {"honest": units},
                                                RegressionConfig(tolerance={"honest_ratio": 0.25}),
                                                used={"honest": 4 * len(honest.prompts)},
                                                fraction=0.2, comparisons=6)}
    ratio = found["honest.honest_ratio"]
    assert ratio.difference == 0 and ratio.verdict == ratio_verdict
    # The bound is that of one more hurtful completion (rate_ratio adds 1/2 to each count).
    assert math.isclose(ratio.upper, radius(math.log((hits + 1.5) / (hits + 0.5)), alpha=0.05 / 6, fraction=0.2))
    assert {c.verdict for m, c in found.items() if m != ratio.metric} == {"certified"}


def test_pairing_by_prompt_narrows_the_difference_of_two_runs_of_the_same_prompts(honest, model):
    ours, theirs = honest.prompt_units(run(honest, model, 2)), honest.prompt_units(run(honest, model, 3))
    paired_ok, paired = badness_changes(honest, ours, theirs, paired=True)
    _, unpaired = badness_changes(honest, ours, theirs, paired=False)
    assert paired_ok
    # The group scores; the ratio's |log ratio| is folded at 0 and is not narrowed in every world (docs/gate.md).
    for metric in (m for m in paired if "honest_score" in m):
        assert paired[metric].error < unpaired[metric].error, metric


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


@pytest.mark.parametrize(("near", "certified"), [
    # an improvement from far from 1 (ratio 5) to near it: each run's own bound certifies it
    (NearOne(size=1.6, size_error=0.05, candidate=-0.03, candidate_error=0.03, baseline=1.6, baseline_error=0.04), True),
    # a change near 1 whose size is bounded well below the tolerance
    (NearOne(size=0.02, size_error=0.03, candidate=0.1, candidate_error=0.2, baseline=0.08, baseline_error=0.2), True),
    # a noisy baseline near 1 read far from it, the candidate moved by the tolerance: neither bound holds
    (NearOne(size=0.25, size_error=0.05, candidate=0.3, candidate_error=0.2, baseline=0.05, baseline_error=0.2), False),
])
def test_a_ratio_near_1_is_certified_only_by_a_bound_that_holds_at_the_fold(near, certified):
    assert near.certifies(0.25, alpha=0.05 / 3, fraction=None) is certified


def test_the_fair_model_against_a_biased_baseline_is_certified_on_the_ratio(honest, model):
    """An improvement towards a ratio of 1 is certified; the reverse is a regression."""
    worse = np.minimum(model * np.array([3.0 if p.group == "female" else 1.0 for p in honest.prompts]), 1.0)
    fair, biased = run(honest, model, 2), run(honest, worse, 3)
    better = {c.metric: c for c in certify({"honest": honest}, {"honest": fair}, {"honest": biased}, RegressionConfig())}
    assert better["honest.honest_ratio"].verdict == "certified"
    reverse = {c.metric: c for c in certify({"honest": honest}, {"honest": biased}, {"honest": fair}, RegressionConfig())}
    assert reverse["honest.honest_ratio"].verdict == "regression"
