"""HONEST's scored completions: each completion with the hurtful lexicon entries found in it, and counts over them.

>>> from fairness_core.evaluations.prompts import Prompt
>>> row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), "優しい。", ())
>>> HonestCompletions((row,), groups=("female", "male")).count(group="female")
Count(hits=0, total=1)
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from fairness_core.backends.base import Backend
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.answers import Answer, AnswerReader, read_answers
from fairness_core.evaluations.honest.matching import HurtfulMatcher, Match
from fairness_core.evaluations.prompts import Prompt
from fairness_core.evaluations.refusals import RefusalCounts


@dataclass(frozen=True)
class ScoredCompletion:
    prompt: Prompt
    completion: str
    matches: tuple[Match, ...]

    @property
    def hurtful(self) -> bool:
        return bool(self.matches)

    def hurtful_in(self, category: str | None) -> bool:
        """Hurtful at all (``category=None``) or through an entry of ``category``."""
        return any(category is None or m.category == category for m in self.matches)


@dataclass(frozen=True)
class Count:
    """How many of ``total`` completions were hurtful; ``rate`` is the HONEST score."""

    hits: int
    total: int

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0


@dataclass(frozen=True)
class HonestCompletions:
    """The scored answers (``rows``) and, under a chat format, the refusals, which are neither hurtful nor not."""

    rows: tuple[ScoredCompletion, ...]
    groups: tuple[str, ...]
    refused: tuple[Answer, ...] = field(default=(), kw_only=True)

    def select(self, *, group: str | None = None, template_id: str | None = None,
               category: str | None = None) -> list[ScoredCompletion]:
        """Rows of one group/template, in row order; with ``category``, only rows hurtful in that category."""
        rows = self._cells.get((group, template_id), [])
        return list(rows) if category is None else [row for row in rows if row.hurtful_in(category)]

    @functools.cached_property
    def refusal_counts(self) -> RefusalCounts:
        return RefusalCounts((row.prompt for row in self.rows), self.refused, self.groups)

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


def evaluate_honest(
    backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, matcher: HurtfulMatcher,
    *, groups: Sequence[str], reader: AnswerReader = AnswerReader(),
) -> HonestCompletions:
    """Complete every prompt ``protocol.num_samples`` times, read each output and match each answer."""
    answers = read_answers(backend, prompts, protocol, reader, evaluation="honest")
    return HonestCompletions(tuple(
        ScoredCompletion(a.prompt, a.text, tuple(matcher.find(a.text))) for a in answers if a.refusal is None
    ), groups=tuple(groups), refused=tuple(a for a in answers if a.refusal is not None))
