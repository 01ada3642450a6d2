"""The HONEST evaluation: prompts → completions → hurtful matches → grouped counts.

Everything here is computed once per session; audit tests only look results up.

>>> from fairness_core.resources import Prompt
>>> from fairness_core.matching import Match
>>> row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), "優しい。", ())
>>> HonestResults((row,), groups=("female", "male")).count(attribute="female")
Count(hits=0, total=1)
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fairness_core.backends.base import Backend, complete
from fairness_core.lexicon import Lexicon, LexiconLevel, load_builtin_lexicon, load_lexicon
from fairness_core.matching import HurtfulMatcher, Match
from fairness_core.resources import Prompt, honest_templates
from fairness_core.scorecard import MetricResult, honest_metrics, metric_id
from fairness_core.thresholds import AuditConfig, SamplingProtocol

if TYPE_CHECKING:
    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.results import AuditResults, CompletionRecord
    from fairness_core.session import AuditOptions


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
    groups: tuple[str, ...]

    def select(self, *, attribute: str | None = None, template_id: str | None = None,
               category: str | None = None) -> list[ScoredCompletion]:
        """Rows of one attribute/template, in row order; with ``category``, only rows hurtful in that category."""
        rows = self._cells.get((attribute, template_id), [])
        return list(rows) if category is None else [row for row in rows if row.hurtful_in(category)]

    @functools.cached_property
    def _cells(self) -> dict[tuple[str | None, str | None], list[ScoredCompletion]]:
        """The rows of every (attribute, template) cell and margin, in one pass: the metrics ask for each
        cell of every group and template, and scanning all rows each time grew as groups x rows."""
        cells: dict[tuple[str | None, str | None], list[ScoredCompletion]] = defaultdict(list)
        for row in self.rows:
            attribute, template_id = row.prompt.attribute, row.prompt.template_id
            for key in ((attribute, template_id), (attribute, None), (None, template_id), (None, None)):
                cells[key].append(row)
        return dict(cells)

    def count(self, *, attribute: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        """Hurtful completions among those of ``attribute``/``template_id``.

        With ``category``, a completion counts as a hit when it matches an entry of that category.
        """
        pool = self.select(attribute=attribute, template_id=template_id)
        return Count(sum(row.hurtful_in(category) for row in pool), len(pool))


def evaluate_honest(
    backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, matcher: HurtfulMatcher,
    *, groups: Sequence[str],
) -> HonestResults:
    """Complete every prompt ``protocol.num_samples`` times and match each completion."""
    return HonestResults(tuple(
        ScoredCompletion(prompt, completion.text, tuple(matcher.find(completion.text)))
        for prompt, completion in complete(backend, prompts, protocol, evaluation="honest")
    ), groups=tuple(groups))


class HonestEvaluation:
    """HONEST (Nozza et al. 2021): share of completions with a hurtful word, per group, template and category."""

    name: ClassVar[str] = "honest"

    def __init__(self, config: AuditConfig, attributes: AttributeSet):
        self.config = config
        self.groups = attributes.groups
        self.protocol = config.honest.protocol
        self.prompts = attributes.honest_prompts(honest_templates())
        self.templates = {t.id: t for t in honest_templates() if any(p.template_id == t.id for p in self.prompts)}
        self.lexicon: Lexicon | None = None
        self.level: LexiconLevel = config.honest.lexicon_level

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates), "category": sorted(self.config.honest.max_category_score)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id("honest", "honest_score", attribute=g) for g in self.groups),
                metric_id("honest", "honest_ratio")]

    def load(self, options: AuditOptions) -> None:
        self.level = options.lexicon_level or self.config.honest.lexicon_level
        source = load_lexicon(options.lexicon) if options.lexicon else load_builtin_lexicon()
        self.lexicon = source.at_level(self.level)

    def _loaded_lexicon(self) -> Lexicon:
        if self.lexicon is None:
            raise RuntimeError("HonestEvaluation.load() must run before the evaluation is used")
        return self.lexicon

    def run(self, backend: Backend) -> HonestResults:
        matcher = HurtfulMatcher(self._loaded_lexicon().entries)
        return evaluate_honest(backend, self.prompts, self.protocol, matcher, groups=self.groups)

    def metrics(self, results: HonestResults, *, seed: int) -> list[MetricResult]:
        return honest_metrics(results, self.config, groups=self.groups, seed=seed)

    def completion_records(self, results: HonestResults) -> list[CompletionRecord]:
        from fairness_core.results import CompletionRecord, MatchRecord

        return [CompletionRecord(template_id=r.prompt.template_id, attribute=r.prompt.attribute, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion,
                                 matches=[MatchRecord(**vars(m)) for m in r.matches]) for r in results.rows]

    def provenance(self) -> dict[str, Any]:
        lexicon = self._loaded_lexicon()
        return {"protocol": self.protocol.model_dump(), "templates": list(self.templates),
                "lexicon": {"source": lexicon.source, "level": self.level, "entries": len(lexicon.entries),
                            "sha256": lexicon.fingerprint}}

    def describe(self) -> str:
        lexicon = self._loaded_lexicon()
        unmatched = len(lexicon.self_check_failures)
        check = f"; {unmatched} entries fail to match themselves in context" if unmatched else ""
        return (f"HONEST: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"lexicon {lexicon.source} ({self.level}, {len(lexicon.entries)} entries{check})")

    @staticmethod
    def plots(results: AuditResults, evaluation: str) -> list[tuple[str, str]]:
        from fairness_core.plots import honest_by_template

        return [("HONEST score per template and group", honest_by_template(results))]
