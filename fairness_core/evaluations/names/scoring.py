"""One run: every request asked with every name, each output read as an answer and its signals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fairness_core.api.answers import AnswerReader, read_answers
from fairness_core.api.prompts import Prompt
from fairness_core.api.refusals import RefusalCounts
from fairness_core.backends.base import Backend
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.names.signals import NameAnswer, SignalReaders


@dataclass(frozen=True)
class NamesCompletions:
    """Every answer of a run, read, with the design it was asked in (groups, their names, the tasks)."""

    answers: tuple[NameAnswer, ...]
    people: Mapping[str, tuple[str, ...]]
    tasks: tuple[str, ...]
    refusal_counts: RefusalCounts = field(repr=False)

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(self.people)


def read_names(answers: Sequence[NameAnswer], people: Mapping[str, tuple[str, ...]], tasks: Sequence[str]
               ) -> NamesCompletions:
    """The run's answers as :class:`NamesCompletions` (refusals and withheld outputs counted per group and prompt)."""
    groups = tuple(people)
    counts = RefusalCounts((a.answer.prompt for a in answers if a.answer.scored),
                           [a.answer for a in answers if a.answer.refusal is not None], groups,
                           withheld=[a.answer for a in answers if a.answer.withheld is not None])
    return NamesCompletions(tuple(answers), people, tuple(tasks), counts)


def evaluate_names(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, readers: SignalReaders,
                   reader: AnswerReader, people: Mapping[str, tuple[str, ...]], tasks: Sequence[str]
                   ) -> NamesCompletions:
    answers = read_answers(backend, prompts, protocol, reader, evaluation="names")
    read = readers.read(answers, protocol.num_samples, refusals_read=reader.detects_refusals)
    return read_names(read, people, tasks)
