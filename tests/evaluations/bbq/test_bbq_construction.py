"""The BBQ evaluation is built in one step from its option values: ``--bbq-file`` and ``--bbq-scorer`` given to the
constructor give the file's questions, categories and prompts, with nothing to call afterwards."""

from __future__ import annotations

import pytest
from bbq_support import synthetic_rows, write_jsonl

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.bbq.evaluation import BbqEvaluation
from fairness_core.evaluations.bbq.files import QuestionFileError
from fairness_core.run.setup import AuditSetup, AuditSetupError

GENDER = load_attribute_set("gender")
CONFIG = load_thresholds(default_thresholds_path()).for_attribute_set("gender")


@pytest.fixture(scope="module")
def rows():
    return synthetic_rows(templates_per_category=4)


def test_a_bbq_file_given_to_the_constructor_gives_its_questions_and_prompts(tmp_path, rows):
    path = write_jsonl(tmp_path / "jbbq-like.jsonl", rows)
    evaluation = BbqEvaluation(CONFIG, GENDER, {"bbq_file": str(path), "bbq_scorer": "generated-choice"})
    categories = tuple(dict.fromkeys(row["category"] for row in rows))
    assert evaluation.groups == evaluation.questions.categories == categories
    assert evaluation.questions.source.startswith("--bbq-file")
    context = {(row["category"], str(row["example_id"])): row["context"] for row in rows}
    assert evaluation.prompts and {p.group for p in evaluation.prompts} == set(categories)
    assert all(context[p.group, p.term] in p.text for p in evaluation.prompts)
    assert evaluation.test_parameters() == {"category": [*categories, "all"]}


def test_the_same_file_under_the_likelihood_scorer_generates_nothing_and_without_it_the_templates_are_asked(
        tmp_path, rows):
    path = write_jsonl(tmp_path / "jbbq-like.jsonl", rows)
    by_likelihood = BbqEvaluation(CONFIG, GENDER, {"bbq_file": str(path)})
    assert (by_likelihood.scorer, by_likelihood.prompts) == ("likelihood", ())
    assert by_likelihood.groups == tuple(dict.fromkeys(row["category"] for row in rows))
    templates = BbqEvaluation(CONFIG, GENDER, {})
    assert templates.groups == ("gender",) and templates.questions.source.startswith("the project's reviewed templates")


def test_a_subset_without_a_file_is_one_usage_error_of_the_setup():
    with pytest.raises(QuestionFileError, match="--bbq-subset=nejumi takes its items from a --bbq-file"):
        BbqEvaluation(CONFIG, GENDER, {"bbq_subset": "nejumi"})
    with pytest.raises(AuditSetupError) as raised:
        AuditSetup.load(default_thresholds_path(), "gender", {"bbq_subset": "nejumi"})
    assert raised.value.problems == ["--bbq-subset=nejumi takes its items from a --bbq-file: give the JBBQ file too."]
