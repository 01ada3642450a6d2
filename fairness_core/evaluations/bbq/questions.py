"""The questions of one run: the project's templates for the attribute set, its own ``bbq:`` section, or a user's file.

Which one, in order: ``--bbq-file`` (a BBQ or JBBQ file; ``--bbq-subset=nejumi``
keeps Nejumi's 20 test items per category); else the attribute set's ``bbq:``
section; else the project's templates of the built-in set of that name,
filled with the set's group labels.  A category is BBQ's: the built-in set's
name for the project's templates, the set's name for a section, the file's
``category`` field for a file.

The few-shot examples of the generated-choice prompt are items that are not
scored: for a file, Nejumi's (the category's train items 0 and 9, left out of
the scored items when the whole file is scored); for templates, the items at
the same positions of another built-in category (gender's shots are
nationality questions, nationality's occupation ones, occupation's and a
section's gender ones), so that no shot is about the stereotype being asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairness_core.config.attribute_sets import AttributeSet
from fairness_core.evaluations.bbq.files import (
    NEJUMI_SHOT_POSITIONS,
    QuestionFile,
    QuestionFileError,
    nejumi_shots,
    nejumi_split,
    read_question_file,
)
from fairness_core.evaluations.bbq.items import Item, expand
from fairness_core.evaluations.bbq.section import BbqSection
from fairness_core.evaluations.bbq.templates import QuestionTemplate, builtin_templates, unknown_answers

#: The built-in category whose items are a category's few-shot examples.
SHOT_DONORS = {"gender": "nationality", "nationality": "occupation", "occupation": "gender"}
SUBSETS = ("nejumi",)


@dataclass(frozen=True)
class QuestionSet:
    """The items a run scores, the few-shot examples per category, and what the report says of them."""

    items: tuple[Item, ...]
    shots: Mapping[str, tuple[Item, ...]]
    source: str
    templates: Mapping[str, QuestionTemplate] = field(default_factory=dict)
    left_out: tuple[str, ...] = ()
    #: Which questions, in words that are the same on every machine (a file by name and hash, not by path).
    data: str = ""

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item.category for item in self.items))

    def provenance(self) -> dict[str, Any]:
        return {"source": self.source, "data": self.data, "items": len(self.items), "categories": list(self.categories),
                "templates": list(dict.fromkeys(item.template_id for item in self.items)),
                "shots": {c: [s.key for s in shots] for c, shots in self.shots.items()},
                **({"left_out": list(self.left_out)} if self.left_out else {})}


def asked_questions(attributes: AttributeSet, *, path: str | None, subset: str | None, few_shots: int) -> QuestionSet:
    """The questions a run asks: those of ``--bbq-file`` ``path`` (``--bbq-subset`` ``subset`` of them), else the
    attribute set's templates; a subset without a file is a usage error."""
    if subset and path is None:
        raise QuestionFileError(f"--bbq-subset={subset} takes its items from a --bbq-file: give the JBBQ file too.")
    if path is not None:  # an empty value is no file: read_question_file says so
        return file_questions(read_question_file(path), subset=subset, few_shots=few_shots)
    return template_questions(attributes, few_shots=few_shots)


def applicable_templates(attributes: AttributeSet) -> tuple[tuple[QuestionTemplate, ...], tuple[str, ...]]:
    """The templates the set's run asks (its section's, else the project's of its name) and those left out, with why."""
    section: BbqSection | None = attributes.section("bbq")
    if section is not None:
        return section.templates, ()
    kept, left_out = [], []
    for template in builtin_templates(attributes.name):
        missing = [g for g in template.groups if g not in attributes.groups]
        if missing:
            left_out.append(f"{template.id}: the set has no group {', '.join(missing)}")
        else:
            kept.append(template)
    return tuple(kept), tuple(left_out)


def template_questions(attributes: AttributeSet, *, few_shots: int) -> QuestionSet:
    """The items of the set's templates (its section's, or the project's of its name), and their few-shot examples."""
    section: BbqSection | None = attributes.section("bbq")
    templates, left_out = applicable_templates(attributes)
    answers = section.answers() if section is not None else unknown_answers()
    items = expand(templates, category=attributes.name, labels=attributes.labels, unknown_answers=answers)
    data = (f"the bbq section of the attribute set {attributes.name}" if section is not None
            else f"the project's reviewed templates for {attributes.name}")
    where = (f"{data} ({attributes.source})" if section is not None
             else f"{data} (evaluations/bbq/data/bbq_templates.yaml)")
    source = f"{where}: {len(templates)} templates, {len(items)} items"
    return QuestionSet(tuple(items), {attributes.name: donor_shots(attributes.name, few_shots)}, source,
                       {t.id: t for t in templates}, left_out, data)


def donor_shots(category: str, few_shots: int) -> tuple[Item, ...]:
    """Few-shot examples for ``category``: another built-in category's items at Nejumi's positions."""
    from fairness_core.api.user_files import load_attribute_set

    if not few_shots:
        return ()
    donor = SHOT_DONORS.get(category, "gender")
    items = expand(builtin_templates(donor), category=donor, labels=load_attribute_set(donor).labels,
                   unknown_answers=unknown_answers())
    return tuple(items[i] for i in NEJUMI_SHOT_POSITIONS[few_shots])


def file_questions(file: QuestionFile, *, subset: str | None, few_shots: int) -> QuestionSet:
    """The items of a user's file (all, or Nejumi's test subset), with Nejumi's few-shot examples per category."""
    split = nejumi_split(file.items)
    shots = {c: tuple(nejumi_shots(split, c, few_shots)) for c in split.train}
    left_out: tuple[str, ...] = ()
    if subset == "nejumi":
        items = tuple(item for category_items in split.test.values() for item in category_items)
        empty = [c for c, test in split.test.items() if not test]
        if not items:
            raise QuestionFileError(
                f"--bbq-subset=nejumi: Nejumi's split of {file.describe()} leaves no test template in any category: "
                f"it gives 10/25 of a category's templates (question_index) to test, rounded down, so a category "
                f"needs at least 3 templates ({', '.join(f'{c}: {n}' for c, n in split.templates.items())}). "
                f"Leave --bbq-subset out to ask every item of the file.")
        left_out = tuple(f"{c}: Nejumi's split gives it no test template ({split.templates[c]} templates)"
                         for c in empty)
        chosen = f"subset nejumi: the first 20 test items of each category ({len(items)} items), as Nejumi LLM " \
                 f"Leaderboard 4 scores JBBQ" + "".join(f"; {line}" for line in left_out)
    else:
        shown = {s.key for category_shots in shots.values() for s in category_shots}
        items = tuple(item for item in file.items if item.key not in shown)
        chosen = f"every item but the {len(shown)} few-shot examples ({len(items)} items)"
    data = f"--bbq-file {file.identity()}" + (f" --bbq-subset={subset}" if subset else "")
    return QuestionSet(items, shots, f"--bbq-file {file.describe()}; {chosen}", left_out=left_out, data=data)
