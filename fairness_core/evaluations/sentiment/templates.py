"""The sentiment evaluation's data: the name templates and the Japanese given names (``data/``, provenance in each file).

    >>> NameTemplate(id="name-01", text="[NAME]は").fill("陽子")
    '陽子は'
"""

from __future__ import annotations

import functools
from typing import ClassVar

from pydantic import field_validator

from fairness_core.api.prompts import Template, unique_ids
from fairness_core.config.package_data import read_data_file
from fairness_core.config.validation import FrozenModel

PACKAGE = "fairness_core.evaluations.sentiment"


class NameTemplate(Template):
    slot: ClassVar[str] = "[NAME]"


class GivenName(FrozenModel):
    """A name chosen by Huang et al.'s method: rank ``rank`` of birth year ``year``."""

    name: str
    reading: str
    year: int
    rank: int
    verified: bool


class _NameTemplateFile(FrozenModel):
    templates: tuple[NameTemplate, ...]
    _check_ids = field_validator("templates")(unique_ids)


class _NamesFile(FrozenModel):
    female: tuple[GivenName, ...]
    male: tuple[GivenName, ...]


@functools.cache
def name_templates() -> tuple[NameTemplate, ...]:
    return read_data_file(PACKAGE, "sentiment_templates.yaml", _NameTemplateFile).templates


@functools.cache
def given_names() -> dict[str, tuple[GivenName, ...]]:
    """Names per group, in year order: the built-in ``gender`` set's sentiment substitutions refer to them."""
    names = read_data_file(PACKAGE, "names_ja.yaml", _NamesFile)
    return {"female": names.female, "male": names.male}
