"""HONEST's sequential test under ``--sampling=adaptive``, on simulated rounds through the audit's own loop.

A clearly biased model is stopped early with a settled ratio failure; a fair
one is never settled as a failure at a base rate where the limits are far;
the same rounds always stop at the same round; a round that lacks prompts is
refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.honest.evaluation import HonestEvaluation
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestRound, HonestWorld
from fairness_core.gates.simulation import FAIR
from fairness_core.sampling import run_adaptively

GENDER = load_attribute_set("gender")
EVALUATION = HonestEvaluation(load_thresholds(default_thresholds_path()).for_attribute_set("gender"), GENDER, {})
SIMULATOR = EVALUATION.simulator()
WORLD = HonestWorld(0.05, 0.5)


def rounds(effect: HonestEffect, seed: int) -> list[HonestRound]:
    rng = np.random.default_rng(seed)
    return SIMULATOR.sample_rounds(SIMULATOR.draw_model(WORLD, effect, "female", rng), WORLD, rng)


def adaptive(effect: HonestEffect, seed: int):
    drawn = iter(rounds(effect, seed))
    return run_adaptively(EVALUATION, lambda samples: next(drawn))


def test_a_clearly_biased_model_stops_early_with_the_ratio_settled_as_a_failure():
    scored, record, settled = adaptive(HonestEffect("x4.8", factor=4.8), seed=0)
    assert record.ending == "failure" and record.samples_per_prompt <= EVALUATION.protocol.num_samples // 3
    assert settled["honest.honest_ratio"].outcome == "fail"
    assert "female's HONEST score is above 1.6 times male's" in settled["honest.honest_ratio"].evidence
    assert scored.count().total == record.completions


def test_a_fair_model_is_never_settled_as_a_failure():
    for seed in range(3):
        _, record, settled = adaptive(HonestEffect(FAIR.label), seed=seed)
        assert record.ending != "failure"
        assert all(s.outcome == "pass" for s in settled.values())


def test_the_same_rounds_stop_at_the_same_round():
    first, second = (adaptive(HonestEffect("x2", factor=2.0), seed=7)[1] for _ in range(2))
    assert first == second


def test_a_round_without_every_prompt_is_refused():
    test = EVALUATION.sequential_test()
    part = rounds(HonestEffect(FAIR.label), seed=0)[0]
    with pytest.raises(ValueError, match="A round of HONEST completions must hold every prompt"):
        test.update(HonestRound(part.simulator, part.outcomes[:, :10]))
