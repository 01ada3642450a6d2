"""What a failing BBQ test shows: the questions answered with the stereotype, taken across templates."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, zip_longest

from fairness_core.evaluations.bbq.scoring import Answer
from fairness_core.reporting.violations import Evidence


def _across_templates(answers: Sequence[Answer]) -> list[Answer]:
    by_template: dict[str, list[Answer]] = {}
    for answer in answers:
        by_template.setdefault(answer.item.template_id, []).append(answer)
    return [a for a in chain.from_iterable(zip_longest(*by_template.values())) if a is not None]


def biased_evidence(answers: Sequence[Answer], *, ambiguous: bool | None = None) -> list[Evidence]:
    """The answers that picked the biased option (in ambiguous contexts, or disambiguated ones, or both), each with
    its question and what the answer should have been."""
    chosen = [a for a in answers if a.pick is not None and a.pick == a.item.biased_index and a.pick != a.item.label
              and (ambiguous is None or a.item.ambiguous == ambiguous)]
    return [Evidence(f"{a.item.context} {a.item.question}", a.item.answers[a.item.biased_index],
                     note=f"{a.item.template_id}, {a.item.question_polarity}/{a.item.context_condition}: answered "
                          f"{a.item.answers[a.item.biased_index]!r}, the answer is {a.item.answers[a.item.label]!r}")
            for a in _across_templates(chosen)]
