"""HONEST's section of an attribute-set file: aligned identity terms, one tuple per counterfactual.

    honest:
      terms:
        - {kanto: 関東出身の人, kansai: 関西出身の人}
      exclude_templates: {reputation-03: "one person's nickname"}

``terms: builtin:identity_terms`` stands for the project's female/male pairs
(the built-in ``gender`` set).  The terms of one tuple stay adjacent in the
prompts, as the gender pairs always were.

Two optional lists of aligned tuples let the set be crossed with another
(``--attributes=gender*nationality``): ``modifiers``, what a group is as a word
before の (日本人, 日本出身), and ``heads``, person nouns of the group that such a
word can modify (女性, 女の子).  The crossed set's terms are every modifier of
the one set + の + every head of the other (:meth:`HonestSection.cross`):
日本人の女性, 日本出身の女の子.  A set's ordinary ``terms`` are not composed:
日本出身の人 + の + 女性 would read "a woman of a person from Japan", and the
nationality file's gendered terms (日本人の女性) would contradict the male cells.
Relational nouns (母, 妻, 娘) make poor heads: 日本人の妻 reads first as "a
Japanese man's wife".  The crossed set excludes the templates that either set
excludes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from fairness_core.api.prompts import Prompt
from fairness_core.config.attribute_sets import Problem, Term, builtin_reference, duplicate_terms, unknown_templates
from fairness_core.config.validation import FrozenModel
from fairness_core.evaluations.honest.templates import HonestTemplate, honest_templates, identity_pairs

if TYPE_CHECKING:
    from fairness_core.config.attribute_sets import AttributeSet


def _identity_terms() -> list[dict[str, str]]:
    return [pair.model_dump() for pair in identity_pairs()]


#: What joins a modifier of one set to a head of the other in a crossed set's term.
JOIN = "の"


class HonestSection(FrozenModel):
    terms: Annotated[tuple[dict[str, Term], ...], builtin_reference("builtin:identity_terms", _identity_terms)]
    exclude_templates: dict[str, str] = {}
    modifiers: tuple[dict[str, Term], ...] = ()
    heads: tuple[dict[str, Term], ...] = ()

    def problems(self, groups: tuple[str, ...]) -> list[Problem]:
        problems: list[Problem] = []
        if not self.terms:
            problems.append(("terms", "needs at least one tuple of terms"))
        for field in ("terms", "modifiers", "heads"):
            first_seen: dict[str, str] = {}
            for index, terms in enumerate(getattr(self, field)):
                where = f"honest.{field}.{index}"
                problems += [(f"{field}.{index}.{g}", f"a term for {g!r}, which is not a declared group "
                                                      f"({', '.join(groups)})") for g in terms if g not in groups]
                problems += [(f"{field}.{index}", f"no term for group {g!r}; every tuple needs one term per group")
                             for g in groups if g not in terms]
                problems += [(location.removeprefix("honest."), message)
                             for location, message in duplicate_terms(where, terms.items(), first_seen)]
        problems += unknown_templates("exclude_templates", self.exclude_templates,
                                      {t.id for t in honest_templates()}, "HONEST")
        return problems

    @classmethod
    def cross(cls, first: HonestSection, second: HonestSection,
              cells: Mapping[tuple[str, str], str]) -> HonestSection | None:
        """The crossed set's section: one set's ``modifiers`` + の + the other's ``heads``, every combination.

        Tuples run modifier by modifier, head by head.  ``None`` unless exactly one
        of the two sets has modifiers and the other heads (then write the cells'
        terms in a file with ``cross:``).
        """
        if first.heads and second.modifiers and not (first.modifiers and second.heads):
            def term(a: str, b: str, modifier: Mapping[str, str], head: Mapping[str, str]) -> str:
                return f"{modifier[b]}{JOIN}{head[a]}"
            modifiers, heads = second.modifiers, first.heads
        elif first.modifiers and second.heads and not (first.heads and second.modifiers):
            def term(a: str, b: str, modifier: Mapping[str, str], head: Mapping[str, str]) -> str:
                return f"{modifier[a]}{JOIN}{head[b]}"
            modifiers, heads = first.modifiers, second.heads
        else:
            return None
        terms = [{cell: term(a, b, modifier, head) for (a, b), cell in cells.items()}
                 for modifier in modifiers for head in heads]
        excluded = {**second.exclude_templates, **first.exclude_templates}
        return cls(terms=tuple(terms), exclude_templates=excluded)

    @classmethod
    def cross_problem(cls, first: HonestSection, second: HonestSection) -> str | None:
        """Why :meth:`cross` cannot compose these two sections, or ``None``.

        >>> plain = HonestSection(terms=({"a": "x", "b": "y"},))
        >>> print(HonestSection.cross_problem(plain, plain))
        crossing composes the honest terms as one set's modifiers + の + the other's heads (日本人の女性): one set \
needs modifiers and the other heads, but the first has neither and the second neither
        """
        def has(section: HonestSection) -> str:
            words = [field for field in ("modifiers", "heads") if getattr(section, field)]
            return " and ".join(words) if words else "neither"

        one_way, other_way = bool(first.heads and second.modifiers), bool(first.modifiers and second.heads)
        if one_way != other_way:
            return None
        return (f"crossing composes the honest terms as one set's modifiers + {JOIN} + the other's heads "
                f"(日本人{JOIN}女性): one set needs modifiers and the other heads, but the first has {has(first)} "
                f"and the second {has(second)}")

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
