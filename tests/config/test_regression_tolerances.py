"""``regression.tolerance``: keys bare or qualified by the evaluation, and a user's file merged with the package's.

Issue 42: every gated metric of BBQ, names and the refusal gaps has its own
tolerance in the package's file, and a thresholds file written before those
existed (a ``regression`` section listing only ``honest_ratio``, or none) takes
them tolerance by tolerance instead of ``default_tolerance`` in silence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fairness_core.api.generic_options import PROMPT_FORMAT
from fairness_core.api.user_files import load_thresholds, validate_config
from fairness_core.config.thresholds import RegressionConfig, ThresholdsError
from fairness_core.gates.certification import tolerance_of
from fairness_core.run.setup import AuditSetup

SHIPPED = Path(__file__).resolve().parents[2] / "fairness_core" / "data" / "thresholds.yaml"
#: The ``regression`` section as a user kept it from the release before issue 42's tolerances.
EARLIER_REGRESSION = {"alpha": 0.05, "undecided": "fail", "default_tolerance": 0.02,
                      "tolerance": {"honest_ratio": 0.25}}


def shipped() -> dict:
    return yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))


def write(folder: Path, raw: dict) -> Path:
    path = folder / "mine.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def package_tolerances() -> dict[str, float]:
    return shipped()["regression"]["tolerance"]


# --- tolerance_of: a qualified key, else the bare name, else the default -----------------------------------------

@pytest.mark.parametrize(("metric_id", "expected"), [
    ("names.refusal_gap", 0.06),                        # its own qualified key
    ("honest.refusal_gap", 0.03),                       # the bare key
    ("sentiment.refusal_gap", 0.03),
    ("bbq.accuracy_gap[category=gender]", 0.05),        # a parametrized id: its metric's name
    ("names.hurtful_gap", 0.01),                        # only another evaluation's qualified key: the default
    ("honest.honest_score[group=female]", 0.01),
])
def test_a_qualified_key_takes_precedence_over_the_bare_one(metric_id, expected):
    config = RegressionConfig(default_tolerance=0.01, tolerance={
        "refusal_gap": 0.03, "names.refusal_gap": 0.06, "accuracy_gap": 0.05, "bbq.hurtful_gap": 0.5})
    assert tolerance_of(metric_id, config) == expected


def test_the_thresholds_file_accepts_a_qualified_key_and_names_a_wrong_one(tmp_path):
    config = validate_config({**shipped(), "regression": {"tolerance": {"names.refusal_gap": 0.2}}})
    assert tolerance_of("names.refusal_gap", config.regression) == 0.2
    with pytest.raises(ThresholdsError) as found:
        validate_config({"regression": {"tolerance": {"names.honest_ratio": 0.2}}}, source="mine.yaml")
    message = str(found.value)
    assert message.startswith("The thresholds file 'mine.yaml' is invalid:\n  - regression.tolerance.names.honest_ratio")
    assert "'names.honest_ratio' names no metric." in message and "<evaluation>.<metric>" in message
    with pytest.raises(ThresholdsError, match=r"'refusal_gpa' names no metric\. Did you mean 'refusal_gap'\?"):
        validate_config({"regression": {"tolerance": {"refusal_gpa": 0.2}}})


# --- the package's tolerances, and a user's file merged with them -------------------------------------------------

def gated(prompt_format: str) -> dict[str, list[str]]:
    setup = AuditSetup.load(SHIPPED, "gender", {PROMPT_FORMAT.dest: prompt_format})
    return {name: evaluation.gated_metrics() for name, evaluation in setup.evaluations.items()}


def test_every_gated_bbq_names_and_refusal_metric_has_its_own_tolerance_in_the_package():
    keys = package_tolerances().keys()
    chat = gated("chat-instruction")
    judged = [*chat["bbq"], *chat["names"], *(m for m in chat["honest"] + chat["sentiment"] if "refusal_gap" in m)]
    assert "honest.refusal_gap" in judged and "names.occupation_share_gap" in judged
    name = {m: m.split(".", 1)[1].split("[", 1)[0] for m in judged}
    assert [m for m in judged if name[m] not in keys and f"{m.split('.')[0]}.{name[m]}" not in keys] == []


def test_an_earlier_regression_section_keeps_its_own_keys_and_takes_the_packages_new_tolerances(tmp_path):
    config = load_thresholds(write(tmp_path, {**shipped(), "regression": EARLIER_REGRESSION}))
    package = load_thresholds(SHIPPED).regression
    assert config.regression == package     # the earlier keys are the package's own values
    mine = {**EARLIER_REGRESSION, "default_tolerance": 0.3, "tolerance": {"honest_ratio": 0.5}}
    config = load_thresholds(write(tmp_path, {**shipped(), "regression": mine}))
    assert tolerance_of("honest.honest_ratio", config.regression) == 0.5                  # the user's key wins
    assert tolerance_of("honest.honest_score[group=female]", config.regression) == 0.3   # the user's default
    for metric in ("names.occupation_share_gap", "names.refusal_gap", "bbq.bias_score_ambig[category=gender]",
                   "honest.refusal_gap"):
        assert tolerance_of(metric, config.regression) == tolerance_of(metric, package), metric
    taken = [key for key in package_tolerances() if key != "honest_ratio"]
    compared = [m for metrics in gated("chat-instruction").values() for m in metrics]
    everything = ["honest", "bbq", "names", "sentiment"]
    assert config.limits_notes(everything, gated=compared) == [
        f"regression.tolerance: the package's for {', '.join(taken)}; your thresholds file does not set them"]
    assert config.limits_notes(everything) == []     # without a baseline no tolerance is used
    assert load_thresholds(SHIPPED).limits_notes(everything, gated=compared) == []


def test_a_file_without_a_regression_section_takes_the_packages():
    raw = shipped()
    del raw["regression"]
    config = validate_config(raw)
    assert config.regression == load_thresholds(SHIPPED).regression
    assert tolerance_of("honest.honest_ratio", config.regression) == 0.25   # was the model's 0.02 before issue 42


def test_a_users_bare_key_is_not_overridden_by_the_packages_qualified_one():
    raw = {**shipped(), "regression": {"tolerance": {"refusal_gap": 0.2}}}
    config = validate_config(raw).regression
    assert "names.refusal_gap" in package_tolerances()
    assert tolerance_of("names.refusal_gap", config) == tolerance_of("honest.refusal_gap", config) == 0.2
    # ... while the user's qualified key leaves the package's keys for the other evaluations.
    config = validate_config({**shipped(), "regression": {"tolerance": {"names.refusal_gap": 0.2}}}).regression
    assert tolerance_of("names.refusal_gap", config) == 0.2
    assert tolerance_of("honest.refusal_gap", config) == package_tolerances()["refusal_gap"]
    assert tolerance_of("sentiment.refusal_gap", config) == package_tolerances()["sentiment.refusal_gap"]


def test_the_note_names_only_the_tolerances_of_the_metrics_compared():
    raw = shipped()
    raw["regression"] = EARLIER_REGRESSION
    config = validate_config(raw)
    [line] = config.limits_notes(["bbq", "honest"], gated=gated("chat-instruction")["bbq"])
    assert "bias_score_ambig" in line and "refusal_gap" not in line and "occupation_share_gap" not in line
    completion = gated("completion")
    [line] = config.limits_notes(list(completion), gated=[m for metrics in completion.values() for m in metrics])
    assert "refusal_gap" not in line and "names.occupation_share_gap" in line   # no refusal gap under completion


# --- what is gated: the refusal gap only where refusals are read -------------------------------------------------

@pytest.mark.parametrize("prompt_format", ["chat-instruction", "chat-prefill"])
def test_the_refusal_gap_is_gated_under_a_chat_format(prompt_format):
    found = gated(prompt_format)
    assert "honest.refusal_gap" in found["honest"] and "sentiment.refusal_gap" in found["sentiment"]
    assert "names.refusal_gap" in found["names"]


def test_the_refusal_gap_is_not_gated_under_completion():
    found = gated("completion")
    assert not [m for metrics in found.values() for m in metrics if "refusal" in m]
    assert found["names"] == ["names.occupation_share_gap", "names.sentiment_gap", "names.hurtful_gap",
                              "names.length_ratio"]


# --- how each gated metric's change is measured (MetricSpec) ------------------------------------------------------

def test_each_gated_metric_is_compared_in_the_right_direction():
    """A ratio by ``|log ratio|`` (1.25 as bad as 0.8), a signed gap or bias score by ``|value|``, a refusal gap of
    highest minus lowest (never negative) by its value; a value outside the metric's range is refused in a baseline."""
    setup = AuditSetup.load(SHIPPED, "gender", {PROMPT_FORMAT.dest: "chat-instruction"})
    seen = set()
    for name, evaluation in setup.evaluations.items():
        for metric_id in evaluation.gated_metrics():
            metric = metric_id.split(".", 1)[1].split("[", 1)[0]
            spec = type(evaluation).metric_spec(metric)
            seen.add(f"{name}.{metric}")
            if metric.endswith("_ratio"):
                assert spec.badness(1.25) == pytest.approx(spec.badness(0.8))
                assert spec.badness(0.8) > spec.badness(1.1) > spec.badness(1.0) == 0.0
                assert spec.value_problem(0.0) is not None
            elif name in ("names", "bbq"):
                assert spec.badness(-0.3) == spec.badness(0.3) > spec.badness(0.1) > spec.badness(0.0) == 0.0
                assert spec.value_problem(-1.5) is not None and spec.value_problem(1.5) is not None
            elif metric == "refusal_gap":
                assert spec.badness(0.3) > spec.badness(0.1) > spec.badness(0.0)
                assert spec.value_problem(-0.1) is not None and spec.value_problem(1.5) is not None
    assert {"names.length_ratio", "names.occupation_share_gap", "bbq.bias_score_ambig", "bbq.accuracy_gap",
            "honest.refusal_gap", "sentiment.refusal_gap", "honest.honest_ratio"} <= seen
