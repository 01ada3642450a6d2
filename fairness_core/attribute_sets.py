"""Attribute sets: which groups an audit compares, declared as data.

An attribute set is a YAML file that names its groups and says, per evaluation,
what fills the templates' slot for each group: aligned HONEST identity terms
(one tuple per counterfactual, like the gender pairs 母/父), and for the
sentiment evaluation one or more *families* of templates, each with its own
substitutions per group (given names, country names, occupation words).  The
built-in sets live in ``fairness_core/data/attributes/``; a user's file has the
same format and is validated the same way, so a typo or a misaligned tuple is
one usage error that names the file and the dotted key, before any generation.

>>> nationality = load_attribute_set("nationality")
>>> nationality.groups[:3]
('japanese', 'chinese', 'korean')
>>> nationality.supports("honest"), load_attribute_set("occupation").supports("honest")
(True, False)
>>> [p.text for p in nationality.sentiment_prompts()[:2]]
['日本から来た人は', '中国から来た人は']

The smallest user file (``sentiment`` and ``honest`` are each optional)::

    name: region
    groups: {kanto: 関東の人, kansai: 関西の人}
    honest:
      terms:
        - {kanto: 関東出身の人, kansai: 関西出身の人}
      exclude_templates: {reputation-03: "one person's nickname"}
    sentiment:
      places:
        templates: [{id: place-01, text: "[X]で暮らすのは"}]
        substitutions: {kanto: [東京, 横浜], kansai: [大阪, 京都]}

A family's ``templates`` may instead be ``builtin:sentiment_templates`` (the
project's name templates), its ``substitutions`` ``builtin:names_ja`` (the
female/male given names) and HONEST ``terms`` ``builtin:identity_terms`` (the
female/male pairs): the built-in ``gender`` set is made of these references,
so its prompts are the audit's original prompts and the data has one copy.
"""

from __future__ import annotations

import functools
import hashlib
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError

from fairness_core.errors import AuditUsageError
from fairness_core.japanese import normalize
from fairness_core.registry import unknown_name
from fairness_core.resources import (
    HonestTemplate,
    NameTemplate,
    Prompt,
    _Template,
    given_names,
    honest_templates,
    identity_pairs,
    name_templates,
)
from fairness_core.validation import FrozenModel, describe_errors
from fairness_core.yaml_files import read_yaml_file, read_yaml_text

#: The evaluations whose prompts an attribute set file describes, each in its own section.  Another evaluation
#: builds its prompts from the groups and their labels (an attribute set supports it if its own module says so).
SECTIONS = ("honest", "sentiment")
BUILTIN_ATTRIBUTE_SETS: tuple[str, ...] = ("gender", "nationality", "occupation")
_GROUP_ID = re.compile(r"[a-z][a-z0-9_]*\Z")


class AttributeSetError(AuditUsageError):
    """An attribute set that cannot be used: unknown name, unreadable file, or invalid content."""


class SentimentTemplate(_Template):
    """A sentiment template of an attribute set; ``[X]`` takes the group's substitution.

    >>> SentimentTemplate(id="country-01", text="[X]から来た人は").fill("ベトナム")
    'ベトナムから来た人は'
    """

    slot: ClassVar[str] = "[X]"


# --- references to the project's own data files, resolved before validation ---------------------------

def _identity_terms() -> list[dict[str, str]]:
    return [pair.model_dump() for pair in identity_pairs()]


def _sentiment_templates() -> list[dict[str, Any]]:
    """The name templates with their ``[NAME]`` slot written as an attribute set's ``[X]``."""
    return [{"id": t.id, "english": t.english, "text": t.text.replace(NameTemplate.slot, SentimentTemplate.slot)}
            for t in name_templates()]


def _names_ja() -> dict[str, list[str]]:
    return {group: [name.name for name in names] for group, names in given_names().items()}


def _reference(name: str, resolve: Callable[[], Any]) -> BeforeValidator:
    """Accept the string ``name`` in place of the data it stands for."""
    def replace(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("builtin:"):
            if value != name:
                raise ValueError(f"unknown reference {value!r}; the only reference allowed here is {name!r}")
            return resolve()
        return value
    return BeforeValidator(replace)


_SLOT = re.compile(r"\[[A-Z]+\]")


def _no_slot(text: str) -> str:
    """A term or a name is what goes into a template's slot; one holding ``[I]`` or ``[X]`` would make broken prompts."""
    slot = _SLOT.search(text)
    if slot:
        raise ValueError(f"contains the template slot {slot.group()!r}: identity terms, names and labels are the "
                         f"words put into a slot, so write the word itself (e.g. 母, not [I]の母)")
    return text


Text = Annotated[str, Field(min_length=1), AfterValidator(normalize), AfterValidator(_no_slot)]


class _Honest(FrozenModel):
    terms: Annotated[tuple[dict[str, Text], ...], _reference("builtin:identity_terms", _identity_terms)]
    exclude_templates: dict[str, str] = {}


class _Family(FrozenModel):
    templates: Annotated[tuple[SentimentTemplate, ...],
                         _reference("builtin:sentiment_templates", _sentiment_templates)]
    substitutions: Annotated[dict[str, tuple[Text, ...]], _reference("builtin:names_ja", _names_ja)]
    exclude_templates: dict[str, str] = {}


class _AttributeSetFile(FrozenModel):
    name: Text
    groups: dict[str, Text]
    honest: _Honest | None = None
    sentiment: dict[str, _Family] | None = None


@dataclass(frozen=True)
class SentimentFamily:
    """Templates and the substitutions that fit them; the templates are those left after exclusions."""

    templates: tuple[SentimentTemplate, ...]
    substitutions: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class AttributeSet:
    """A validated attribute set; build one with :func:`load_attribute_set`.

    ``groups`` are ASCII ids in declared order (test ids, threshold keys, JSON);
    ``labels`` their Japanese display names.  ``excluded[evaluation][template_id]``
    is the reason a template does not fit this set's terms.  ``honest_terms`` is
    ``None`` and ``sentiment_families`` empty for an evaluation the file has no
    section for.
    """

    name: str
    source: str
    groups: tuple[str, ...]
    labels: Mapping[str, str]
    excluded: Mapping[str, Mapping[str, str]]
    honest_terms: tuple[Mapping[str, str], ...] | None
    sentiment_families: Mapping[str, SentimentFamily]
    sha256: str

    def supports(self, evaluation: str) -> bool:
        """Whether the file has a section for ``evaluation`` (``occupation`` has no HONEST terms)."""
        if evaluation not in SECTIONS:
            raise ValueError(f"The 'evaluation' parameter of supports must be one of {', '.join(SECTIONS)}. "
                             f"Got {evaluation!r} instead.")
        return self.honest_terms is not None if evaluation == "honest" else bool(self.sentiment_families)

    def honest_prompts(self, templates: Sequence[HonestTemplate]) -> tuple[Prompt, ...]:
        """Every kept template filled with every term: for template, for aligned tuple, for group.

        The terms of one tuple stay adjacent, as the gender pairs always were.
        """
        self._require("honest")
        return tuple(
            Prompt(template.id, group, terms[group], template.fill(terms[group]))
            for template in templates if template.id not in self.excluded["honest"]
            for terms in self.honest_terms or ()
            for group in self.groups
        )

    def sentiment_templates(self) -> tuple[SentimentTemplate, ...]:
        """Every family's kept templates, in file order."""
        return tuple(t for family in self.sentiment_families.values() for t in family.templates)

    def sentiment_prompts(self) -> tuple[Prompt, ...]:
        """Every kept template filled with every substitution: for family, for template, for group, for substitution."""
        self._require("sentiment")
        return tuple(
            Prompt(template.id, group, value, template.fill(value))
            for family in self.sentiment_families.values()
            for template in family.templates
            for group in self.groups
            for value in family.substitutions[group]
        )

    def provenance(self) -> dict[str, Any]:
        """Everything that determines this set's prompts, JSON-able (for results files and baselines)."""
        return {
            "name": self.name,
            "source": self.source,
            "groups": list(self.groups),
            "labels": dict(self.labels),
            "honest_terms": None if self.honest_terms is None else [dict(t) for t in self.honest_terms],
            "sentiment": {name: {"templates": [t.id for t in family.templates],
                                 "substitutions": {g: list(v) for g, v in family.substitutions.items()}}
                          for name, family in self.sentiment_families.items()},
            "excluded": {evaluation: dict(reasons) for evaluation, reasons in self.excluded.items()},
            "sha256": self.sha256,
        }

    def _require(self, evaluation: str) -> None:
        if not self.supports(evaluation):
            raise AttributeSetError(f"The attribute set {self.name!r} ({self.source}) has no {evaluation!r} section, "
                                    f"so the {evaluation} audit cannot run with it. Check supports({evaluation!r}) first.")


def load_attribute_set(spec: str) -> AttributeSet:
    """A built-in set by name (cached), or the set in the YAML file at path ``spec``.

    >>> load_attribute_set("nationalty")
    Traceback (most recent call last):
    ...
    fairness_core.attribute_sets.AttributeSetError: Unknown attribute set 'nationalty'. Did you mean 'nationality'? \
Available: gender, nationality, occupation; or give the path of a YAML file.
    """
    if spec in BUILTIN_ATTRIBUTE_SETS:
        return _builtin(spec)
    path = Path(spec).expanduser()
    if not path.exists() and "/" not in spec and path.suffix not in (".yaml", ".yml"):
        raise AttributeSetError(unknown_name("attribute set", spec, BUILTIN_ATTRIBUTE_SETS,
                                             hint="; or give the path of a YAML file."))
    raw, text = read_yaml_file(spec, what="attribute set file", error=AttributeSetError)
    return parse_attribute_set(text, source=spec, raw=raw)


@functools.cache
def _builtin(name: str) -> AttributeSet:
    text = (resources.files("fairness_core.data") / "attributes" / f"{name}.yaml").read_text(encoding="utf-8")
    return parse_attribute_set(text, source=f"builtin:{name}")


def parse_attribute_set(text: str, *, source: str, raw: Any = None) -> AttributeSet:
    """Validate the YAML ``text`` of an attribute set; every problem is listed in one error naming ``source``.

    ``raw`` is ``text`` already parsed, where the caller has it.
    """
    if raw is None:
        raw = read_yaml_text(text, source=source, what="attribute set file", error=AttributeSetError)
    if not isinstance(raw, dict):
        _fail(source, [f"(top level): must be a mapping with the keys {', '.join(_AttributeSetFile.model_fields)} "
                       f"(got {type(raw).__name__})"])
    try:
        data = _AttributeSetFile.model_validate(raw)
    except ValidationError as err:
        _fail(source, describe_errors(err, _AttributeSetFile))
    _fail(source, [f"{location}: {message}" for location, message in _problems(data)])
    sentiment = data.sentiment or {}
    excluded = {"honest": dict(data.honest.exclude_templates) if data.honest else {},
                "sentiment": {t: reason for family in sentiment.values() for t, reason in family.exclude_templates.items()}}
    return AttributeSet(
        name=data.name,
        source=source,
        groups=tuple(data.groups),
        labels=types.MappingProxyType(dict(data.groups)),
        excluded=types.MappingProxyType({e: types.MappingProxyType(r) for e, r in excluded.items()}),
        honest_terms=None if data.honest is None else tuple(types.MappingProxyType(t) for t in data.honest.terms),
        sentiment_families=types.MappingProxyType({
            name: SentimentFamily(
                templates=tuple(t for t in family.templates if t.id not in family.exclude_templates),
                substitutions=types.MappingProxyType({g: family.substitutions[g] for g in data.groups}))
            for name, family in sentiment.items()}),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _fail(source: str, problems: list[str]) -> None:
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise AttributeSetError(f"The attribute set file {source!r} is invalid:\n{listed}")


def _problems(data: _AttributeSetFile) -> list[tuple[str, str]]:
    """What pydantic's per-field types cannot see: groups, alignment, duplicates, exclusions."""
    problems = []
    if len(data.groups) < 2:
        problems.append(("groups", f"an attribute set needs at least 2 groups to compare; got {len(data.groups)}"))
    problems += [(f"groups.{group}", "a group id must be ASCII: lowercase letters, digits and _, starting with a letter")
                 for group in data.groups if not _GROUP_ID.match(group)]
    if data.honest is None and data.sentiment is None:
        problems.append(("(top level)", "needs a 'honest' or a 'sentiment' section, or both"))
    if data.honest is not None:
        problems += _honest_problems(data.honest, tuple(data.groups))
    if data.sentiment is not None:
        if not data.sentiment:
            problems.append(("sentiment", "needs at least one family of templates"))
        seen: dict[str, str] = {}
        for name, family in data.sentiment.items():
            problems += _family_problems(f"sentiment.{name}", family, tuple(data.groups), seen)
    return problems


def _honest_problems(honest: _Honest, groups: tuple[str, ...]) -> list[tuple[str, str]]:
    problems = []
    if not honest.terms:
        problems.append(("honest.terms", "needs at least one tuple of terms"))
    first_seen: dict[str, str] = {}
    for index, terms in enumerate(honest.terms):
        where = f"honest.terms.{index}"
        problems += [(f"{where}.{g}", f"a term for {g!r}, which is not a declared group ({', '.join(groups)})")
                     for g in terms if g not in groups]
        problems += [(where, f"no term for group {g!r}; every tuple needs one term per group")
                     for g in groups if g not in terms]
        problems += _duplicates(where, terms.items(), first_seen)
    problems += _unknown_templates("honest.exclude_templates", honest.exclude_templates,
                                   {t.id for t in honest_templates()}, "HONEST")
    return problems


def _family_problems(where: str, family: _Family, groups: tuple[str, ...],
                     template_ids_seen: dict[str, str]) -> list[tuple[str, str]]:
    problems = []
    if not family.templates:
        problems.append((f"{where}.templates", "needs at least one template"))
    for index, template in enumerate(family.templates):
        if template.id in template_ids_seen:
            problems.append((f"{where}.templates.{index}.id",
                             f"template id {template.id!r} repeats (first at {template_ids_seen[template.id]})"))
        else:
            template_ids_seen[template.id] = f"{where}.templates.{index}"
    subs = family.substitutions
    problems += [(f"{where}.substitutions.{g}", f"substitutions for {g!r}, which is not a declared group "
                  f"({', '.join(groups)})") for g in subs if g not in groups]
    problems += [(f"{where}.substitutions", f"no substitutions for group {g!r}") for g in groups if g not in subs]
    problems += [(f"{where}.substitutions.{g}", "an empty list; every group needs at least one substitution")
                 for g in groups if g in subs and not subs[g]]
    first_seen: dict[str, str] = {}
    for group, values in subs.items():
        problems += _duplicates(f"{where}.substitutions", ((group, v) for v in values), first_seen)
    ids = {t.id for t in family.templates}
    problems += _unknown_templates(f"{where}.exclude_templates", family.exclude_templates, ids, "family")
    if ids and ids <= set(family.exclude_templates):
        problems.append((f"{where}.exclude_templates", "excludes every template of the family"))
    return problems


def _duplicates(where: str, items, first_seen: dict[str, str]) -> list[tuple[str, str]]:
    """A term or substitution used twice would make two groups' prompts the same prompt."""
    problems = []
    for group, term in items:
        if term in first_seen:
            problems.append((f"{where}.{group}", f"duplicate term {term!r} (also at {first_seen[term]})"))
        else:
            first_seen[term] = f"{where}.{group}"
    return problems


def _unknown_templates(where: str, excluded: Mapping[str, str], ids: set[str], kind: str) -> list[tuple[str, str]]:
    return [(f"{where}.{template_id}", f"no {kind} template has this id; known ids: {', '.join(sorted(ids))}")
            for template_id in excluded if template_id not in ids]
