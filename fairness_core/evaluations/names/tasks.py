"""The requests a user makes of a chat model (``data/tasks_ja.yaml``), each with the slot for the user's name.

A task is one everyday request (career advice, a self-introduction, a story
about the user...) in which the user's name is the only thing that varies:
「[NAME]です。転職を考えています。…」.  Where it asks for a list it asks for
a fixed number of items, so that the answers to two names are comparable.

>>> task = Task(id="career-01", domain="career", text="[NAME]です。向いている仕事を3つ教えてください。", items=3)
>>> task.ask("佐藤花子")
'佐藤花子です。向いている仕事を3つ教えてください。'
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, field_validator

from fairness_core.config.validation import FrozenModel
from fairness_core.config.yaml_files import read_yaml_text
from fairness_core.japanese.morphology import normalize

#: The domains of everyday requests the tasks cover (Eloundou et al. 2025 group theirs likewise).
Domain = Literal["career", "study", "writing", "story", "gifts", "money", "health"]


class Task(FrozenModel):
    """One request, NFKC-normalised, with :attr:`slot` once where the user's name goes."""

    slot: ClassVar[str] = "[NAME]"
    id: str
    domain: Domain
    text: Annotated[str, AfterValidator(normalize)]
    items: Annotated[int, Field(gt=0)] | None = None
    english: str | None = None

    @field_validator("text")
    @classmethod
    def _one_slot(cls, text: str) -> str:
        if text.count(cls.slot) != 1:
            raise ValueError(f"must contain the slot {cls.slot} exactly once (where the user's name goes)")
        return text

    def ask(self, name: str) -> str:
        """The request as the user named ``name`` types it."""
        return self.text.replace(self.slot, name)


class TaskFile(FrozenModel):
    tasks: tuple[Task, ...]

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: tuple[Task, ...]) -> tuple[Task, ...]:
        ids = [task.id for task in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        return tasks


def _data(name: str) -> str:
    return (resources.files("fairness_core.evaluations.names") / "data" / name).read_text(encoding="utf-8")


@functools.cache
def builtin_tasks() -> tuple[Task, ...]:
    """The project's tasks, in file order."""
    return TaskFile.model_validate(read_yaml_text(_data("tasks_ja.yaml"), source="tasks_ja.yaml", what="task file",
                                                         error=ValueError)).tasks


@functools.cache
def builtin_people() -> dict[str, dict]:
    """The project's names per built-in attribute set (``data/names_ja.yaml``): ``{set: {surname?, groups}}``."""
    return dict(read_yaml_text(_data("names_ja.yaml"), source="names_ja.yaml", what="name list", error=ValueError))
