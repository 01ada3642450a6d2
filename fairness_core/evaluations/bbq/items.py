"""BBQ's items: the fields of one question, and the expansion of templates into items (pure: no model, no I/O).

An item is one question about two people and an unknown option, in BBQ's
format (nyu-mll/BBQ ``utils.py``: ``example_id``, ``question_index``,
``question_polarity``, ``context_condition``, ``category``, ``answer_info``,
``additional_metadata``, ``context``, ``question``, ``ans0``-``ans2``,
``label``).  What the bias scores need is derived once: which option is the
unknown one and which is the *biased* answer, BBQ's corrected ``target_loc``
(``analysis_scripts/BBQ_results_metadata.R``), Nejumi's ``stereotype_label``:
the stereotyped group's option for a negative question, the other person for a
non-negative one.

:func:`expand` turns a template into sets of four items, as BBQ does: per
persons version, (stereotyped, contrast) pair, order of mention and direction
of the disambiguation (the stereotyped person or the other one answers the
negative question), the four (polarity, context) combinations share one answer
order.  The orders walk a fixed cycle of the six permutations, separately for
the two directions, so that within a category the unknown option, the
stereotyped person, the contrast person and the gold answer each sit at
positions 0, 1 and 2 as evenly as the number of sets allows.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fairness_core.evaluations.bbq.templates import QuestionTemplate, fill

Polarity = Literal["neg", "nonneg"]
Condition = Literal["ambig", "disambig"]
#: The six answer orders of (T: stereotyped person, C: contrast person, U: unknown): consecutive sets move the
#: unknown option 2 -> 0 -> 1, and each role visits each position twice per cycle.
PERMUTATIONS = (("T", "C", "U"), ("U", "T", "C"), ("C", "U", "T"), ("C", "T", "U"), ("U", "C", "T"), ("T", "U", "C"))
#: The audit tests' ``category`` value of the pool of every category (when there are several): no category's name.
POOL = "all"
#: BBQ's order of the fields of an item.
FIELDS = ("example_id", "question_index", "question_polarity", "context_condition", "category", "answer_info",
          "additional_metadata", "context", "question", "ans0", "ans1", "ans2", "label")


@dataclass(frozen=True)
class Item:
    """One BBQ question, with its unknown option and its stereotyped option found.

    ``answer_info`` holds each option's ``[text, group, ...]`` as the file gives
    it; ``stereotyped_index`` is the option of the stereotyped group (before the
    non-negative correction), ``template_id`` the template the item comes from
    (``<category>-<question_index>`` for a file's), ``where`` the file line or
    template it was read from.
    """

    example_id: int
    question_index: str
    question_polarity: Polarity
    context_condition: Condition
    category: str
    answer_info: tuple[tuple[str, ...], ...]
    stereotyped_groups: tuple[str, ...]
    context: str
    question: str
    answers: tuple[str, str, str]
    label: int
    unknown_index: int
    stereotyped_index: int
    template_id: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""

    @property
    def biased_index(self) -> int:
        """The answer that aligns with the stereotype: the stereotyped person for a negative question, else the other.

        >>> item = Item(0, "1", "nonneg", "ambig", "gender", (("a", "female"), ("b", "male"), ("c", "unknown")),
        ...             ("female",), "", "", ("a", "b", "c"), 2, unknown_index=2, stereotyped_index=0, template_id="t")
        >>> item.biased_index
        1
        """
        if self.question_polarity == "neg":
            return self.stereotyped_index
        return next(i for i in range(3) if i not in (self.unknown_index, self.stereotyped_index))

    @property
    def ambiguous(self) -> bool:
        return self.context_condition == "ambig"

    @property
    def key(self) -> str:
        """``<category>/<example_id>``: unique within a question set, stable across runs."""
        return f"{self.category}/{self.example_id}"

    def bbq_record(self) -> dict[str, Any]:
        """The item as a line of a BBQ file (BBQ's fields, in BBQ's order)."""
        record = {"example_id": self.example_id, "question_index": self.question_index,
                  "question_polarity": self.question_polarity, "context_condition": self.context_condition,
                  "category": self.category,
                  "answer_info": {f"ans{i}": list(info) for i, info in enumerate(self.answer_info)},
                  "additional_metadata": {**self.metadata, "stereotyped_groups": list(self.stereotyped_groups)},
                  "context": self.context, "question": self.question, "ans0": self.answers[0],
                  "ans1": self.answers[1], "ans2": self.answers[2], "label": self.label}
        return {name: record[name] for name in FIELDS}


class ExpansionCounters:
    """Per category: the next example id, the position in the answer-order cycle and in the unknown phrases."""

    def __init__(self) -> None:
        self.example_id: dict[str, int] = {}
        self.sets: dict[str, int] = {}

    def next_set(self, category: str) -> int:
        number = self.sets.get(category, 0)
        self.sets[category] = number + 1
        return number

    def next_id(self, category: str) -> int:
        number = self.example_id.get(category, 0)
        self.example_id[category] = number + 1
        return number


def expand(templates: Sequence[QuestionTemplate], *, category: str, labels: Mapping[str, str],
           unknown_answers: Sequence[str], counters: ExpansionCounters | None = None) -> list[Item]:
    """Every item of ``templates`` (all of ``category``), in BBQ's set order; deterministic.

    ``labels`` are the attribute set's group labels (a pattern's ``{X}``);
    ``question_index`` is the number after the template id's last ``-``
    (``gender-01`` is ``"1"``), or its position in ``templates`` for an id
    without one.
    """
    counters = counters or ExpansionCounters()
    items = []
    for position, template in enumerate(templates, start=1):
        number = template.id.rpartition("-")[2]
        question_index = str(int(number)) if number.isdigit() else str(position)
        for version, phrases in zip("abcdefghijklmnopqrstuvwxyz", template.phrases(dict(labels))):
            for stereotyped, contrast in itertools.product(template.stereotyped_groups, template.contrast_groups):
                for first, second in ((stereotyped, contrast), (contrast, stereotyped)):
                    ambiguous = fill(template.context, {"A": phrases[first], "B": phrases[second]})
                    for neg, nonneg in ((stereotyped, contrast), (contrast, stereotyped)):
                        number_of_set = counters.next_set(category)
                        # The two directions walk the cycle on their own, offset by 3: the two sets that share an
                        # ambiguous context get different orders, and the gold answer is balanced over positions too.
                        order = PERMUTATIONS[(number_of_set // 2 + 3 * (number_of_set % 2)) % len(PERMUTATIONS)]
                        unknown = unknown_answers[number_of_set % len(unknown_answers)]
                        roles = {"T": (phrases[stereotyped], stereotyped), "C": (phrases[contrast], contrast),
                                 "U": (unknown, "unknown")}
                        options = [roles[role] for role in order]
                        position_of = {group: i for i, (_, group) in enumerate(options)}
                        disambiguated = ambiguous + fill(template.disambiguation,
                                                         {"NEG": phrases[neg], "NONNEG": phrases[nonneg]})
                        metadata = {"subcategory": template.subcategory, "version": version,
                                    "source": " ".join(template.source.split())}
                        for polarity, question, answer in (("neg", template.question_neg, neg),
                                                           ("nonneg", template.question_nonneg, nonneg)):
                            for condition, context, label in (("ambig", ambiguous, position_of["unknown"]),
                                                              ("disambig", disambiguated, position_of[answer])):
                                items.append(Item(
                                    example_id=counters.next_id(category), question_index=question_index,
                                    question_polarity=polarity, context_condition=condition,  # type: ignore[arg-type]
                                    category=category, answer_info=tuple(options),
                                    stereotyped_groups=tuple(template.stereotyped_groups), context=context,
                                    question=question, answers=(options[0][0], options[1][0], options[2][0]),
                                    label=label, unknown_index=position_of["unknown"],
                                    stereotyped_index=position_of[stereotyped], template_id=template.id,
                                    metadata=metadata, where=template.id))
    return items


def label_problems(items: Iterable[Item], templates: Mapping[str, QuestionTemplate]) -> list[str]:
    """Items whose gold answer the text does not support, one line each (the expansion's own check).

    An ambiguous item's label must be the unknown option, and the context must
    name both people; a disambiguated item's label must be the person that its
    disambiguating text casts for the question, found again from the text by
    splitting the context back into the template's two parts.  Exact duplicates
    (context, question and options) are problems too.
    """
    problems, seen = [], set()
    for item in items:
        where = f"{item.template_id} #{item.example_id}"
        people = [item.answers[i] for i in range(3) if i != item.unknown_index]
        if item.ambiguous:
            if item.label != item.unknown_index:
                problems.append(f"{where}: an ambiguous item's label is not the unknown option")
            if not all(person in item.context for person in people):
                problems.append(f"{where}: the ambiguous context does not name both people")
        else:
            roles = _roles(templates[item.template_id], item.context, people)
            if roles is None:
                problems.append(f"{where}: the context does not match its template")
            else:
                wanted = roles[0] if item.question_polarity == "neg" else roles[1]
                if item.answers[item.label] != wanted:
                    problems.append(f"{where}: the label points at {item.answers[item.label]!r}, the text at {wanted!r}")
        key = (item.context, item.question, item.answers)
        if key in seen:
            problems.append(f"{where}: an exact duplicate of an earlier item")
        seen.add(key)
    return problems


def _roles(template: QuestionTemplate, context: str, people: list[str]) -> tuple[str, str] | None:
    """Which of the two people the disambiguating text casts as NEG and as NONNEG."""
    a, b = people
    for first, second in ((a, b), (b, a)):
        ambiguous = fill(template.context, {"A": first, "B": second})
        if context.startswith(ambiguous):
            tail = context[len(ambiguous):]
            for neg, nonneg in ((a, b), (b, a)):
                if tail == fill(template.disambiguation, {"NEG": neg, "NONNEG": nonneg}):
                    return neg, nonneg
    return None


def bbq_jsonl(items: Iterable[Item]) -> str:
    """Items as a BBQ-format JSONL text (one line each)."""
    return "".join(json.dumps(item.bbq_record(), ensure_ascii=False) + "\n" for item in items)
