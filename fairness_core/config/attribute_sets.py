"""Attribute sets: which groups an audit compares, declared as data.

An attribute set is a YAML file that names its groups and their Japanese
labels, and holds one section per evaluation that needs more than the labels:
what fills that evaluation's templates for each group (identity terms, given
names, country names).  Each evaluation declares the model of its own section
(:attr:`fairness_core.api.evaluation.Evaluation.attribute_section`), and the
file model is composed from the sections it is given, as the thresholds file
is (:mod:`fairness_core.api.user_files` gives the registered evaluations').
The built-in sets live in ``fairness_core/data/attributes/``; a user's file
has the same format and is validated the same way, so a typo or a misaligned
tuple is one usage error that names the file and the dotted key, before any
generation.

>>> from fairness_core.api.user_files import load_attribute_set
>>> nationality = load_attribute_set("nationality")
>>> nationality.groups[:3]
('japanese', 'chinese', 'korean')
>>> nationality.section("honest") is not None, load_attribute_set("occupation").section("honest")
(True, None)

Two sets are crossed with ``--attributes=gender*nationality`` (or a file
with ``cross: [gender, nationality]`` in place of ``groups``): every pair of a
group of the first and a group of the second is a group of the crossed set
(``female_japanese``, labelled ``女性・日本人``).  Each evaluation composes its
section for the cells by its own documented rule (the section model's
``cross``; HONEST joins the one set's ``modifiers`` and the other's ``heads``:
日本人 + の + 女性), or a file with ``cross:`` writes the section per cell
itself; an evaluation that can do neither does not run on the crossed set.

>>> crossed = load_attribute_set("gender*nationality")
>>> crossed.groups[:2], crossed.labels["male_korean"]
(('female_japanese', 'female_chinese'), '男性・韓国人')

The smallest user file (each evaluation's section is optional)::

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
"""

from __future__ import annotations

import functools
import hashlib
import re
import types
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, create_model

from fairness_core.config.validation import FrozenModel, describe_errors
from fairness_core.config.yaml_files import read_yaml_file, read_yaml_text
from fairness_core.errors import AuditUsageError
from fairness_core.japanese.morphology import normalize
from fairness_core.registry import unknown_name

BUILTIN_ATTRIBUTE_SETS: tuple[str, ...] = ("gender", "nationality", "occupation")
#: ``A*B`` crosses the attribute sets A and B.
CROSS = "*"
_GROUP_ID = re.compile(r"[a-z][a-z0-9_]*\Z")
_SLOT = re.compile(r"\[[A-Z]+\]")

#: ``(dotted location inside the section, what is wrong)``.
Problem = tuple[str, str]


class AttributeSetError(AuditUsageError):
    """An attribute set that cannot be used: unknown name, unreadable file, or invalid content."""


class AttributeSection(Protocol):
    """What an evaluation's section of an attribute-set file provides (a frozen pydantic model)."""

    def problems(self, groups: tuple[str, ...]) -> list[Problem]:
        """What the field types cannot see: alignment with the groups, duplicates, unknown template ids."""
        ...

    def excluded(self) -> dict[str, str]:
        """Template id -> why this set's terms do not fit that template."""
        ...

    # A section model may also define ``cross(first, second, cells) -> section | None`` (a classmethod): the
    # section of the crossed set composed from the two sets' sections, ``cells[(a, b)]`` naming the crossed
    # group of group a of the first set and group b of the second; ``None`` when its rule cannot compose them.
    # With it, ``cross_problem(first, second) -> str | None`` (a classmethod) says why ``cross`` gives ``None``
    # for these two sections, in words the user can act on (the run shows it as the evaluation's reason for
    # not being judged).

    def provenance(self) -> dict[str, Any]:
        """Everything that determines the section's prompts, JSON-able, as top-level keys of the set's provenance."""
        ...


def _no_slot(text: str) -> str:
    """A term or a name is what goes into a template's slot; one holding ``[I]`` or ``[X]`` would make broken prompts."""
    slot = _SLOT.search(text)
    if slot:
        raise ValueError(f"contains the template slot {slot.group()!r}: identity terms, names and labels are the "
                         f"words put into a slot, so write the word itself (e.g. 母, not [I]の母)")
    return text


def _visible(text: str) -> str:
    """A term, name or label a reader can see: not blank, and no invisible character (a zero-width space would make
    two groups look the same in every report while the model reads them apart)."""
    hidden = next((char for char in text if unicodedata.category(char) in ("Cc", "Cf")), None)
    if hidden is not None:
        name = unicodedata.name(hidden, "a control character")
        raise ValueError(f"contains the invisible character U+{ord(hidden):04X} ({name}); write the visible term only")
    if not text.strip():
        raise ValueError("is blank (only spaces); write the term itself")
    return text


#: A term, name or label: non-empty, visible, NFKC-normalised, with no template slot in it.
Term = Annotated[str, Field(min_length=1), AfterValidator(normalize), AfterValidator(_visible),
                 AfterValidator(_no_slot)]


def builtin_reference(name: str, resolve: Callable[[], Any]) -> BeforeValidator:
    """Accept the string ``name`` (``builtin:identity_terms``) in place of the project data it stands for."""
    def replace(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("builtin:"):
            if value != name:
                raise ValueError(f"unknown reference {value!r}; the only reference allowed here is {name!r}")
            return resolve()
        return value
    return BeforeValidator(replace)


def duplicate_terms(where: str, items: Iterable[tuple[str, str]], first_seen: dict[str, str]) -> list[Problem]:
    """``(group, term)`` pairs whose term was used before: two groups' prompts would be the same prompt."""
    problems = []
    for group, term in items:
        if term in first_seen:
            problems.append((f"{where}.{group}", f"duplicate term {term!r} (also at {first_seen[term]})"))
        else:
            first_seen[term] = f"{where}.{group}"
    return problems


def unknown_templates(where: str, excluded: Mapping[str, str], ids: set[str], kind: str) -> list[Problem]:
    """Exclusions that name no template (a typo would exclude nothing)."""
    return [(f"{where}.{template_id}", f"no {kind} template has this id; known ids: {', '.join(sorted(ids))}")
            for template_id in excluded if template_id not in ids]


@dataclass(frozen=True)
class AttributeSet:
    """A validated attribute set; build one with :func:`fairness_core.api.user_files.load_attribute_set`.

    ``groups`` are ASCII ids in declared order (test ids, threshold keys, JSON);
    ``labels`` their Japanese display names.  ``sections`` holds each
    evaluation's validated section; an evaluation the file has no section for
    is absent.  ``section_names`` are the sections the file was read with.  ``missing`` says, for a section
    that a crossed set could not compose, why (``"nationality has no sentiment section"``).
    """

    name: str
    source: str
    groups: tuple[str, ...]
    labels: Mapping[str, str]
    sections: Mapping[str, Any]
    section_names: tuple[str, ...]
    sha256: str
    missing: Mapping[str, str] = field(default_factory=lambda: types.MappingProxyType({}))

    def section(self, evaluation: str) -> Any | None:
        """The file's section for ``evaluation``, or ``None``."""
        return self.sections.get(evaluation)

    def why_missing(self, evaluation: str) -> str:
        """Why this set has no section for ``evaluation``: a crossed set's reason, else that its file has none."""
        return self.missing.get(evaluation) or f"{self.name!r} ({self.source}) has no {evaluation} section"

    def provenance(self) -> dict[str, Any]:
        """Everything that determines this set's prompts, JSON-able (for results files and baselines)."""
        sections = {name: section.provenance() for name, section in self.sections.items()}
        return {
            "name": self.name,
            "source": self.source,
            "groups": list(self.groups),
            "labels": dict(self.labels),
            **{key: value for provenance in sections.values() for key, value in provenance.items()},
            "excluded": {name: (self.sections[name].excluded() if name in self.sections else {})
                         for name in self.section_names},
            "sha256": self.sha256,
        }


#: (evaluation name, section model) of each evaluation an attribute-set file may have a section for.
Sections = tuple[tuple[str, Any], ...]


@functools.cache
def _file_model(sections: Sections) -> type[FrozenModel]:
    fields: dict[str, Any] = {name: (section | None, None) for name, section in sections}
    return create_model("AttributeSetFile", __base__=FrozenModel, name=(Term, ...),  # type: ignore[call-overload]
                        groups=(dict[str, Term] | None, None), cross=(tuple[str, str] | None, None), **fields)


def cross_attribute_sets(first: AttributeSet, second: AttributeSet, *, sections: Sections, name: str | None = None,
                         source: str | None = None, written: Mapping[str, Any] | None = None,
                         text: str = "") -> AttributeSet:
    """The crossed set of ``first`` and ``second``: a group for every pair of their groups, first's outer.

    Each evaluation's section is ``written[name]`` where given (a file's
    per-cell section), else composed by the section model's ``cross`` from
    both sets' sections, else absent (that evaluation does not run on it).
    """
    cells = {(a, b): f"{a}_{b}" for a in first.groups for b in second.groups}
    source = source or f"{first.source}{CROSS}{second.source}"
    if first.sha256 == second.sha256:
        _fail(source, [f"cross: {first.name!r} is crossed with itself; cross two different attribute sets "
                       f"(e.g. gender{CROSS}nationality)"])
    problems = [f"groups: the crossed group {cell!r} arises twice (from {[k for k, v in cells.items() if v == cell]}); "
                f"rename a group" for cell in set(cells.values()) if list(cells.values()).count(cell) > 1]
    problems += [f"groups: the crossed group id {cell!r} is too long to read (over 40 characters)"
                 for cell in cells.values() if len(cell) > 40]
    _fail(source, problems)
    groups = tuple(cells.values())
    labels = {cell: f"{first.labels[a]}・{second.labels[b]}" for (a, b), cell in cells.items()}
    present: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for evaluation, model in sections:
        if written and written.get(evaluation) is not None:
            present[evaluation] = written[evaluation]
            continue
        composed = _composed(evaluation, model, first, second, cells)
        if isinstance(composed, str):
            missing[evaluation] = composed
        else:
            present[evaluation] = composed
    _fail(source, [f"{location}: {message}" for location, message in _problems(groups, present)])
    digest = hashlib.sha256(f"{first.sha256}{CROSS}{second.sha256}\n{text}".encode()).hexdigest()
    return AttributeSet(name=name or f"{first.name}{CROSS}{second.name}", source=source, groups=groups,
                        labels=types.MappingProxyType(labels), sections=types.MappingProxyType(present),
                        section_names=tuple(n for n, _ in sections), sha256=digest,
                        missing=types.MappingProxyType(missing))


def _composed(evaluation: str, model: Any, first: AttributeSet, second: AttributeSet,
              cells: Mapping[tuple[str, str], str]) -> Any:
    """``evaluation``'s section of the crossed set composed by its model's ``cross``, or why there is none."""
    compose = getattr(model, "cross", None)
    if compose is None:
        return (f"the {evaluation} section has no rule to cross two sets; write its section per crossed group "
                f"in a file with cross: [{first.name}, {second.name}]")
    absent = [one.why_missing(evaluation) for one in (first, second) if one.section(evaluation) is None]
    if absent:
        return "; ".join(absent)
    composed = compose(first.section(evaluation), second.section(evaluation), cells)
    if composed is not None:
        return composed
    problem = getattr(model, "cross_problem", None)
    why = problem(first.section(evaluation), second.section(evaluation)) if problem is not None else None
    return (why or f"its rule cannot compose the {evaluation} sections of {first.name!r} and {second.name!r}") + (
        f"; or write its section per crossed group in a file with cross: [{first.name}, {second.name}]")


@functools.cache
def _crossed_builtin(first: str, second: str, sections: Sections) -> AttributeSet:
    return cross_attribute_sets(_builtin(first, sections), _builtin(second, sections), sections=sections)


def read_attribute_set(spec: str, *, sections: Sections) -> AttributeSet:
    """A built-in set by name (cached), or the set in the YAML file at path ``spec``, read with ``sections``.

    >>> read_attribute_set("nationalty", sections=())
    Traceback (most recent call last):
    ...
    fairness_core.config.attribute_sets.AttributeSetError: Unknown attribute set 'nationalty'. Did you mean \
'nationality'? Available: gender, nationality, occupation; or give the path of a YAML file.
    """
    if spec in BUILTIN_ATTRIBUTE_SETS:
        return _builtin(spec, sections)
    path = Path(spec).expanduser()
    if CROSS in spec and not path.exists():
        if "" in spec.split(CROSS):
            raise AttributeSetError(f"{spec!r} is no attribute set: a crossed set joins attribute sets with single {CROSS}s, "
                                    f"none of them empty, e.g. gender{CROSS}nationality")
        first, _, second = spec.partition(CROSS)
        if first in BUILTIN_ATTRIBUTE_SETS and second in BUILTIN_ATTRIBUTE_SETS:
            return _crossed_builtin(first, second, sections)
        return cross_attribute_sets(read_attribute_set(first, sections=sections),
                                    read_attribute_set(second, sections=sections), sections=sections)
    if not path.exists() and "/" not in spec and path.suffix not in (".yaml", ".yml"):
        raise AttributeSetError(unknown_name("attribute set", spec, BUILTIN_ATTRIBUTE_SETS,
                                             hint="; or give the path of a YAML file."))
    raw, text = read_yaml_file(spec, what="attribute set file", error=AttributeSetError)
    return attribute_set_from_text(text, sections=sections, source=spec, raw=raw)


@functools.cache
def _builtin(name: str, sections: Sections) -> AttributeSet:
    text = (resources.files("fairness_core.data") / "attributes" / f"{name}.yaml").read_text(encoding="utf-8")
    return attribute_set_from_text(text, sections=sections, source=f"builtin:{name}")


def attribute_set_from_text(text: str, *, sections: Sections, source: str, raw: Any = None) -> AttributeSet:
    """Validate the YAML ``text`` of an attribute set; every problem is listed in one error naming ``source``.

    ``raw`` is ``text`` already parsed, where the caller has it.
    """
    model = _file_model(sections)
    if raw is None:
        raw = read_yaml_text(text, source=source, what="attribute set file", error=AttributeSetError)
    if not isinstance(raw, dict):
        _fail(source, [f"(top level): must be a mapping with the keys {', '.join(model.model_fields)} "
                       f"(got {type(raw).__name__})"])
    try:
        data = model.model_validate(raw)
    except ValidationError as err:
        _fail(source, describe_errors(err, model))
    fields = dict(data)
    present = {name: fields[name] for name, _ in sections if fields[name] is not None}
    if fields["cross"] is not None or fields["groups"] is None:
        return _crossed_file(fields, present, sections=sections, source=source, text=text)
    groups = tuple(fields["groups"])
    _fail(source, [f"{location}: {message}" for location, message in _problems(groups, present)])
    return AttributeSet(
        name=fields["name"],
        source=source,
        groups=groups,
        labels=types.MappingProxyType(dict(fields["groups"])),
        sections=types.MappingProxyType(present),
        section_names=tuple(name for name, _ in sections),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _crossed_file(fields: Mapping[str, Any], written: Mapping[str, Any], *, sections: Sections, source: str,
                  text: str) -> AttributeSet:
    """A file with ``cross: [A, B]``: the crossed set, with the sections the file writes per cell."""
    if fields["cross"] is None:
        _fail(source, ["groups: give the groups (a mapping of ids to labels), or cross: [SET, SET] to cross two sets"])
    if fields["groups"] is not None:
        _fail(source, ["cross: give either groups or cross, not both: a crossed set's groups are the pairs of the "
                       "two sets' groups"])
    here = Path(source).expanduser().parent if not source.startswith("builtin:") else Path.cwd()
    first, second = (spec if spec in BUILTIN_ATTRIBUTE_SETS or CROSS in spec or Path(spec).is_absolute()
                     else str(here / spec) for spec in fields["cross"])
    return cross_attribute_sets(read_attribute_set(first, sections=sections),
                                read_attribute_set(second, sections=sections), sections=sections,
                                name=fields["name"], source=source, written=written, text=text)


def _fail(source: str, problems: list[str]) -> None:
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise AttributeSetError(f"The attribute set file {source!r} is invalid:\n{listed}")


def _problems(groups: tuple[str, ...], present: Mapping[str, Any]) -> list[Problem]:
    """What pydantic's per-field types cannot see: groups, and each section's own problems."""
    problems: list[Problem] = []
    if len(groups) < 2:
        problems.append(("groups", f"an attribute set needs at least 2 groups to compare; got {len(groups)}"))
    problems += [(f"groups.{group}", "a group id must be ASCII: lowercase letters, digits and _, starting with a letter")
                 for group in groups if not _GROUP_ID.match(group)]
    for name, section in present.items():
        problems += [(f"{name}.{location}" if location else name, message)
                     for location, message in section.problems(groups)]
    return problems
