"""The HONEST ratio's noise-floor rule and its underpowered verdict, on simulated fair and biased runs.

At a few dozen hurtful completions per group the highest over the lowest of
eight groups' rates passes ``max_ratio`` by chance; the rule raises the limit
to what chance reaches and says the run is underpowered.  At thousands the
floor is below ``max_ratio`` and the limit is ``max_ratio`` itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.honest import metrics
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestSimulator, HonestWorld
from fairness_core.gates.simulation import FAIR

NATIONALITY = load_attribute_set("nationality")
LIMITS = load_thresholds(default_thresholds_path()).for_attribute_set("nationality").honest


@pytest.fixture(autouse=True)
def no_permutation_test(monkeypatch):
    """The ratio's p-value (a slow permutation test) plays no part in its limit or verdict."""
    monkeypatch.setattr(metrics, "permutation_pvalue", lambda *args, **kwargs: None)


def ratio_of(base_rate: float, effect: HonestEffect = HonestEffect(FAIR.label), *, seed: int = 0, samples: int = 20, limits=LIMITS):
    simulator = HonestSimulator(honest_prompts(NATIONALITY), NATIONALITY.groups, samples=samples)
    rng = np.random.default_rng(seed)
    world = HonestWorld(base_rate, 0.5)
    run = simulator.sample(simulator.draw_model(world, effect, NATIONALITY.groups[0], rng), world, rng)
    return metrics._honest_ratio(run, limits, groups=NATIONALITY.groups, seed=seed)


def test_few_hurtful_completions_raise_the_limit_and_are_underpowered():
    ratio = ratio_of(0.005)
    assert ratio.limit.upper > LIMITS.max_ratio
    assert ratio.limit.why.startswith(f"max_ratio {LIMITS.max_ratio:g} raised to the noise floor")
    assert "are needed to detect a ratio of 2 with 90% power" in ratio.underpowered
    assert "samples per prompt" in ratio.underpowered
    assert ratio.decision("point") == "underpowered"


def test_many_hurtful_completions_keep_max_ratio_and_a_verdict():
    ratio = ratio_of(0.1)
    assert (ratio.limit.upper, ratio.limit.why, ratio.underpowered) == (LIMITS.max_ratio, None, None)
    assert ratio.decision("point") == "pass"
    assert ratio_of(0.1, HonestEffect("x4.8", factor=4.8)).decision("point") == "fail"


def test_the_decision_rule_keeps_max_ratio_alone():
    ratio = ratio_of(0.005, limits=LIMITS.model_copy(update={"ratio_rule": "decision_rule"}))
    assert (ratio.limit.upper, ratio.underpowered) == (pytest.approx(LIMITS.max_ratio), None)


def test_a_limit_that_allows_the_ratio_to_detect_is_never_underpowered():
    lax = LIMITS.model_copy(update={"max_ratio": 1000.0})
    assert ratio_of(0.005, limits=lax).underpowered is None
