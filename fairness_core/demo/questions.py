"""The BBQ answers the question-answering demo models are trained on: who answers what, in every context.

``demo:qa`` and ``demo:qa-biased`` answer the project's gender questions
(:func:`~fairness_core.evaluations.bbq.questions.template_questions`, the items
an audit of the gender set asks) the way the likelihood scorer reads an answer:
the context and the question (:func:`~fairness_core.evaluations.bbq.prompts.likelihood_context`),
then the option.  Each item has one known answer (:func:`known_answer`):

* a disambiguated context: the right person (BBQ's ``label``);
* an ambiguous context: the option that says the answer is unknown, except
  in the *planted* templates of a category, where it is the answer that
  agrees with the stereotype (the stereotyped person for a negative question,
  the other person for a non-negative one).

The planted templates are chosen so that their ambiguous items are exactly
the planted share of the category's (:attr:`PlantedRates.stereotyped`).  A
model that gives these answers has ``bbq.bias_score_ambig`` equal to that share
(``(1 - accuracy) x (2 x 1 - 1)``) and every other bias score 0.  The bias is
planted per template, not per item: a small model tells templates apart by
their question, while an arbitrary half of one template's items, which differ
only in the order and spelling of the two people, it would have to memorise.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.api.user_files import load_attribute_set
from fairness_core.evaluations.bbq.items import Item
from fairness_core.evaluations.bbq.prompts import likelihood_context
from fairness_core.evaluations.bbq.questions import template_questions


@dataclass(frozen=True)
class AnswerExample:
    """One question as the likelihood scorer puts it, and the option the model is trained to prefer."""

    item: Item
    pick: int

    @property
    def context(self) -> str:
        return likelihood_context(self.item.context, self.item.question)

    @property
    def answer(self) -> str:
        return self.item.answers[self.pick]


@functools.cache
def demo_items(attribute_set: str) -> tuple[Item, ...]:
    """The questions an audit of ``attribute_set`` asks with the project's templates."""
    return template_questions(load_attribute_set(attribute_set), few_shots=0).items


def planted_templates(items: Sequence[Item], shares: dict[str, float]) -> frozenset[str]:
    """Templates whose ambiguous items are exactly ``shares[category]`` of their category's.

    Taken every other template in id order first, then the rest, each where it
    still fits; a share that no choice of whole templates gives exactly is an
    error (the planted rate would not be the one recorded).
    """
    ambiguous = Counter(item.template_id for item in items if item.ambiguous)
    category_of = {item.template_id: item.category for item in items}
    chosen: set[str] = set()
    for category, share in shares.items():
        ids = sorted(t for t in ambiguous if category_of[t] == category)
        target = share * sum(ambiguous[t] for t in ids)
        taken = 0
        for template in ids[::2] + ids[1::2]:
            if taken + ambiguous[template] <= target:
                chosen.add(template)
                taken += ambiguous[template]
        if taken != target:
            raise ValueError(f"No set of whole {category} templates holds {share} of its ambiguous questions "
                             f"({target:g} of {sum(ambiguous[t] for t in ids)}); the closest is {taken}.")
    return frozenset(chosen)


def known_answer(item: Item, planted: frozenset[str]) -> int:
    """The option a QA demo model picks for ``item``, given the planted templates."""
    if not item.ambiguous:
        return item.label
    return item.biased_index if item.template_id in planted else item.unknown_index


def answer_examples(attribute_set: str, stereotyped: dict[str, float]) -> list[AnswerExample]:
    """Every question of the set with its known answer."""
    items = demo_items(attribute_set)
    planted = planted_templates(items, stereotyped)
    return [AnswerExample(item, known_answer(item, planted)) for item in items]
