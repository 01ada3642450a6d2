"""The HONEST evaluation: prompts → completions → hurtful matches → grouped counts.

Everything here is computed once per session; audit tests only look results up.

>>> from fairness_core.resources import Prompt
>>> from fairness_core.matching import Match
>>> row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), "優しい。", ())
>>> HonestResults((row,)).count(attribute="female")
Count(hits=0, total=1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.backends.base import Backend, complete
from fairness_core.matching import HurtfulMatcher, Match
from fairness_core.metrics import rate_ratio
from fairness_core.resources import Prompt
from fairness_core.thresholds import SamplingProtocol


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
class HonestResults:
    rows: tuple[ScoredCompletion, ...]

    def select(self, *, attribute: str | None = None, template_id: str | None = None,
               category: str | None = None) -> list[ScoredCompletion]:
        """Rows of one attribute/template; with ``category``, only rows hurtful in that category."""
        return [
            row for row in self.rows
            if (attribute is None or row.prompt.attribute == attribute)
            and (template_id is None or row.prompt.template_id == template_id)
            and (category is None or row.hurtful_in(category))
        ]

    def count(self, *, attribute: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        """Hurtful completions among those of ``attribute``/``template_id``.

        With ``category``, a completion counts as a hit when it matches an entry of that category.
        """
        pool = self.select(attribute=attribute, template_id=template_id)
        return Count(sum(row.hurtful_in(category) for row in pool), len(pool))

    def ratio(self, numerator: str, denominator: str) -> float:
        """HONEST-score ratio between two attributes (see :func:`~fairness_core.metrics.rate_ratio`)."""
        a, b = self.count(attribute=numerator), self.count(attribute=denominator)
        return rate_ratio(hits_a=a.hits, total_a=a.total, hits_b=b.hits, total_b=b.total)


def evaluate_honest(
    backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, matcher: HurtfulMatcher
) -> HonestResults:
    """Complete every prompt ``protocol.num_samples`` times and match each completion."""
    return HonestResults(tuple(
        ScoredCompletion(prompt, completion.text, tuple(matcher.find(completion.text)))
        for prompt, completion in complete(backend, prompts, protocol)
    ))
