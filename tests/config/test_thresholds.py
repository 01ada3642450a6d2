"""``thresholds.yaml`` validation: every mistake is one ThresholdsError naming where and what."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.user_files import load_thresholds, threshold_sections
from fairness_core.config.thresholds import (
    AuditConfig,
    Rate,
    SamplingProtocol,
    ThresholdsError,
    attribute_set_problems,
    validate_thresholds,
    with_missing_sections,
)
from fairness_core.config.validation import StrictModel
from fairness_core.evaluations.honest.config import HonestConfig, group_problems

REPO_THRESHOLDS = Path(__file__).resolve().parents[2] / "thresholds.yaml"


def repo_thresholds() -> dict:
    """The repository's thresholds.yaml as a plain mapping, to be varied one key at a time."""
    return yaml.safe_load(REPO_THRESHOLDS.read_text(encoding="utf-8"))


def tiny_thresholds() -> dict:
    """The repository's file with a small HONEST section whose optional keys are left out."""
    raw = repo_thresholds()
    raw["honest"] = {
        "protocol": {"num_samples": 2, "max_new_tokens": 4},
        "max_honest_score": {"female": 0.1, "male": 0.1},
        "max_template_score": 0.25,
        "max_ratio": 2.0,
    }
    return raw


def write(tmp_path: Path, content: dict | str) -> Path:
    path = tmp_path / "thresholds.yaml"
    text = content if isinstance(content, str) else yaml.safe_dump(content, allow_unicode=True, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def invalid(tmp_path: Path, content: dict | str) -> str:
    """The message of the ThresholdsError raised for ``content``."""
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(write(tmp_path, content))
    return str(err.value)


def test_repo_thresholds_validate():
    config = load_thresholds(REPO_THRESHOLDS)
    assert isinstance(config, AuditConfig)
    assert config.honest.protocol == SamplingProtocol()  # the HONEST reference protocol
    assert set(config.honest.max_honest_score) == {"female", "male"}


def test_optional_keys_take_their_defaults(tmp_path):
    config = load_thresholds(write(tmp_path, tiny_thresholds()))
    assert config.honest.protocol == SamplingProtocol(num_samples=2, max_new_tokens=4)
    assert config.honest.lexicon_level == "conservative"
    assert config.honest.min_hits_for_ratio == 10
    assert config.honest.max_category_score == {}


def test_config_is_frozen(tmp_path):
    config = load_thresholds(write(tmp_path, tiny_thresholds()))
    with pytest.raises(ValidationError, match="frozen"):
        config.honest.max_ratio = 3.0  # type: ignore[misc]


def test_misspelled_nested_key_names_the_dotted_key_and_the_allowed_keys(tmp_path):
    raw = tiny_thresholds()
    raw["honest"]["protocol"] = {"num_sampels": 2, "max_new_tokens": 4}
    path = write(tmp_path, raw)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(path)
    assert str(err.value) == (
        f"The thresholds file {str(path)!r} is invalid:\n"
        "  - honest.protocol.num_sampels: unknown key 'num_sampels'; allowed keys here: "
        "num_samples, max_new_tokens, do_sample, top_k, top_p, temperature, chat. Did you mean 'num_samples'?"
    )


def test_misspelled_key_in_honest_lists_the_honest_keys(tmp_path):
    raw = tiny_thresholds()
    raw["honest"]["max_ratoi"] = 3.0
    message = invalid(tmp_path, raw)
    allowed = ", ".join(HonestConfig.model_fields)
    assert f"  - honest.max_ratoi: unknown key 'max_ratoi'; allowed keys here: {allowed}. Did you mean 'max_ratio'?" \
        in message.splitlines()
    assert "max_ratio" in allowed and "max_template_score" in allowed


def test_misspelled_top_level_key(tmp_path):
    """The misspelled section is the one problem: the section it was meant to be is the package's meanwhile."""
    raw = tiny_thresholds()
    raw["honset"] = raw.pop("honest")
    path = write(tmp_path, raw)
    allowed = ", ".join(type(load_thresholds(REPO_THRESHOLDS)).model_fields)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(path)
    assert str(err.value) == (f"The thresholds file {str(path)!r} is invalid:\n"
                              f"  - honset: unknown key 'honset'; allowed keys here: {allowed}. Did you mean 'honest'?")


def test_wrong_type_names_the_field_and_the_value(tmp_path):
    raw = tiny_thresholds()
    raw["honest"]["protocol"]["max_new_tokens"] = "many"
    with pytest.raises(ThresholdsError, match=r"\n  - honest\.protocol\.max_new_tokens: Input should be a valid "
                                              r"integer.* \(got 'many'\)$"):
        load_thresholds(write(tmp_path, raw))


@pytest.mark.parametrize(
    ("location", "value"),
    [
        ("honest.max_template_score", 1.5),
        ("honest.max_ratio", 0.5),
        ("honest.max_ratio", "two"),
        ("honest.protocol.num_samples", 0),
        ("honest.protocol.top_p", 0),
        ("honest.protocol.top_p", 1.5),
        ("honest.protocol.temperature", 0),
        ("honest.protocol.top_k", -1),
        ("honest.protocol.do_sample", "sometimes"),
        ("honest.max_honest_score.male", -0.1),
        ("honest.lexicon_level", "strict"),
        ("honest.min_hits_for_ratio", -1),
    ],
)
def test_out_of_range_or_wrong_value_names_the_field(tmp_path, location, value):
    raw = tiny_thresholds()
    *parents, key = location.split(".")
    node = raw
    for part in parents:
        node = node[part]
    node[key] = value
    message = invalid(tmp_path, raw)
    problems = message.splitlines()[1:]
    assert len(problems) == 1, message
    assert problems[0].startswith(f"  - {location}: ")
    assert problems[0].endswith(f"(got {value!r})")


@pytest.mark.parametrize(
    ("mapping", "location"),
    [
        ({"max_category_score": {"xyz": 0.1}}, "honest.max_category_score.xyz"),
    ],
)
def test_unknown_category_or_attribute_names_it(tmp_path, mapping, location):
    raw = tiny_thresholds()
    raw["honest"].update(mapping)
    assert f"\n  - {location}" in invalid(tmp_path, raw)


def test_every_problem_is_reported_at_once(tmp_path):
    raw = tiny_thresholds()
    raw["honest"]["protocol"] = {"num_sampels": 2}
    raw["honest"]["max_ratio"] = "x"
    problems = invalid(tmp_path, raw).splitlines()[1:]
    assert [line.split(":")[0] for line in problems] == ["  - honest.protocol.num_sampels", "  - honest.max_ratio"]


def test_missing_required_key(tmp_path):
    raw = tiny_thresholds()
    del raw["honest"]["max_ratio"]
    assert "\n  - honest.max_ratio: Field required" in invalid(tmp_path, raw)


def test_max_honest_score_is_checked_against_the_attribute_sets_groups(tmp_path):
    """A limit for one group only would leave the other's audit test without a threshold (a KeyError)."""
    raw = tiny_thresholds()
    raw["honest"]["max_honest_score"] = {"female": 0.1, "other": 0.1}
    config = load_thresholds(write(tmp_path, raw))
    assert group_problems(config.honest, ("female", "male"), where="here") == [
        "here: honest.max_honest_score has no limit for the group(s) ['male']; give one per group: female, male. "
        "For your own attribute set, write them in your own thresholds file (a copy of the shipped one) and pass "
        "--thresholds=my-thresholds.yaml, with: attributes: {<set>: {honest: {max_honest_score: "
        "{female: 0.10, male: 0.10}}}}",
        "here: honest.max_honest_score names unknown group(s) ['other']; the groups are female, male"]


@pytest.mark.parametrize(("text", "shown"), [("", "None"), ("# only a comment\n", "None"),
                                            ("- a\n- list\n", "a list of 2 items"), ("just a string\n", "'just a string'")])
def test_not_a_mapping(tmp_path, text, shown):
    assert invalid(tmp_path, text).endswith(
        f"is invalid:\n  - (top level): Input should be a valid dictionary or instance of AuditConfig (got {shown})")


def test_invalid_yaml(tmp_path):
    path = write(tmp_path, "honest:\n  protocol: [unclosed\n")
    with pytest.raises(ThresholdsError, match=rf"^The thresholds file {re.escape(repr(str(path)))} is not valid YAML: "):
        load_thresholds(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ThresholdsError, match=rf"^Cannot read the thresholds file {re.escape(repr(str(path)))}: "
                                              r"No such file or directory\.$"):
        load_thresholds(path)


def test_a_directory_is_not_a_thresholds_file(tmp_path):
    with pytest.raises(ThresholdsError, match=r"^Cannot read the thresholds file .*: it is a folder; give the path of a YAML file\.$"):
        load_thresholds(tmp_path)


def test_protocol_defaults_are_the_honest_reference():
    assert SamplingProtocol().model_dump() == {
        "num_samples": 20, "max_new_tokens": 10, "do_sample": True, "top_k": 50, "top_p": 1.0, "temperature": 1.0,
        "chat": {"framing": "continue-v1", "max_new_tokens": {"chat-prefill": 10, "chat-instruction": 30},
                 "refusal_window": 60},
    }


def test_an_attribute_set_overrides_only_the_limits_it_names(tmp_path):
    raw = yaml.safe_load(REPO_THRESHOLDS.read_text(encoding="utf-8"))
    raw["attributes"] = {"nationality": {"honest": {"max_ratio": 2.5, "max_honest_score": {"japanese": 0.2}},
                                         "sentiment": {"max_mean_gap": 0.2}}}
    config = load_thresholds(write(tmp_path, yaml.safe_dump(raw, allow_unicode=True)))
    nationality = config.for_attribute_set("nationality")
    assert (nationality.honest.max_ratio, nationality.honest.max_honest_score["japanese"], nationality.sentiment.max_mean_gap) \
        == (2.5, 0.2, 0.2)
    assert nationality.honest.protocol == config.honest.protocol
    assert nationality.sentiment.max_group_distance == config.sentiment.max_group_distance
    assert config.for_attribute_set("gender") == config


@pytest.mark.parametrize(("override", "message"), [
    ({"honest": {"max_ratoi": 2}}, r"attributes\.nationality\.honest\.max_ratoi: unknown key 'max_ratoi'; "
                                   r"allowed keys here: protocol, .*max_ratio"),
    ({"honesty": {}}, rf"attributes\.nationality\.honesty: unknown key 'honesty'; allowed keys here: "
                      rf"{', '.join(EVALUATIONS)}"),
    ({"honest": {"max_ratio": 0.5}}, r"attributes\.nationality\.honest\.max_ratio: .*greater than or equal to 1"),
])
def test_a_bad_attribute_set_override_names_its_dotted_key(tmp_path, override, message):
    raw = yaml.safe_load(REPO_THRESHOLDS.read_text(encoding="utf-8"))
    raw["attributes"] = {"nationality": override}
    with pytest.raises(ThresholdsError, match=message):
        load_thresholds(write(tmp_path, yaml.safe_dump(raw, allow_unicode=True)))


@pytest.mark.parametrize(("key", "known", "problem"), [
    ("occupaton", ["gender", "occupation"], "Did you mean 'occupation'?"),
    ("regoin", ["gender", "region"], "Did you mean 'region'?"),
    ("gender*nationalty", ["gender", "nationality"], "Did you mean 'nationality'?"),
    ("region", ["gender", "nationality", "occupation"], None),  # a user's other set, not in this run
    ("gender*nationality", ["gender", "nationality"], None),
])
def test_a_key_under_attributes_is_an_error_only_when_it_misspells_a_known_set(tmp_path, key, known, problem):
    raw = repo_thresholds()
    raw["attributes"] = {key: {"honest": {"max_ratio": 2.5}}}
    problems = attribute_set_problems(load_thresholds(write(tmp_path, raw)), known, where="my.yaml")
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and f"attributes.{key} names no attribute set. {problem}" in problems[0], problems


# --- a file without an evaluation's section (issue 39: a new evaluation never breaks a user's files) -------------

SHIPPED = Path(__file__).resolve().parents[2] / "fairness_core" / "data" / "thresholds.yaml"


def previous_release() -> dict:
    """A thresholds file written before BBQ existed: the shipped file without its ``bbq`` section."""
    raw = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))
    del raw["bbq"]
    return raw


def test_a_file_without_a_section_takes_the_packages_and_says_so(tmp_path):
    config = load_thresholds(write(tmp_path, previous_release()))
    shipped = load_thresholds(SHIPPED)
    assert config.bbq == shipped.bbq
    assert (config.honest, config.sentiment) == (shipped.honest, shipped.sentiment)
    assert [config.limits_source(name) for name in ("honest", "sentiment", "bbq")] == ["file", "file", "package"]
    assert config.limits_notes(["honest", "sentiment", "bbq"]) == [
        "bbq: the package's limits; your thresholds file has no bbq section"]
    assert config.for_attribute_set("nationality").limits_source("bbq") == "package"
    assert shipped.limits_notes(list(shipped.sections)) == []


def test_an_attribute_sets_override_applies_on_top_of_the_packages_section(tmp_path):
    raw = previous_release()
    raw["attributes"]["nationality"]["bbq"] = {"max_accuracy_gap": 0.2}
    config = load_thresholds(write(tmp_path, raw))
    nationality = config.for_attribute_set("nationality")
    assert nationality.bbq.max_accuracy_gap == 0.2
    assert nationality.bbq.model_dump(exclude={"max_accuracy_gap"}) == config.bbq.model_dump(exclude={"max_accuracy_gap"})
    assert config.bbq.max_accuracy_gap == load_thresholds(SHIPPED).bbq.max_accuracy_gap


def test_the_packages_overrides_of_a_missing_section_come_with_it():
    package = {"bbq": {"few_shots": 2}, "attributes": {"nationality": {"bbq": {"few_shots": 3}, "honest": {"x": 1}},
                                                       "occupation": {"bbq": {"few_shots": 4}}}}
    user = {"honest": {}, "attributes": {"occupation": {"bbq": {"few_shots": 5}}}}
    filled, taken = with_missing_sections(user, ["honest", "bbq"], package)
    assert taken == {"bbq": "package"}
    assert filled["attributes"] == {"occupation": {"bbq": {"few_shots": 5}}, "nationality": {"bbq": {"few_shots": 3}}}
    assert user == {"honest": {}, "attributes": {"occupation": {"bbq": {"few_shots": 5}}}}, "the user's mapping is kept"


class _DefaultsOnly(StrictModel):
    protocol: SamplingProtocol = SamplingProtocol(num_samples=2)
    max_share: Rate = 0.5


class _NeedsValues(StrictModel):
    protocol: SamplingProtocol = SamplingProtocol(num_samples=2)
    max_share: Rate
    max_gap: Rate


def _with(name: str, model: type) -> Any:
    return (*threshold_sections(), (name, model, ("share",)))


def test_a_third_party_section_absent_from_both_files_is_its_models_defaults():
    config = validate_thresholds(previous_release(), sections=_with("extra", _DefaultsOnly), source="mine.yaml")
    assert config.section("extra") == _DefaultsOnly()
    assert config.limits_notes(["extra", "bbq"]) == [
        "extra: the defaults of its own section model; the thresholds file has no extra section, nor has the package's",
        "bbq: the package's limits; your thresholds file has no bbq section"]


def test_a_third_party_section_without_defaults_is_one_usage_error_saying_to_add_it():
    raw = previous_release()
    raw["honest"]["max_ratio"] = "two"
    with pytest.raises(ThresholdsError) as err:
        validate_thresholds(raw, sections=_with("extra", _NeedsValues), source="mine.yaml")
    assert str(err.value) == (
        "The thresholds file 'mine.yaml' is invalid:\n"
        "  - extra: there is no extra section here nor in the package's thresholds file, and the extra evaluation has "
        "no default for max_share, max_gap: add a section named extra that sets them\n"
        "  - honest.max_ratio: Input should be a valid number (got 'two')")


def test_a_misspelled_section_is_one_problem_with_the_closest_name(tmp_path):
    raw = previous_release()
    raw["bqq"] = {"few_shots": 2}
    path = write(tmp_path, raw)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(path)
    allowed = f"decision_rule, underpowered, regression, attributes, {', '.join(EVALUATIONS)}"
    assert str(err.value) == (f"The thresholds file {str(path)!r} is invalid:\n"
                              f"  - bqq: unknown key 'bqq'; allowed keys here: {allowed}. Did you mean 'bbq'?")


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda r: r["honest"]["protocol"]["chat"]["max_new_tokens"].update({"chat-prefill": "many"}),
     "honest.protocol.chat.max_new_tokens.chat-prefill: Input should be a valid integer (got 'many')"),
    (lambda r: r["honest"].update(max_ratio={"female": 1.5, "male": "ゆるい上限"}),
     "honest.max_ratio: Input should be a valid number (got a mapping of 2 keys)"),
    (lambda r: r["sentiment"].update(max_mean_gap=["0.15", "0.2"]),
     "sentiment.max_mean_gap: Input should be a valid number (got a list of 2 items)"),
    (lambda r: r.update(decision_rule="confident " * 20),
     "decision_rule: Input should be 'point', 'confident' or 'strict' (got 'confident confident confident confident …' "
     "(200 characters))"),
    (lambda r: r["attributes"]["nationality"]["sentiment"].update(protocol=["x"] * 3),
     "attributes.nationality.sentiment.protocol: Input should be a valid dictionary or instance of SamplingProtocol "
     "(got a list of 3 items)"),
])
def test_a_bad_value_deep_in_a_section_names_file_and_key_and_never_the_files_content(tmp_path, edit, problem):
    raw = previous_release()
    edit(raw)
    path = write(tmp_path, raw)
    message = invalid(tmp_path, raw)
    assert message == f"The thresholds file {str(path)!r} is invalid:\n  - {problem}"
    for other in ("continue-v1", "conservative", "noise_floor", "ゆるい", "0.15", "0.2"):
        assert other not in message
