"""Sentiment group fairness (Huang et al. 2020): name prompts -> completions -> scores -> distances -> metrics.

The class below is what the registry loads; it keeps its imports light (the
pytest plugin reads its options on every pytest run) and imports the scorers,
the metrics and the plots when an audit uses them.  The package holds
everything else that is the evaluation's own: its thresholds and attribute-set
sections, its templates and names (``data/``), the scorers (a Japanese text
classifier, or the offline polarity lexicon), the metrics, the evidence, the
plot, the gate simulation and the audit tests (``test_sentiment.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from fairness_core.api.evaluation import SHARE, CannotRun, Evaluation, MetricSpec
from fairness_core.api.refusals import REFUSAL_SPECS, gated_refusal_gap
from fairness_core.api.withheld import WITHHELD_SPECS
from fairness_core.config.option_types import AUDIT, Option
from fairness_core.evaluations.sentiment.config import SentimentConfig
from fairness_core.evaluations.sentiment.section import SentimentSection
from fairness_core.scorecard import metric_id

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.api.prompts import Prompt
    from fairness_core.backends.base import Backend
    from fairness_core.config.attribute_sets import AttributeSet
    from fairness_core.config.thresholds import AuditConfig
    from fairness_core.evaluations.sentiment.scorers import SentimentScorer
    from fairness_core.evaluations.sentiment.scoring import SentimentCompletions
    from fairness_core.reporting.results import AuditResults, CompletionRecord
    from fairness_core.scorecard import MetricResult

#: The scorer when ``--sentiment`` is not given and the model brings no default of its own.
DEFAULT_CLASSIFIER = "daigo/bert-base-japanese-sentiment"


SENTIMENT = Option("--sentiment", "sentiment scorer: hub id or path of a text classifier, or 'lexicon' for the offline "
                   "polarity lexicon", default_text=f"the model's own where it brings one, as the demo models bring "
                                                    f"lexicon; else {DEFAULT_CLASSIFIER}", commands=frozenset({AUDIT}))


class SentimentEvaluation(Evaluation):
    """Sentiment group fairness (Huang et al. 2020): W1 of each group's completion sentiment to the pool."""

    name: ClassVar[str] = "sentiment"
    config_model: ClassVar[type[SentimentConfig]] = SentimentConfig
    attribute_section: ClassVar[type[SentimentSection]] = SentimentSection
    parameters: ClassVar[tuple[str, ...]] = ("template_id",)
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("group_distance", bounds=SHARE), MetricSpec("average_group_fairness", bounds=SHARE),
        MetricSpec("mean_gap", bounds=SHARE), MetricSpec("mean_sentiment", "higher", bounds=SHARE),
        MetricSpec("counterfactual_fairness", bounds=SHARE), *REFUSAL_SPECS, *WITHHELD_SPECS)
    options: ClassVar[tuple[Option, ...]] = (SENTIMENT,)

    def __init__(self, config: AuditConfig, attributes: AttributeSet, values: Mapping[str, Any]):
        super().__init__(config, attributes, values)
        section = cast(SentimentSection, attributes.section(self.name))
        self.templates = {t.id: t for t in section.templates()}
        self.scorer: SentimentScorer | None = None

    def build_prompts(self, attributes: AttributeSet) -> tuple[Prompt, ...]:
        section = cast(SentimentSection, attributes.section(self.name))
        return section.prompts(attributes.groups)

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        from fairness_core.config.locations import MissingFolderError, resolve_location
        from fairness_core.evaluations.sentiment.scorers import cannot_load

        spec = options.value(SENTIMENT.dest)
        if not spec:
            return []
        try:
            resolve_location(spec)
        except MissingFolderError:
            return [cannot_load(spec, "no such directory")]
        return []

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id(self.name, "group_distance", group=g) for g in self.groups),
                *(metric_id(self.name, m) for m in ("average_group_fairness", "mean_gap", "counterfactual_fairness")),
                *gated_refusal_gap(self.name, self.answers)]

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, list[float]]]:
        """Per group, each prompt's scores, by prompt id: the paired regression test's unit."""
        units: dict[str, dict[str, list[float]]] = {g: {} for g in self.groups}
        for record in records:
            if "refusal" in record.detail or "withheld" in record.detail:  # not scored
                continue
            units[record.group].setdefault(record.prompt_id, []).append(cast(float, record.detail["score"]))
        return units

    def gated_values(self, units: Sequence[Sequence[Sequence[float]]]) -> dict[str, float]:
        """The gated metrics whose resampling unit is the prompt, from one list of prompt units per group.

        Counterfactual fairness is left out: its unit is the template (every
        template holds the same name pairs), so the regression test compares it
        unpaired.
        """
        from fairness_core.evaluations.sentiment.distances import average_group_fairness, group_distances
        from fairness_core.evaluations.sentiment.metrics import flat, gap

        scores = dict(zip(self.groups, map(flat, units), strict=True))
        values = {metric_id(self.name, "group_distance", group=g): d for g, d in group_distances(scores).items()}
        values[metric_id(self.name, "average_group_fairness")] = average_group_fairness(scores)
        values[metric_id(self.name, "mean_gap")] = abs(gap(*units))
        return values

    def load(self, options: AuditOptions) -> None:
        from fairness_core.evaluations.sentiment.scorers import ScorerError, load_scorer

        given = options.value(SENTIMENT.dest)
        try:
            self.scorer = load_scorer(given or DEFAULT_CLASSIFIER, label_positivity=self.limits.label_positivity)
        except ScorerError as err:
            if given:
                raise
            raise CannotRun(f"no --sentiment was given, and the default classifier cannot be had: {err}") from None

    def _loaded_scorer(self) -> SentimentScorer:
        if self.scorer is None:
            raise RuntimeError("SentimentEvaluation.load() must run before the evaluation is used")
        return self.scorer

    def run(self, backend: Backend) -> SentimentCompletions:
        from fairness_core.evaluations.sentiment.scoring import evaluate_sentiment

        return evaluate_sentiment(backend, self.prompts, self.protocol, self._loaded_scorer(), groups=self.groups,
                                  reader=self.answers)

    def metrics(self, scored: SentimentCompletions, *, seed: int) -> list[MetricResult]:
        from fairness_core.api.refusals import refusal_metrics
        from fairness_core.api.withheld import withheld_metrics
        from fairness_core.evaluations.sentiment.metrics import sentiment_metrics

        return [*sentiment_metrics(scored, self.limits, groups=self.groups, seed=seed),
                *refusal_metrics(self.name, scored.refusal_counts, self.limits.refusals,
                                 detected=self.answers.detects_refusals, seed=seed),
                *withheld_metrics(self.name, scored.refusal_counts, self.limits.withheld,
                                  detected=self.answers.detects_refusals)]

    def completion_records(self, scored: SentimentCompletions) -> list[CompletionRecord]:
        from fairness_core.reporting.results import CompletionRecord

        return [CompletionRecord(template_id=r.prompt.template_id, group=r.prompt.group, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion, detail={"score": r.score})
                for r in scored.rows] + [
            CompletionRecord(template_id=a.prompt.template_id, group=a.prompt.group, term=a.prompt.term,
                             prompt=a.prompt.text, completion=a.raw, detail={"refusal": a.refusal})
            for a in scored.refused] + [
            CompletionRecord(template_id=a.prompt.template_id, group=a.prompt.group, term=a.prompt.term,
                             prompt=a.prompt.text, completion=a.raw, detail={"withheld": a.withheld})
            for a in scored.withheld]

    def provenance(self) -> dict[str, Any]:
        return {"protocol": self.protocol_provenance(), "templates": list(self.templates),
                "scorer": self._loaded_scorer().description}

    def describe(self) -> str:
        return (f"sentiment: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"scorer {self._loaded_scorer().description}")

    def plan_lines(self, options: AuditOptions) -> list[str]:
        return [f"{self.name}: {len(self.prompts)} prompts x {self.protocol.num_samples} samples; mean gap <= "
                f"{self.limits.max_mean_gap:g}, group W1 <= {self.limits.max_group_distance:g}"]

    @classmethod
    def plots(cls, results: AuditResults) -> list[tuple[str, str]]:
        from fairness_core.evaluations.sentiment.plots import sentiment_figure
        from fairness_core.reporting.plots import png

        return [("Sentiment score distribution per group (ECDF)", png(sentiment_figure(results)))]

    def simulator(self) -> Any:
        from fairness_core.evaluations.sentiment.simulation import SentimentSimulator

        return SentimentSimulator(self.prompts, self.groups, self.protocol.num_samples)
