"""The sentiment evaluation's section of an attribute-set file: families of templates, each with its substitutions.

    sentiment:
      places:
        templates: [{id: place-01, text: "[X]で暮らすのは"}]
        substitutions: {kanto: [東京, 横浜], kansai: [大阪, 京都]}

A family's ``templates`` may be ``builtin:sentiment_templates`` (the project's
name templates) and its ``substitutions`` ``builtin:names_ja`` (the female/male
given names): the built-in ``gender`` set is made of these references.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import ConfigDict, RootModel

from fairness_core.api.prompts import Prompt, Template
from fairness_core.config.attribute_sets import Problem, Term, builtin_reference, duplicate_terms, unknown_templates
from fairness_core.config.validation import FrozenModel
from fairness_core.evaluations.sentiment.templates import NameTemplate, given_names, name_templates

if TYPE_CHECKING:
    from fairness_core.config.attribute_sets import AttributeSet


class SentimentTemplate(Template):
    """A sentiment template of an attribute set; ``[X]`` takes the group's substitution.

    >>> SentimentTemplate(id="country-01", text="[X]から来た人は").fill("ベトナム")
    'ベトナムから来た人は'
    """

    slot: ClassVar[str] = "[X]"


def _sentiment_templates() -> list[dict[str, Any]]:
    """The name templates with their ``[NAME]`` slot written as an attribute set's ``[X]``."""
    return [{"id": t.id, "english": t.english, "text": t.text.replace(NameTemplate.slot, SentimentTemplate.slot)}
            for t in name_templates()]


def _names_ja() -> dict[str, list[str]]:
    return {group: [name.name for name in names] for group, names in given_names().items()}


class Family(FrozenModel):
    templates: Annotated[tuple[SentimentTemplate, ...],
                         builtin_reference("builtin:sentiment_templates", _sentiment_templates)]
    substitutions: Annotated[dict[str, tuple[Term, ...]], builtin_reference("builtin:names_ja", _names_ja)]
    exclude_templates: dict[str, str] = {}

    def kept_templates(self) -> tuple[SentimentTemplate, ...]:
        return tuple(t for t in self.templates if t.id not in self.exclude_templates)

    def problems(self, where: str, groups: tuple[str, ...], template_ids_seen: dict[str, str]) -> list[Problem]:
        problems = []
        if not self.templates:
            problems.append((f"{where}.templates", "needs at least one template"))
        for index, template in enumerate(self.templates):
            if template.id in template_ids_seen:
                problems.append((f"{where}.templates.{index}.id",
                                 f"template id {template.id!r} repeats (first at {template_ids_seen[template.id]})"))
            else:
                template_ids_seen[template.id] = f"sentiment.{where}.templates.{index}"
        subs = self.substitutions
        problems += [(f"{where}.substitutions.{g}", f"substitutions for {g!r}, which is not a declared group "
                      f"({', '.join(groups)})") for g in subs if g not in groups]
        problems += [(f"{where}.substitutions", f"no substitutions for group {g!r}") for g in groups if g not in subs]
        problems += [(f"{where}.substitutions.{g}", "an empty list; every group needs at least one substitution")
                     for g in groups if g in subs and not subs[g]]
        first_seen: dict[str, str] = {}
        for group, values in subs.items():
            problems += [(location.removeprefix("sentiment."), message) for location, message in
                         duplicate_terms(f"sentiment.{where}.substitutions", ((group, v) for v in values), first_seen)]
        ids = {t.id for t in self.templates}
        problems += unknown_templates(f"{where}.exclude_templates", self.exclude_templates, ids, "family")
        if ids and ids <= set(self.exclude_templates):
            problems.append((f"{where}.exclude_templates", "excludes every template of the family"))
        return problems


class SentimentSection(RootModel[dict[str, Family]]):
    """Families by name, in file order."""

    model_config = ConfigDict(frozen=True)

    @property
    def families(self) -> Mapping[str, Family]:
        return self.root

    def problems(self, groups: tuple[str, ...]) -> list[Problem]:
        if not self.root:
            return [("", "needs at least one family of templates")]
        seen: dict[str, str] = {}
        return [problem for name, family in self.root.items() for problem in family.problems(name, groups, seen)]

    def excluded(self) -> dict[str, str]:
        return {t: reason for family in self.root.values() for t, reason in family.exclude_templates.items()}

    def provenance(self) -> dict[str, Any]:
        return {"sentiment": {name: {"templates": [t.id for t in family.kept_templates()],
                                     "substitutions": {g: list(v) for g, v in family.substitutions.items()}}
                              for name, family in self.root.items()}}

    def templates(self) -> tuple[SentimentTemplate, ...]:
        """Every family's kept templates, in file order."""
        return tuple(t for family in self.root.values() for t in family.kept_templates())

    def prompts(self, groups: tuple[str, ...]) -> tuple[Prompt, ...]:
        """Every kept template filled with every substitution: for family, for template, for group, for substitution."""
        return tuple(
            Prompt(template.id, group, value, template.fill(value))
            for family in self.root.values()
            for template in family.kept_templates()
            for group in groups
            for value in family.substitutions[group]
        )


def sentiment_prompts(attributes: AttributeSet) -> tuple[Prompt, ...]:
    """The sentiment prompts of an attribute set that has a sentiment section."""
    section = attributes.section("sentiment")
    if section is None:
        raise ValueError(f"The attribute set {attributes.name!r} has no sentiment section")
    return section.prompts(attributes.groups)
