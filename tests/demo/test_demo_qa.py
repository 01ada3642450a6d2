"""The question-answering demo models: their known BBQ answers, and the audit that must find the planted one.

``demo:qa-biased`` answers the ambiguous questions of half the gender templates
with the stereotype (``PLANTED_RATES["qa-biased"].stereotyped``), ``demo:qa``
answers every ambiguous question "unknown"; both answer a disambiguated
question with the person its context names (:mod:`fairness_core.demo.questions`).
"""

from __future__ import annotations

import pytest
from audit_support import audit_demo

from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.demo.corpus import PLANTED_RATES
from fairness_core.demo.questions import answer_examples, demo_items, known_answer, planted_templates
from fairness_core.evaluations.bbq.scoring import by_likelihood
from fairness_core.run.demo_names import resolve_demo

QA_VARIANTS = ("qa", "qa-biased")
#: Disambiguated questions the small models answer right at the least (measured: see docs/bbq.md, "Demo models").
DISAMBIGUATED_FLOOR = 0.6


def test_planted_templates_hold_exactly_the_planted_share_of_ambiguous_questions():
    items = demo_items("gender")
    ambiguous = [item for item in items if item.ambiguous]
    planted = planted_templates(items, {"gender": 0.5})
    assert sum(item.template_id in planted for item in ambiguous) == len(ambiguous) / 2
    assert planted_templates(items, {"gender": 0.0}) == frozenset()
    with pytest.raises(ValueError, match="No set of whole gender templates holds 0.01 of its ambiguous questions"):
        planted_templates(items, {"gender": 0.01})


def test_known_answers_are_unknown_the_stereotype_or_the_right_person():
    planted = planted_templates(demo_items("gender"), {"gender": 0.5})
    for example in answer_examples("gender", {"gender": 0.5}):
        item = example.item
        if not item.ambiguous:
            assert example.pick == item.label != item.unknown_index
        elif item.template_id in planted:
            assert example.pick == item.biased_index != item.unknown_index
        else:
            assert example.pick == item.unknown_index == item.label
        assert known_answer(item, planted) == example.pick


@pytest.fixture(scope="module", params=QA_VARIANTS)
def scored(request):
    bias = request.param
    model, tokenizer = load_model(str(resolve_demo(f"demo:{bias}")), device="cpu")
    examples = answer_examples("gender", PLANTED_RATES[bias].stereotyped)
    answers = by_likelihood(HFBackend(model, tokenizer, seed=0, batch_size=64), [e.item for e in examples],
                            "per_character")
    return bias, examples, answers


def test_every_ambiguous_question_gets_its_known_answer(scored):
    bias, examples, answers = scored
    wrong = [(e.item.key, e.answer, a.item.answers[a.pick]) for e, a in zip(examples, answers.answers, strict=True)
             if e.item.ambiguous and a.pick != e.pick]
    assert not wrong, f"demo:{bias}: {len(wrong)} ambiguous questions answered otherwise than planted: {wrong[:5]}"


def test_disambiguated_questions_are_mostly_answered_right_and_never_unknown(scored):
    bias, examples, answers = scored
    disambiguated = [(e, a) for e, a in zip(examples, answers.answers, strict=True) if not e.item.ambiguous]
    right = sum(a.pick == e.pick for e, a in disambiguated) / len(disambiguated)
    assert right >= DISAMBIGUATED_FLOOR, f"demo:{bias}: {right:.3f} of disambiguated questions answered right"
    assert all(a.pick != e.item.unknown_index for e, a in disambiguated)


@pytest.mark.slow
def test_the_biased_qa_model_fails_the_ambiguous_bias_score_of_gender_at_its_planted_rate(pytester):
    result, metrics = audit_demo(pytester, "demo:qa-biased")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "Traceback" not in text, text[-3000:]
    result.stdout.fnmatch_lines(["AUDIT VIOLATION: bias_score_ambig", "  category gender"])
    assert "VIOLATION bbq.bias_score_ambig[category=gender]" in text
    failed = sorted(m for m, v in metrics.items() if v["decision"] == "fail")
    assert failed and all(m.startswith("bbq.") for m in failed), failed
    bias = metrics["bbq.bias_score_ambig[category=gender]"]
    planted = PLANTED_RATES["qa-biased"].stereotyped["gender"]
    assert bias["interval"][0] <= planted <= bias["interval"][1], bias


@pytest.mark.slow
def test_the_fair_qa_model_passes_every_audit(pytester):
    result, metrics = audit_demo(pytester, "demo:qa")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert metrics["bbq.bias_score_ambig[category=gender]"]["value"] == 0.0
    assert metrics["bbq.accuracy_ambig[category=gender]"]["value"] == 1.0
