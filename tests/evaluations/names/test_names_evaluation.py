"""What the names evaluation asks, of which attribute sets, in which prompt formats.

Every task with every name of every group (the built-in sets' names or a
set's own ``names:`` section); a chat request as the user's turn, a base model's
as a plain-text dialogue; chat-prefill and sets without names not judged, each
with its reason.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fairness_core.api.user_files import load_attribute_set, load_thresholds, parse_attribute_set
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.names.evaluation import DIALOGUE, NamesEvaluation
from fairness_core.evaluations.names.tasks import builtin_tasks
from fairness_core.run.setup import AuditSetupError

CONFIG = load_thresholds(default_thresholds_path())
REGION = """\
name: region
groups: {kanto: 関東の人, kansai: 関西の人}
names:
  surname: 山田
  people: {kanto: [翔太, 美咲], kansai: [大輔, 彩, 結衣]}
"""


def names_of(attributes, prompt_format="chat-instruction") -> NamesEvaluation:
    return NamesEvaluation(CONFIG.for_attribute_set(attributes.name), attributes, {"prompt_format": prompt_format})


def test_the_tasks_cover_seven_domains_with_a_slot_each():
    tasks = builtin_tasks()
    domains = {task.domain for task in tasks}
    assert len(tasks) >= 30 and len(domains) >= 6
    assert all(sum(t.domain == d for t in tasks) >= 5 for d in domains)
    assert all(task.text.count("[NAME]") == 1 for task in tasks)


def test_gender_asks_every_task_with_every_given_name_under_one_surname():
    evaluation = names_of(load_attribute_set("gender"))
    people = evaluation.people
    assert set(people) == {"female", "male"} and len(people["female"]) == len(people["male"]) >= 10
    assert all(name.startswith("佐藤") for names in people.values() for name in names)
    assert len(evaluation.prompts) == len(builtin_tasks()) * sum(map(len, people.values()))
    first = evaluation.prompts[0]
    assert first.text == builtin_tasks()[0].ask(first.term) and first.template_id == builtin_tasks()[0].id


def test_nationality_asks_full_names_of_eight_groups():
    attributes = load_attribute_set("nationality")
    evaluation = names_of(attributes)
    assert evaluation.groups == attributes.groups and len(evaluation.groups) == 8
    assert all(len(names) >= 6 for names in evaluation.people.values())
    everyone = [name for names in evaluation.people.values() for name in names]
    assert len(set(everyone)) == len(everyone)


def test_a_users_set_brings_its_own_names():
    evaluation = names_of(parse_attribute_set(REGION, source="region.yaml"))
    assert evaluation.people == {"kanto": ("山田翔太", "山田美咲"), "kansai": ("山田大輔", "山田彩", "山田結衣")}


def test_a_set_without_names_is_not_judged_and_says_how_to_give_them():
    occupation = load_attribute_set("occupation")
    assert not NamesEvaluation.supports(occupation)
    assert "give the set a names: section" in NamesEvaluation.why_unsupported(occupation)
    assert not NamesEvaluation.supports(load_attribute_set("gender*nationality"))


def test_a_base_model_is_asked_the_dialogue_and_chat_prefill_is_not_judged():
    gender = load_attribute_set("gender")
    base = names_of(gender, "completion")
    request = builtin_tasks()[0].ask(base.prompts[0].term)
    assert base.prompts[0].text == DIALOGUE.format(request=request) == f"ユーザー: {request}\nアシスタント: "
    options = SimpleNamespace(value=lambda name: {"prompt_format": "chat-prefill"}.get(name))
    assert "chat-instruction" in names_of(gender, "chat-prefill").cannot_run(options)
    options = SimpleNamespace(value=lambda name: {"prompt_format": "chat-instruction"}.get(name))
    assert names_of(gender).cannot_run(options) is None


@pytest.mark.parametrize(("section", "message"), [
    ("names:\n  people: {kanto: [翔太]}\n", "no names for group 'kansai'"),
    ("names:\n  people: {kanto: [翔太], kansai: [翔太]}\n", "duplicate term '翔太'"),
    ("names:\n  people: {kanto: [翔太], kansai: []}\n", "an empty list"),
])
def test_a_malformed_names_section_is_one_usage_error_naming_the_key(section, message):
    text = REGION[:REGION.index("names:")] + section
    with pytest.raises(Exception, match=message) as raised:
        parse_attribute_set(text, source="region.yaml")
    assert not isinstance(raised.value, AuditSetupError) and "names.people" in str(raised.value)
