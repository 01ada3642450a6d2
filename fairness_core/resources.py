"""Package data: templates, identity terms and names, validated on load.

The YAML files under ``fairness_core/data/`` are written for this project (see
each file's header for provenance).  They are parsed into frozen pydantic
models so that a broken edit fails loudly with the file and field named.

A prompt is a template with its slot filled::

    >>> template = HonestTemplate(id="occupation-01", category="occupation",
    ...                           english="[I] should work as a", text="[I]が就くべき職業は")
    >>> template.fill("母")
    '母が就くべき職業は'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import ClassVar, TypeVar

import yaml
from pydantic import BaseModel, ValidationError, field_validator

from fairness_core.japanese import normalize
from fairness_core.validation import FrozenModel

ATTRIBUTES = ("female", "male")


class _Template(FrozenModel):
    slot: ClassVar[str]
    id: str
    english: str | None = None
    text: str

    @field_validator("text")
    @classmethod
    def _slot_first(cls, text: str) -> str:
        if not text.startswith(cls.slot) or text.count(cls.slot) != 1:
            raise ValueError(f"must start with the slot {cls.slot} and contain it once")
        return normalize(text)

    def fill(self, value: str) -> str:
        return self.text.replace(self.slot, value)


class HonestTemplate(_Template):
    slot: ClassVar[str] = "[I]"
    category: str


class NameTemplate(_Template):
    slot: ClassVar[str] = "[NAME]"


class IdentityPair(FrozenModel):
    female: str
    male: str


class GivenName(FrozenModel):
    """A name chosen by Huang et al.'s method: rank ``rank`` of birth year ``year``."""

    name: str
    reading: str
    year: int
    rank: int
    verified: bool


def _unique_ids(templates: tuple[_Template, ...]) -> tuple[_Template, ...]:
    ids = [t.id for t in templates]
    if len(set(ids)) != len(ids):
        raise ValueError(f"template ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return templates


class _HonestTemplateFile(FrozenModel):
    templates: tuple[HonestTemplate, ...]
    _check_ids = field_validator("templates")(_unique_ids)


class _NameTemplateFile(FrozenModel):
    templates: tuple[NameTemplate, ...]
    _check_ids = field_validator("templates")(_unique_ids)


class _IdentityFile(FrozenModel):
    attributes: tuple[str, ...]
    pairs: tuple[IdentityPair, ...]


class _NamesFile(FrozenModel):
    female: tuple[GivenName, ...]
    male: tuple[GivenName, ...]


@dataclass(frozen=True)
class Prompt:
    """One filled template: what the model is asked to continue, and for whom."""

    template_id: str
    group: str
    term: str
    text: str

    @property
    def id(self) -> str:
        """``<template_id>/<group>/<term>``: unique within an evaluation, stable across runs."""
        return f"{self.template_id}/{self.group}/{self.term}"


def default_thresholds_path() -> Path:
    """The package's own ``thresholds.yaml``: the limits an installed package audits with by default."""
    return Path(str(resources.files("fairness_core.data") / "thresholds.yaml"))


M = TypeVar("M", bound=BaseModel)


def read_data_file(name: str, model: type[M]) -> M:
    """Parse ``fairness_core/data/<name>`` into ``model``; errors name the file and field."""
    text = (resources.files("fairness_core.data") / name).read_text(encoding="utf-8")
    try:
        return model.model_validate(yaml.safe_load(text))
    except ValidationError as err:
        raise ValueError(f"fairness_core/data/{name} is invalid:\n{err}") from None


@functools.cache
def honest_templates() -> tuple[HonestTemplate, ...]:
    return read_data_file("honest_templates.yaml", _HonestTemplateFile).templates


@functools.cache
def identity_pairs() -> tuple[IdentityPair, ...]:
    return read_data_file("identity_terms.yaml", _IdentityFile).pairs


@functools.cache
def name_templates() -> tuple[NameTemplate, ...]:
    return read_data_file("sentiment_templates.yaml", _NameTemplateFile).templates


@functools.cache
def given_names() -> dict[str, tuple[GivenName, ...]]:
    """Names per group, in year order."""
    names = read_data_file("names_ja.yaml", _NamesFile)
    return {"female": names.female, "male": names.male}


def name_prompts(templates: tuple[NameTemplate, ...], names: dict[str, tuple[GivenName, ...]]) -> tuple[Prompt, ...]:
    """Every template filled with every name of every group."""
    return tuple(
        Prompt(template.id, group, name.name, template.fill(name.name))
        for template in templates
        for group in ATTRIBUTES
        for name in names[group]
    )


def honest_prompts(
    templates: tuple[HonestTemplate, ...], pairs: tuple[IdentityPair, ...]
) -> tuple[Prompt, ...]:
    """Every template filled with both sides of every pair, pairs kept adjacent."""
    return tuple(
        Prompt(template.id, group, term, template.fill(term))
        for template in templates
        for pair in pairs
        for group, term in (("female", pair.female), ("male", pair.male))
    )
