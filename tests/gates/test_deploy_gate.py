"""The gate's measured operating characteristics: the simulation's stand-ins, the plan command and the gate line.

The simulators' cheap results classes must count exactly as the classes they
extend, or the simulated false-alarm rates would describe another audit.
"""

from __future__ import annotations

import numpy as np

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.cli import main
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.honest.power import RatioDesign
from fairness_core.evaluations.honest.scoring import HonestCompletions
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestSimulator, HonestWorld
from fairness_core.evaluations.sentiment.scoring import SentimentCompletions
from fairness_core.evaluations.sentiment.section import sentiment_prompts
from fairness_core.evaluations.sentiment.simulation import SentimentEffect, SentimentSimulator, SentimentWorld
from fairness_core.gates.deploy import fingerprint, gate_line

CONFIG = load_thresholds(default_thresholds_path())


def test_counted_honest_results_count_as_honest_results_do():
    gender = load_attribute_set("gender")
    simulator = HonestSimulator(honest_prompts(gender), gender.groups, samples=4)
    rng = np.random.default_rng(0)
    world = HonestWorld(0.1, 1.0)
    counted = simulator.sample(simulator.draw_model(world, HonestEffect("x3", factor=3.0), "female", rng), world, rng)
    plain = HonestCompletions(counted.rows, counted.groups)
    cells = [dict(group=g, template_id=t, category=c) for g in (None, *gender.groups)
             for t in (None, *list(counted.template_index)[:3]) for c in (None, "pr", "asf", "other", "unlisted")]
    assert [counted.count(**cell) for cell in cells] == [plain.count(**cell) for cell in cells]
    assert counted.count(group="female").rate > counted.count(group="male").rate


def test_indexed_sentiment_results_select_as_sentiment_results_do():
    nationality = load_attribute_set("nationality")
    simulator = SentimentSimulator(sentiment_prompts(nationality), nationality.groups, samples=2)
    rng = np.random.default_rng(0)
    world = SentimentWorld(scorer="classifier")
    indexed = simulator.sample(simulator.draw_model(world, SentimentEffect("gap", gap=0.2), "japanese", rng), world, rng)
    plain = SentimentCompletions(indexed.rows, indexed.groups)
    template = indexed.rows[0].prompt.template_id
    for group in (None, "japanese", "korean"):
        for template_id in (None, template):
            assert indexed.select(group=group, template_id=template_id) == \
                plain.select(group=group, template_id=template_id)
    means = indexed.means()
    assert means["japanese"] < min(m for g, m in means.items() if g != "japanese")


def test_the_shipped_thresholds_get_their_measured_gate_line():
    line = gate_line(CONFIG, "gender")
    assert line.startswith("gate: <= 5% false alarms for a fair model (simulated ")
    assert "with 90% power" in line


def test_changed_thresholds_are_not_described_by_the_shipped_figures():
    looser = CONFIG.model_copy(update={"honest": CONFIG.honest.model_copy(update={"max_ratio": 3.0})})
    assert fingerprint(looser, "gender") != fingerprint(CONFIG, "gender")
    assert gate_line(looser, "gender").startswith("gate: operating characteristics not measured for these thresholds")


def _gender_design(ratio: float) -> RatioDesign:
    return RatioDesign(groups=2, prompts_per_group=960, terms_per_group=30, max_ratio=1.6, alpha=0.02, ratio=ratio,
                       target=0.9)


def test_more_samples_are_needed_for_smaller_ratios():
    needed = [_gender_design(r).samples_needed(0.3, 0.02) for r in (3.0, 2.0, 1.8)]
    assert needed[0] < needed[1] < needed[2]
    assert _gender_design(1.5).samples_needed(0.3, 0.02) == float("inf")


def test_plan_command_prints_the_table_offline(capsys):
    assert main(["plan", "--attributes=nationality", "--ratio=2"]) == 0
    out = capsys.readouterr().out
    assert "honest: 2400 prompts x 20 samples; HONEST ratio within [1/1.8, 1.8]" in out
    assert "samples per prompt for 90% power at an HONEST ratio of 2: " in out
    assert "gate: " in out


def test_plan_with_an_unknown_attribute_set_is_one_usage_error(capsys):
    assert main(["plan", "--attributes=natonality"]) == 4
    assert "Unknown attribute set 'natonality'" in capsys.readouterr().err
