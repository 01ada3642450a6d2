"""The framings of audit prompts for chat models (``data/chat_framings_ja.yaml``), by id.

A framing is the user turn a template is put in under a chat prompt format.
Its text changes what is measured, so a protocol names it by id and the run
fingerprints its text (:func:`framing_text`).

>>> "{template}" in framing_text("continue-v1")
True
"""

from __future__ import annotations

import functools
from importlib import resources

import yaml
from pydantic import BaseModel, field_validator

#: What a framing's text must hold once: where the filled template goes.
PLACEHOLDER = "{template}"


class Framing(BaseModel, frozen=True, extra="forbid"):
    user: str

    @field_validator("user")
    @classmethod
    def _one_placeholder(cls, user: str) -> str:
        if user.count(PLACEHOLDER) != 1:
            raise ValueError(f"must hold {PLACEHOLDER} exactly once (where the filled template goes)")
        return user


class FramingFile(BaseModel, frozen=True, extra="forbid"):
    framings: dict[str, Framing]


@functools.cache
def framings() -> dict[str, Framing]:
    """Every shipped framing by id."""
    text = (resources.files("fairness_core.data") / "chat_framings_ja.yaml").read_text(encoding="utf-8")
    return FramingFile.model_validate(yaml.safe_load(text)).framings


def framing_text(framing_id: str) -> str:
    """The user turn of ``framing_id``, with :data:`PLACEHOLDER` where the template goes."""
    return framings()[framing_id].user
