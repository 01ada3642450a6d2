"""Sentiment group fairness (Huang et al. 2020): name prompts → completions → scores → distances → metrics.

This module owns everything specific to the evaluation: its ``thresholds.yaml``
section (:class:`SentimentConfig`), its scored completions, its metrics, the
evidence a violation shows and its plot; the scorers live in
:mod:`fairness_core.sentiment`.

Only the completion is scored, never the prompt: the names themselves would
otherwise move the score (several Japanese names are also sentiment words).

>>> from fairness_core.resources import Prompt
>>> rows = (ScoredSentiment(Prompt("name-01", "female", "陽子", "陽子は"), "優しい。", 1.0),
...         ScoredSentiment(Prompt("name-01", "male", "蓮", "蓮は"), "怖い。", 0.0))
>>> SentimentCompletions(rows, groups=("female", "male")).means()
{'female': 1.0, 'male': 0.0}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from fairness_core.backends.base import Backend, complete
from fairness_core.demo.registry import is_demo
from fairness_core.locations import MissingFolderError, resolve_location
from fairness_core.metrics import (
    average_group_fairness,
    counterfactual_fairness,
    group_distances,
    largest_mean_gap,
    wasserstein1,
)
from fairness_core.resources import Prompt
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.sentiment import (
    DEFAULT_CLASSIFIER,
    LEXICON_SCORER,
    ScorerError,
    SentimentScorer,
    cannot_load,
    load_scorer,
)
from fairness_core.statistics import bootstrap_interval, bootstrap_intervals, permutation_pvalue
from fairness_core.thresholds import AuditConfig, Rate, SamplingProtocol
from fairness_core.validation import StrictModel
from fairness_core.violations import Evidence

if TYPE_CHECKING:
    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.audit_options import AuditOptions
    from fairness_core.results import AuditResults, CompletionRecord

#: The sentiment ECDF's x axis: the scores' [0, 1] with a margin, so that no step lies on the frame.
X_RANGE = (-0.02, 1.02)


class SentimentConfig(StrictModel):
    """Limits of the sentiment group-fairness audit (Huang et al. 2020).

    Distances are Wasserstein-1 between score distributions in [0, 1].
    ``label_positivity`` maps a classifier's labels to positivity when their
    names are not recognised (e.g. ``{LABEL_0: 0.0, LABEL_1: 1.0}``).
    """

    protocol: SamplingProtocol = SamplingProtocol(num_samples=1, max_new_tokens=40)
    label_positivity: dict[str, Rate] = {}
    max_group_distance: Rate
    max_average_group_fairness: Rate
    max_template_distance: Rate
    max_mean_gap: Rate
    max_counterfactual_distance: Rate


@dataclass(frozen=True)
class ScoredSentiment:
    prompt: Prompt
    completion: str
    score: float


@dataclass(frozen=True)
class SentimentCompletions:
    rows: tuple[ScoredSentiment, ...]
    groups: tuple[str, ...]

    def select(self, *, group: str | None = None, template_id: str | None = None) -> list[ScoredSentiment]:
        return [row for row in self.rows
                if (group is None or row.prompt.group == group)
                and (template_id is None or row.prompt.template_id == template_id)]

    def scores(self, *, template_id: str | None = None) -> dict[str, list[float]]:
        """Scores per group, over all templates or one."""
        return {g: [r.score for r in self.select(group=g, template_id=template_id)] for g in self.groups}

    def distances(self, *, template_id: str | None = None) -> dict[str, float]:
        """W1 between each group's scores and the pooled scores."""
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
            grouped[row.prompt.template_id][row.prompt.group][row.prompt.term].append(row.score)
        return counterfactual_fairness(grouped)


def _prompt_scores(results: SentimentCompletions, group: str, template_id: str | None = None) -> list[list[float]]:
    """Scores per prompt of ``group``: the bootstrap's resampling unit."""
    scores: dict[str, list[float]] = defaultdict(list)
    for row in results.select(group=group, template_id=template_id):
        scores[row.prompt.text].append(row.score)
    return list(scores.values())


def _flat(units):
    return [s for unit in units for s in unit]


def _mean(units) -> float:
    values = _flat(units)
    return sum(values) / len(values)


def _gap(*groups) -> float:
    """Sentiment mean gap: first minus second group with two groups (signed, for the permutation test),
    the largest pairwise difference with more."""
    if len(groups) == 2:
        return _mean(groups[0]) - _mean(groups[1])
    return largest_mean_gap({str(i): _flat(g) for i, g in enumerate(groups)}).value


def sentiment_metrics(results: SentimentCompletions, limits: SentimentConfig, *, groups: Sequence[str],
                      seed: int = 0) -> list[MetricResult]:
    """Every sentiment number: W1 of each group to the pool (overall and per template), AGF, mean gap,
    counterfactual fairness."""
    out = []
    templates = list(dict.fromkeys(r.prompt.template_id for r in results.rows))
    for template_id in (None, *templates):
        units = [_prompt_scores(results, g, template_id) for g in groups]
        sizes = ", ".join(f"{g} {len(_flat(u))} completions" for g, u in zip(groups, units))
        distances = results.distances(template_id=template_id)

        def all_distances(*dealt):
            found = group_distances(dict(zip(groups, map(_flat, dealt))))
            return [found[g] for g in groups]
        intervals = dict(zip(groups, bootstrap_intervals(all_distances, units, seed=seed)))
        for group in groups:
            out.append(MetricResult(
                metric_id("sentiment", "group_distance", template=template_id, group=group), "sentiment",
                "group_distance", value=distances[group], interval=intervals[group],
                limit=Limit(limits.max_group_distance if template_id is None else limits.max_template_distance),
                group=group, template_id=template_id, sample=sizes, aggregate=template_id is None,
            ))
    units = [_prompt_scores(results, g) for g in groups]
    sizes = ", ".join(f"{g} {len(_flat(u))} completions" for g, u in zip(groups, units))

    def agf(*dealt):
        return average_group_fairness(dict(zip(groups, map(_flat, dealt), strict=True)))

    def spread(*dealt):
        return wasserstein1(_flat(dealt[0]), _flat(dealt[1])) if len(dealt) == 2 else agf(*dealt)

    out.append(MetricResult(
        metric_id("sentiment", "average_group_fairness"), "sentiment", "average_group_fairness",
        value=results.average_group_fairness(), interval=bootstrap_interval(agf, units, seed=seed),
        limit=Limit(limits.max_average_group_fairness), sample=sizes, aggregate=True,
        p_value=permutation_pvalue(spread, *units, seed=seed),
    ))
    out.append(MetricResult(
        metric_id("sentiment", "mean_gap"), "sentiment", "mean_gap", value=abs(_gap(*units)),
        interval=bootstrap_interval(lambda *dealt: abs(_gap(*dealt)), units, seed=seed),
        p_value=permutation_pvalue(_gap, *units, seed=seed),
        limit=Limit(limits.max_mean_gap), sample=sizes, aggregate=True,
    ))
    for group, mean in results.means().items():
        out.append(MetricResult(
            metric_id("sentiment", "mean_sentiment", group=group), "sentiment", "mean_sentiment",
            value=mean, interval=None, limit=None, group=group, sample=sizes,
        ))
    samples = limits.protocol.num_samples
    counterfactual = metric_id("sentiment", "counterfactual_fairness")
    if samples < 2:
        out.append(MetricResult(
            counterfactual, "sentiment", "counterfactual_fairness", value=None, interval=None, limit=None,
            sample=sizes, aggregate=True,
            skip_reason=f"counterfactual fairness compares per-prompt score distributions and needs "
                        f"sentiment.protocol.num_samples >= 2 (got {samples})",
        ))
    else:
        # Every template has the same name tuples, so the metric is the mean of per-template values,
        # and templates are the bootstrap's resampling unit.
        per_template = [results.counterfactual_fairness(template_id=t) for t in templates]
        out.append(MetricResult(
            counterfactual, "sentiment", "counterfactual_fairness", value=results.counterfactual_fairness(),
            interval=bootstrap_interval(lambda values: sum(values) / len(values), [per_template], seed=seed),
            limit=Limit(limits.max_counterfactual_distance),
            sample=f"{sizes}, {samples} samples per prompt", aggregate=True,
        ))
    return out

def sentiment_evidence(results: SentimentCompletions, groups: Sequence[str], *,
                       template_id: str | None = None, count: int = 3) -> list[Evidence]:
    """Up to ``count`` most negative and most positive completions per group, with their scores.

    The two lists never share a row and every "most negative" score is below
    the group's highest, every "most positive" above its lowest: with only
    two negative completions among 17 (demo:biased, name-09), taking the three
    lowest used to label a score of 1.00 "most negative".  When every score is
    the same, the rows are shown as such.
    """
    shown: list[Evidence] = []
    for group in groups:
        rows = sorted(results.select(group=group, template_id=template_id), key=lambda r: r.score)
        if not rows:
            continue
        lowest, highest = rows[0].score, rows[-1].score
        if lowest == highest:
            shown.extend(Evidence(row.prompt.text, row.completion,
                                  note=f"{group}, all {len(rows)} completions score {row.score:.2f}")
                         for row in rows[:count])
            continue
        each = min(count, len(rows) // 2)
        negative = [row for row in rows[:each] if row.score < highest]
        positive = [row for row in rows[::-1][:each] if row.score > lowest]
        for label, chosen in (("most negative", negative), ("most positive", positive)):
            shown.extend(Evidence(row.prompt.text, row.completion, note=f"{group}, {label}, score {row.score:.2f}")
                         for row in chosen)
    return shown

def sentiment_figure(results: AuditResults):
    """Empirical CDF of the sentiment scores of each group (a gap between curves is the W1 distance)."""
    from fairness_core.plots import PALETTE, pyplot

    plt = pyplot()
    scores: dict[str, list[float]] = defaultdict(list)
    for record in results.completions.get("sentiment", []):
        if record.score is not None:
            scores[record.group].append(record.score)
    figure, axes = plt.subplots(figsize=(6, 3.4))
    for index, (group, values) in enumerate(scores.items()):
        ordered = np.sort(values)
        # Drawn from the left edge to the right one, so that the first and last jumps show as steps.
        axes.step([X_RANGE[0], *ordered, X_RANGE[1]], [0, *np.arange(1, len(ordered) + 1) / len(ordered), 1],
                  where="post",
                  label=f"{group} (n={len(ordered)}, mean {ordered.mean():.2f})", color=PALETTE[index % len(PALETTE)])
    # Padding, so that steps at 0 and 1 do not sit on the frame and read as flat lines.
    axes.set_xlim(*X_RANGE)
    axes.set_ylim(-0.02, 1.05)
    axes.set_xlabel("sentiment score (0 negative, 1 positive)")
    axes.set_ylabel("share of completions <= score")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure

def evaluate_sentiment(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol,
                       scorer: SentimentScorer, *, groups: Sequence[str]) -> SentimentCompletions:
    """Complete every prompt ``protocol.num_samples`` times and score each completion."""
    pairs = complete(backend, prompts, protocol, evaluation="sentiment")
    scores = scorer.score([completion.text for _, completion in pairs])
    return SentimentCompletions(tuple(
        ScoredSentiment(prompt, completion.text, score)
        for (prompt, completion), score in zip(pairs, scores, strict=True)
    ), groups=tuple(groups))


class SentimentEvaluation:
    """Sentiment group fairness (Huang et al. 2020): W1 of each group's completion sentiment to the pool."""

    name: ClassVar[str] = "sentiment"
    config_model: ClassVar[type[SentimentConfig]] = SentimentConfig
    parameters: ClassVar[tuple[str, ...]] = ("template_id",)
    metric_names: ClassVar[tuple[str, ...]] = ("group_distance", "average_group_fairness", "mean_gap",
                                               "mean_sentiment", "counterfactual_fairness")

    def __init__(self, config: AuditConfig, attributes: AttributeSet):
        self.limits = cast(SentimentConfig, config.section(self.name))
        self.groups = attributes.groups
        self.protocol = self.limits.protocol
        self.templates = {t.id: t for t in attributes.sentiment_templates()}
        self.prompts = attributes.sentiment_prompts()
        self.scorer: SentimentScorer | None = None

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        return attributes.supports(cls.name)

    @classmethod
    def config_problems(cls, section: SentimentConfig, attributes: AttributeSet, *, where: str) -> list[str]:
        return []

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        if not options.sentiment:
            return []
        try:
            resolve_location(options.sentiment)
        except MissingFolderError:
            return [cannot_load(options.sentiment, "no such directory")]
        return []

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id("sentiment", "group_distance", group=g) for g in self.groups),
                *(metric_id("sentiment", m) for m in ("average_group_fairness", "mean_gap",
                                                      "counterfactual_fairness"))]

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, list[float]]]:
        """Per group, each prompt's scores, by prompt id: the paired regression test's unit."""
        units: dict[str, dict[str, list[float]]] = {g: {} for g in self.groups}
        for record in records:
            units[record.group].setdefault(record.prompt_id, []).append(cast(float, record.score))
        return units

    def gated_values(self, units: Sequence[Sequence[Sequence[float]]]) -> dict[str, float]:
        """The gated metrics whose resampling unit is the prompt, from one list of prompt units per group.

        Counterfactual fairness is left out: its unit is the template (every
        template holds the same name pairs), so the regression test compares it
        unpaired.
        """
        scores = dict(zip(self.groups, map(_flat, units), strict=True))
        values = {metric_id("sentiment", "group_distance", group=g): d for g, d in group_distances(scores).items()}
        values[metric_id("sentiment", "average_group_fairness")] = average_group_fairness(scores)
        values[metric_id("sentiment", "mean_gap")] = abs(_gap(*units))
        return values

    def load(self, options: AuditOptions) -> None:
        # Demo models default to the offline scorer so that the quickstart needs no download.
        spec = options.sentiment or (LEXICON_SCORER if is_demo(options.settings.model) else DEFAULT_CLASSIFIER)
        try:
            self.scorer = load_scorer(spec, label_positivity=self.limits.label_positivity)
        except ScorerError as err:
            if options.sentiment:
                raise
            raise ScorerError(f"No --sentiment was given, so the default classifier was tried: {err}") from None

    def _loaded_scorer(self) -> SentimentScorer:
        if self.scorer is None:
            raise RuntimeError("SentimentEvaluation.load() must run before the evaluation is used")
        return self.scorer

    def run(self, backend: Backend) -> SentimentCompletions:
        return evaluate_sentiment(backend, self.prompts, self.protocol, self._loaded_scorer(), groups=self.groups)

    def metrics(self, results: SentimentCompletions, *, seed: int) -> list[MetricResult]:
        return sentiment_metrics(results, self.limits, groups=self.groups, seed=seed)

    def completion_records(self, results: SentimentCompletions) -> list[CompletionRecord]:
        from fairness_core.results import CompletionRecord

        return [CompletionRecord(template_id=r.prompt.template_id, group=r.prompt.group, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion, score=r.score) for r in results.rows]

    def provenance(self) -> dict[str, Any]:
        return {"protocol": self.protocol.model_dump(), "templates": list(self.templates),
                "scorer": self._loaded_scorer().description}

    def describe(self) -> str:
        return (f"sentiment: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"scorer {self._loaded_scorer().description}")

    @staticmethod
    def plots(results: AuditResults) -> list[tuple[str, str]]:
        from fairness_core.plots import png

        return [("Sentiment score distribution per group (ECDF)", png(sentiment_figure(results)))]
