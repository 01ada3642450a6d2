"""Sentiment group fairness (Huang et al. 2020): name prompts → completions → scores → distances.

Only the completion is scored, never the prompt: the names themselves would
otherwise move the score (several Japanese names are also sentiment words).

>>> from fairness_core.resources import Prompt
>>> rows = (ScoredSentiment(Prompt("name-01", "female", "陽子", "陽子は"), "優しい。", 1.0),
...         ScoredSentiment(Prompt("name-01", "male", "蓮", "蓮は"), "怖い。", 0.0))
>>> SentimentResults(rows, groups=("female", "male")).means()
{'female': 1.0, 'male': 0.0}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fairness_core.backends.base import Backend, complete
from fairness_core.demo.registry import is_demo
from fairness_core.metrics import average_group_fairness, counterfactual_fairness, group_distances
from fairness_core.resources import Prompt
from fairness_core.scorecard import MetricResult, metric_id, sentiment_metrics
from fairness_core.sentiment import DEFAULT_CLASSIFIER, LEXICON_SCORER, ScorerError, SentimentScorer, load_scorer
from fairness_core.thresholds import AuditConfig, SamplingProtocol

if TYPE_CHECKING:
    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.results import AuditResults, CompletionRecord
    from fairness_core.session import AuditOptions


@dataclass(frozen=True)
class ScoredSentiment:
    prompt: Prompt
    completion: str
    score: float


@dataclass(frozen=True)
class SentimentResults:
    rows: tuple[ScoredSentiment, ...]
    groups: tuple[str, ...]

    def select(self, *, attribute: str | None = None, template_id: str | None = None) -> list[ScoredSentiment]:
        return [row for row in self.rows
                if (attribute is None or row.prompt.attribute == attribute)
                and (template_id is None or row.prompt.template_id == template_id)]

    def scores(self, *, template_id: str | None = None) -> dict[str, list[float]]:
        """Scores per group, over all templates or one."""
        return {g: [r.score for r in self.select(attribute=g, template_id=template_id)] for g in self.groups}

    def distances(self, *, template_id: str | None = None) -> dict[str, float]:
        """W1 between each attribute's scores and the pooled scores."""
        return group_distances(self.scores(template_id=template_id))

    def average_group_fairness(self, *, template_id: str | None = None) -> float:
        return average_group_fairness(self.scores(template_id=template_id))

    def means(self, *, template_id: str | None = None) -> dict[str, float]:
        scores = self.scores(template_id=template_id)
        empty = [a for a, s in scores.items() if not s]
        if empty:
            raise ValueError(f"No sentiment scores for {empty}" + (f" in template {template_id!r}" if template_id else ""))
        return {a: sum(s) / len(s) for a, s in scores.items()}

    def counterfactual_fairness(self, *, template_id: str | None = None) -> float:
        """Mean W1 over templates (or one) and pairs of names from different attributes."""
        grouped: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
        for row in self.select(template_id=template_id):
            grouped[row.prompt.template_id][row.prompt.attribute][row.prompt.term].append(row.score)
        return counterfactual_fairness(grouped)


def evaluate_sentiment(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol,
                       scorer: SentimentScorer, *, groups: Sequence[str]) -> SentimentResults:
    """Complete every prompt ``protocol.num_samples`` times and score each completion."""
    pairs = complete(backend, prompts, protocol, evaluation="sentiment")
    scores = scorer.score([completion.text for _, completion in pairs])
    return SentimentResults(tuple(
        ScoredSentiment(prompt, completion.text, score)
        for (prompt, completion), score in zip(pairs, scores, strict=True)
    ), groups=tuple(groups))


class SentimentEvaluation:
    """Sentiment group fairness (Huang et al. 2020): W1 of each group's completion sentiment to the pool."""

    name: ClassVar[str] = "sentiment"

    def __init__(self, config: AuditConfig, attributes: AttributeSet):
        self.config = config
        self.groups = attributes.groups
        self.protocol = config.sentiment.protocol
        self.templates = {t.id: t for t in attributes.sentiment_templates()}
        self.prompts = attributes.sentiment_prompts()
        self.scorer: SentimentScorer | None = None

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id("sentiment", "group_distance", attribute=g) for g in self.groups),
                *(metric_id("sentiment", m) for m in ("average_group_fairness", "mean_gap",
                                                      "counterfactual_fairness"))]

    def load(self, options: AuditOptions) -> None:
        # Demo models default to the offline scorer so that the quickstart needs no download.
        spec = options.sentiment or (LEXICON_SCORER if is_demo(options.model) else DEFAULT_CLASSIFIER)
        try:
            self.scorer = load_scorer(spec, label_positivity=self.config.sentiment.label_positivity)
        except ScorerError as err:
            if options.sentiment:
                raise
            raise ScorerError(f"No --sentiment was given, so the default classifier was tried: {err}") from None

    def _loaded_scorer(self) -> SentimentScorer:
        if self.scorer is None:
            raise RuntimeError("SentimentEvaluation.load() must run before the evaluation is used")
        return self.scorer

    def run(self, backend: Backend) -> SentimentResults:
        return evaluate_sentiment(backend, self.prompts, self.protocol, self._loaded_scorer(), groups=self.groups)

    def metrics(self, results: SentimentResults, *, seed: int) -> list[MetricResult]:
        return sentiment_metrics(results, self.config, groups=self.groups, seed=seed)

    def completion_records(self, results: SentimentResults) -> list[CompletionRecord]:
        from fairness_core.results import CompletionRecord

        return [CompletionRecord(template_id=r.prompt.template_id, attribute=r.prompt.attribute, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion, score=r.score) for r in results.rows]

    def provenance(self) -> dict[str, Any]:
        return {"protocol": self.protocol.model_dump(), "templates": list(self.templates),
                "scorer": self._loaded_scorer().description}

    def describe(self) -> str:
        return (f"sentiment: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"scorer {self._loaded_scorer().description}")

    @staticmethod
    def plots(results: AuditResults, evaluation: str) -> list[tuple[str, str]]:
        from fairness_core.plots import sentiment_ecdf

        return [("Sentiment score distribution per group (ECDF)", sentiment_ecdf(results))]
