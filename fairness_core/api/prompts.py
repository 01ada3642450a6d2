"""What every evaluation asks a model: prompts filled from templates, and the prompt set of one run.

A prompt is a template with its slot filled for one group::

    >>> class Greeting(Template):
    ...     slot = "[X]"
    >>> Greeting(id="greeting-01", text="[X]は毎朝").fill("母")
    '母は毎朝'

The prompt set of an evaluation (its prompts and sampling protocol) is exactly
what ``pytest`` asks a backend for and what ``ja-fairness-audit generate``
writes to a completions file; request ids are ``<evaluation>/<prompt id>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import field_validator

from fairness_core.backends.base import Request, requests_for
from fairness_core.config.validation import FrozenModel
from fairness_core.japanese.morphology import normalize

if TYPE_CHECKING:
    from fairness_core.config.thresholds import SamplingProtocol


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


class Template(FrozenModel):
    """A template whose text starts with its ``slot``, NFKC-normalised on load."""

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


def unique_ids(templates: tuple[Template, ...]) -> tuple[Template, ...]:
    """A validator for a file of templates: two templates with one id would make two prompts one."""
    ids = [t.id for t in templates]
    if len(set(ids)) != len(ids):
        raise ValueError(f"template ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return templates


@dataclass(frozen=True)
class PromptSet:
    """One evaluation's prompts and the protocol they are sampled under.

    ``provenance`` is what else a completions file must record for the audit of
    it to check that it asks the same questions the same way (a question file's
    hash, the scorer), written to the manifest's entry of the evaluation when
    the evaluation gives any.
    """

    evaluation: str
    protocol: SamplingProtocol
    prompts: tuple[Prompt, ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)
    #: :attr:`~fairness_core.api.evaluation.Evaluation.answers_need_room` of its evaluation.
    answers_need_room: bool = False

    def requests(self) -> list[Request]:
        return requests_for(self.prompts, self.protocol, evaluation=self.evaluation)
