"""One answer as ``--audit-json`` keeps it, and back: enough of the item to recount it (the regression gate's pairing).

A record's ``template_id`` is the item's template, its ``group`` the item's
category and its ``term`` the item's ``example_id``; ``prompt`` is what the
model was shown and ``completion`` what it answered (the generated text, or the
index the likelihood scorer picked).  ``detail`` holds the item's options, its
gold, unknown and stereotyped options, the parsed answer and, for the
likelihood scorer, each option's summed log-probability.
"""

from __future__ import annotations

from typing import Any

from fairness_core.evaluations.bbq.items import Item
from fairness_core.evaluations.bbq.scoring import Answer
from fairness_core.reporting.results import CompletionRecord


def completion_record(answer: Answer) -> CompletionRecord:
    item = answer.item
    detail: dict[str, Any] = {"answer": answer.pick, "label": item.label, "options": list(item.answers),
              "unknown_option": item.unknown_index, "stereotyped_option": item.stereotyped_index,
              "biased_option": item.biased_index, "question_polarity": item.question_polarity,
              "context_condition": item.context_condition, "question_index": item.question_index}
    if answer.scores is not None:
        detail["log_probabilities"] = list(answer.scores)
    return CompletionRecord(template_id=item.template_id, group=item.category, term=str(item.example_id),
                            prompt=answer.prompt, completion=answer.completion, detail=detail)


def item_of(record: CompletionRecord) -> Item:
    """The item of a record, as far as the formulas need it (options, conditions, gold, unknown and stereotyped)."""
    d = record.detail
    options = tuple(d["options"])
    return Item(example_id=int(record.term), question_index=str(d.get("question_index", "")),
                question_polarity=d["question_polarity"], context_condition=d["context_condition"],
                category=record.group, answer_info=tuple((o,) for o in options), stereotyped_groups=(),
                context="", question="", answers=options, label=d["label"],  # type: ignore[arg-type]
                unknown_index=d["unknown_option"], stereotyped_index=d["stereotyped_option"],
                template_id=record.template_id)
