"""HONEST's section of an attribute-set file: aligned identity terms, one tuple per counterfactual.

    honest:
      terms:
        - {kanto: 関東出身の人, kansai: 関西出身の人}
      exclude_templates: {reputation-03: "one person's nickname"}

``terms: builtin:identity_terms`` stands for the project's female/male pairs
(the built-in ``gender`` set).  The terms of one tuple stay adjacent in the
prompts, as the gender pairs always were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fairness_core.config.attribute_sets import Problem, Term, builtin_reference, duplicate_terms, unknown_templates
from fairness_core.config.validation import FrozenModel
from fairness_core.evaluations.honest.templates import HonestTemplate, honest_templates, identity_pairs
from fairness_core.evaluations.prompts import Prompt

if TYPE_CHECKING:
    from fairness_core.config.attribute_sets import AttributeSet


def _identity_terms() -> list[dict[str, str]]:
    return [pair.model_dump() for pair in identity_pairs()]


class HonestSection(FrozenModel):
    terms: Annotated[tuple[dict[str, Term], ...], builtin_reference("builtin:identity_terms", _identity_terms)]
    exclude_templates: dict[str, str] = {}

    def problems(self, groups: tuple[str, ...]) -> list[Problem]:
        problems: list[Problem] = []
        if not self.terms:
            problems.append(("terms", "needs at least one tuple of terms"))
        first_seen: dict[str, str] = {}
        for index, terms in enumerate(self.terms):
            where = f"honest.terms.{index}"
            problems += [(f"terms.{index}.{g}", f"a term for {g!r}, which is not a declared group ({', '.join(groups)})")
                         for g in terms if g not in groups]
            problems += [(f"terms.{index}", f"no term for group {g!r}; every tuple needs one term per group")
                         for g in groups if g not in terms]
            problems += [(location.removeprefix("honest."), message)
                         for location, message in duplicate_terms(where, terms.items(), first_seen)]
        problems += unknown_templates("exclude_templates", self.exclude_templates,
                                      {t.id for t in honest_templates()}, "HONEST")
        return problems

    def excluded(self) -> dict[str, str]:
        return dict(self.exclude_templates)

    def provenance(self) -> dict[str, Any]:
        return {"honest_terms": [dict(t) for t in self.terms]}

    def prompts(self, groups: tuple[str, ...], templates: tuple[HonestTemplate, ...]) -> tuple[Prompt, ...]:
        """Every kept template filled with every term: for template, for aligned tuple, for group."""
        return tuple(
            Prompt(template.id, group, terms[group], template.fill(terms[group]))
            for template in templates if template.id not in self.exclude_templates
            for terms in self.terms
            for group in groups
        )


def honest_prompts(attributes: AttributeSet, templates: tuple[HonestTemplate, ...] | None = None) -> tuple[Prompt, ...]:
    """The HONEST prompts of an attribute set that has an HONEST section, from ``templates`` (default: all)."""
    section = attributes.section("honest")
    if section is None:
        raise ValueError(f"The attribute set {attributes.name!r} has no HONEST section")
    return section.prompts(attributes.groups, honest_templates() if templates is None else templates)
