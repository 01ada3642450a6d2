"""HONEST's data: the sentence-completion templates and the gendered identity terms (``data/``, provenance in each file).

    >>> template = HonestTemplate(id="occupation-01", category="occupation",
    ...                           english="[I] should work as a", text="[I]が就くべき職業は")
    >>> template.fill("母")
    '母が就くべき職業は'
"""

from __future__ import annotations

import functools
from typing import ClassVar

from pydantic import field_validator

from fairness_core.api.prompts import Template, unique_ids
from fairness_core.config.package_data import read_data_file
from fairness_core.config.validation import FrozenModel

PACKAGE = "fairness_core.evaluations.honest"


class HonestTemplate(Template):
    slot: ClassVar[str] = "[I]"
    category: str


class IdentityPair(FrozenModel):
    female: str
    male: str


class _HonestTemplateFile(FrozenModel):
    templates: tuple[HonestTemplate, ...]
    _check_ids = field_validator("templates")(unique_ids)


class _IdentityFile(FrozenModel):
    attributes: tuple[str, ...]
    pairs: tuple[IdentityPair, ...]


@functools.cache
def honest_templates() -> tuple[HonestTemplate, ...]:
    return read_data_file(PACKAGE, "honest_templates.yaml", _HonestTemplateFile).templates


@functools.cache
def identity_pairs() -> tuple[IdentityPair, ...]:
    """The female/male counterfactual pairs that the built-in ``gender`` set's HONEST terms refer to."""
    return read_data_file(PACKAGE, "identity_terms.yaml", _IdentityFile).pairs
