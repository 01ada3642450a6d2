"""HONEST's scored completions: each completion with the hurtful lexicon entries found in it, and counts over them.

>>> from fairness_core.api.prompts import Prompt
>>> row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), "優しい。", ())
>>> HonestCompletions((row,), groups=("female", "male")).count(group="female")
Count(hits=0, total=1)
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from fairness_core.api.answers import Answer, AnswerReader, read_answers
from fairness_core.api.prompts import Prompt
from fairness_core.api.refusals import RefusalCounts
from fairness_core.backends.base import Backend
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.honest.matching import HurtfulMatcher, Match


@dataclass(frozen=True)
class ScoredCompletion:
    prompt: Prompt
    completion: str
    matches: tuple[Match, ...]
    #: The prompt's sample it is (:attr:`fairness_core.api.answers.Answer.sample`).
    sample: int = 0

    @property
    def hurtful(self) -> bool:
        return bool(self.matches)

    def hurtful_in(self, category: str | None) -> bool:
        """Hurtful at all (``category=None``) or through an entry of ``category``."""
        return any(category is None or m.category == category for m in self.matches)


@dataclass(frozen=True)
class Count:
    """How many of ``total`` completions were hurtful; ``rate`` is the HONEST score, ``None`` over no answers."""

    hits: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.hits / self.total if self.total else None


@dataclass(frozen=True)
class HonestCompletions:
    """The scored answers (``rows``) and, under a chat format, the refusals and the withheld outputs, which are
    neither hurtful nor not."""

    rows: Sequence[ScoredCompletion]
    groups: tuple[str, ...]
    refused: tuple[Answer, ...] = field(default=(), kw_only=True)
    withheld: tuple[Answer, ...] = field(default=(), kw_only=True)

    def select(self, *, group: str | None = None, template_id: str | None = None,
               category: str | None = None) -> list[ScoredCompletion]:
        """Rows of one group/template, in row order; with ``category``, only rows hurtful in that category."""
        rows = self._cells.get((group, template_id), [])
        return list(rows) if category is None else [row for row in rows if row.hurtful_in(category)]

    def unanswered(self, group: str, template_id: str | None = None) -> int:
        """How many outputs of ``group`` (in one template, or all) were refusals or withheld: not scored."""
        return sum(a.prompt.group == group and template_id in (None, a.prompt.template_id)
                   for a in (*self.refused, *self.withheld))

    @functools.cached_property
    def refusal_counts(self) -> RefusalCounts:
        return RefusalCounts((row.prompt for row in self.rows), self.refused, self.groups, withheld=self.withheld)

    @functools.cached_property
    def _cells(self) -> dict[tuple[str | None, str | None], list[ScoredCompletion]]:
        """The rows of every (group, template) cell and margin, in one pass: the metrics ask for each
        cell of every group and template, and scanning all rows each time grew as groups x rows."""
        cells: dict[tuple[str | None, str | None], list[ScoredCompletion]] = defaultdict(list)
        for row in self.rows:
            group, template_id = row.prompt.group, row.prompt.template_id
            for key in ((group, template_id), (group, None), (None, template_id), (None, None)):
                cells[key].append(row)
        return dict(cells)

    def count(self, *, group: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        """Hurtful completions among those of ``group``/``template_id``.

        With ``category``, a completion counts as a hit when it matches an entry of that category.
        """
        pool = self.select(group=group, template_id=template_id)
        return Count(sum(row.hurtful_in(category) for row in pool), len(pool))

    def template_ids(self) -> list[str]:
        """The templates of every output (answers, refusals, withheld), in order of first appearance."""
        outputs = (*(row.prompt for row in self.rows), *(a.prompt for a in (*self.refused, *self.withheld)))
        return list(dict.fromkeys(prompt.template_id for prompt in outputs))

    def unit_counts(self, group: str, *, by: Literal["prompt", "term"] = "prompt") -> list[tuple[int, int]]:
        """``(hurtful, total)`` of each prompt (or each term) of ``group``, in order of first appearance.

        A prompt is the bootstrap's and the permutation test's resampling unit; a
        term's counts show how much the terms of a group differ beyond chance.
        """
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in self.select(group=group):
            cell = counts[row.prompt.text if by == "prompt" else row.prompt.term]
            cell[0] += row.hurtful
            cell[1] += 1
        return [(hits, total) for hits, total in counts.values()]

    def by_prompt(self) -> dict[Prompt, list[ScoredCompletion]]:
        """Each prompt's rows, prompts in order of first appearance, a prompt's rows in row order."""
        found: dict[Prompt, list[ScoredCompletion]] = defaultdict(list)
        for row in self.rows:
            found[row.prompt].append(row)
        return dict(found)

    def outcome_flags(self, categories: Sequence[str]) -> np.ndarray:
        """``(samples, prompts, 1 + len(categories))``: each sample of each prompt hurtful at all, then per category.

        For the completions of a round (every prompt the same number of times,
        prompts in request order), as the sequential test counts them.
        """
        rows = list(self.by_prompt().values())
        if len({len(r) for r in rows}) > 1:
            raise ValueError("outcome_flags needs the same number of completions of every prompt")
        return np.array([[[row.hurtful, *(row.hurtful_in(c) for c in categories)] for row in prompt_rows]
                         for prompt_rows in rows], dtype=bool).transpose(1, 0, 2)

    @staticmethod
    def merged(parts: Sequence[HonestCompletions]) -> HonestCompletions:
        """The rounds ``parts`` as one run: each prompt's rows of every round together, prompts in their order.

        A run that reached the fixed protocol's budget in rounds is then, row for
        row, the fixed run of the same seed.
        """
        by_prompt: dict[Prompt, list[ScoredCompletion]] = {}
        for part in parts:
            for prompt, rows in part.by_prompt().items():
                by_prompt.setdefault(prompt, []).extend(rows)
        return HonestCompletions(tuple(row for rows in by_prompt.values() for row in rows), parts[0].groups,
                                 refused=tuple(answer for part in parts for answer in part.refused),
                                 withheld=tuple(answer for part in parts for answer in part.withheld))


def evaluate_honest(
    backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, matcher: HurtfulMatcher,
    *, groups: Sequence[str], reader: AnswerReader = AnswerReader(), samples: range | None = None,
) -> HonestCompletions:
    """Complete every prompt ``protocol.num_samples`` times (or only the samples ``samples``), read each output and
    match each answer."""
    answers = read_answers(backend, prompts, protocol, reader, evaluation="honest", samples=samples)
    return HonestCompletions(tuple(
        ScoredCompletion(a.prompt, a.text, tuple(matcher.find(a.text)), a.sample) for a in answers if a.scored
    ), groups=tuple(groups), refused=tuple(a for a in answers if a.refusal is not None),
        withheld=tuple(a for a in answers if a.withheld is not None))
