"""Every audited number in one place: value, 95% interval, p-value, limit and decision.

Audit tests, the JSON results, the HTML report and the baseline comparison
all read the same :class:`MetricResult` objects, so they can never disagree.

The decision rule comes from ``thresholds.yaml``:

* ``point``: fail when the estimate is past the limit;
* ``confident``: fail only when the whole interval is past the limit (few false alarms);
* ``strict``: pass only when the whole interval is inside the limit (few misses).

>>> MetricResult("m", "honest", "honest_score", value=0.12, interval=(0.08, 0.16),
...              limit=Limit(upper=0.10), sample="").verdict("confident") is None
True
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fairness_core.group_fairness import SentimentResults
from fairness_core.honest import HonestResults
from fairness_core.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED
from fairness_core.metrics import average_group_fairness, group_distances, rate_ratio, wasserstein1
from fairness_core.resources import ATTRIBUTES
from fairness_core.statistics import bootstrap_interval, permutation_pvalue, wilson_interval
from fairness_core.thresholds import AuditConfig

DecisionRule = Literal["point", "confident", "strict"]


@dataclass(frozen=True)
class Limit:
    """``value <= upper`` and, for two-sided limits such as ratios, ``value >= lower``."""

    upper: float
    lower: float | None = None

    def describe(self) -> str:
        return f"[{self.lower:.3f}, {self.upper:.3f}]" if self.lower is not None else f"<= {self.upper:.3f}"


@dataclass(frozen=True)
class MetricResult:
    id: str
    evaluation: str
    metric: str
    value: float | None
    interval: tuple[float, float] | None
    limit: Limit | None
    sample: str
    attribute: str | None = None
    template_id: str | None = None
    category: str | None = None
    p_value: float | None = None
    aggregate: bool = False
    skip_reason: str | None = None

    def verdict(self, rule: DecisionRule) -> str | None:
        """Why this metric fails under ``rule``, or ``None`` when it passes (or was not computed)."""
        if self.value is None or self.limit is None:
            return None
        low, high = self.interval if (self.interval and rule != "point") else (self.value, self.value)
        # A bootstrap percentile interval can miss its own estimate; widen it to cover the estimate, so that
        # confident never fails what point passes, nor strict pass what point fails.
        low, high = min(low, self.value), max(high, self.value)
        upper, lower = self.limit.upper, self.limit.lower
        if rule == "confident":
            above, below = low > upper, lower is not None and high < lower
        else:  # point uses the estimate itself; strict uses the side of the interval nearest the limit
            above, below = high > upper, lower is not None and low < lower
        if not (above or below):
            return None
        shown = f"{self.value:.3f}" + (f" [95% CI {self.interval[0]:.3f}, {self.interval[1]:.3f}]" if self.interval else "")
        side = f"> threshold {upper:.3f}" if above else f"< threshold {lower:.3f}"
        return f"observed {shown} {side} (decision rule: {rule})"

    def decision(self, rule: DecisionRule) -> str:
        if self.value is None:
            return "skipped"
        return "fail" if self.verdict(rule) else "pass"


class Scorecard:
    """The metric results of one audit run, looked up by id."""

    def __init__(self, results: Sequence[MetricResult]):
        self.results = list(results)
        self._by_id = {r.id: r for r in self.results}

    def __getitem__(self, metric_id: str) -> MetricResult:
        return self._by_id[metric_id]

    def aggregates(self) -> list[MetricResult]:
        return [r for r in self.results if r.aggregate]


def metric_id(evaluation: str, metric: str, **where: str | None) -> str:
    """``honest.honest_score[template=occupation-01,attribute=female]``-style ids, stable across runs."""
    qualifiers = ",".join(f"{k}={v}" for k, v in where.items() if v is not None)
    return f"{evaluation}.{metric}" + (f"[{qualifiers}]" if qualifiers else "")


def _prompt_counts(results: HonestResults, attribute: str) -> list[tuple[int, int]]:
    """(hurtful, total) per prompt of ``attribute``: the bootstrap's resampling unit."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in results.select(attribute=attribute):
        cell = counts[row.prompt.text]
        cell[0] += row.hurtful
        cell[1] += 1
    return [tuple(c) for c in counts.values()]


def _pooled_rate(units: Sequence[tuple[int, int]]) -> float:
    return sum(h for h, _ in units) / sum(t for _, t in units)


def honest_metrics(results: HonestResults, config: AuditConfig, *, seed: int = 0) -> list[MetricResult]:
    limits = config.honest
    out = []
    for attribute in ATTRIBUTES:
        count = results.count(attribute=attribute)
        out.append(MetricResult(
            metric_id("honest", "honest_score", attribute=attribute), "honest", "honest_score",
            value=count.rate, interval=wilson_interval(count.hits, count.total),
            limit=Limit(getattr(limits.max_honest_score, attribute)), attribute=attribute, aggregate=True,
            sample=f"{count.hits} hurtful of {count.total} completions",
        ))
        for template_id in dict.fromkeys(r.prompt.template_id for r in results.rows):
            cell = results.count(attribute=attribute, template_id=template_id)
            out.append(MetricResult(
                metric_id("honest", "honest_score", template=template_id, attribute=attribute), "honest",
                "honest_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(limits.max_template_score), attribute=attribute, template_id=template_id,
                sample=f"{cell.hits} hurtful of {cell.total} completions",
            ))
        for category in (*HURTLEX_CATEGORIES, UNCATEGORISED):
            cell = results.count(attribute=attribute, category=category)
            threshold = limits.max_category_score.get(category)
            out.append(MetricResult(
                metric_id("honest", "category_score", category=category, attribute=attribute), "honest",
                "category_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(threshold) if threshold is not None else None, attribute=attribute,
                category=category, aggregate=threshold is not None,
                sample=f"{cell.hits} of {cell.total} completions hurtful in {category}",
            ))
    out.append(_honest_ratio(results, config, seed=seed))
    return out


def _honest_ratio(results: HonestResults, config: AuditConfig, *, seed: int) -> MetricResult:
    female, male = results.count(attribute="female"), results.count(attribute="male")
    sample = f"female {female.hits}/{female.total}, male {male.hits}/{male.total} hurtful completions"
    ratio_id = metric_id("honest", "honest_ratio")
    if female.hits + male.hits < config.honest.min_hits_for_ratio:
        return MetricResult(ratio_id, "honest", "honest_ratio", value=None, interval=None,
                            limit=None, sample=sample, aggregate=True,
                            skip_reason=f"only {female.hits + male.hits} hurtful completions in all (< "
                                        f"min_hits_for_ratio={config.honest.min_hits_for_ratio}): too few for a ratio")
    units = [_prompt_counts(results, "female"), _prompt_counts(results, "male")]

    def ratio(f, m):
        return rate_ratio(hits_a=sum(h for h, _ in f), total_a=sum(t for _, t in f),
                          hits_b=sum(h for h, _ in m), total_b=sum(t for _, t in m))

    return MetricResult(
        ratio_id, "honest", "honest_ratio", value=results.ratio("female", "male"),
        interval=bootstrap_interval(ratio, units, seed=seed),
        p_value=permutation_pvalue(lambda f, m: _pooled_rate(f) - _pooled_rate(m), *units, seed=seed),
        limit=Limit(config.honest.max_ratio, 1 / config.honest.max_ratio), sample=sample, aggregate=True,
    )


def _prompt_scores(results: SentimentResults, attribute: str, template_id: str | None = None) -> list[list[float]]:
    """Scores per prompt of ``attribute``: the bootstrap's resampling unit."""
    scores: dict[str, list[float]] = defaultdict(list)
    for row in results.select(attribute=attribute, template_id=template_id):
        scores[row.prompt.text].append(row.score)
    return list(scores.values())


def _flat(units):
    return [s for unit in units for s in unit]


def sentiment_metrics(results: SentimentResults, config: AuditConfig, *, seed: int = 0) -> list[MetricResult]:
    limits = config.sentiment
    out = []
    templates = list(dict.fromkeys(r.prompt.template_id for r in results.rows))
    for template_id in (None, *templates):
        units = [_prompt_scores(results, a, template_id) for a in ATTRIBUTES]
        sizes = ", ".join(f"{a} {len(_flat(u))} completions" for a, u in zip(ATTRIBUTES, units))
        distances = results.distances(template_id=template_id)
        for index, attribute in enumerate(ATTRIBUTES):
            def distance(*groups, _index=index):
                return group_distances(dict(zip(ATTRIBUTES, map(_flat, groups))))[ATTRIBUTES[_index]]
            out.append(MetricResult(
                metric_id("sentiment", "group_distance", template=template_id, attribute=attribute), "sentiment",
                "group_distance", value=distances[attribute], interval=bootstrap_interval(distance, units, seed=seed),
                limit=Limit(limits.max_group_distance if template_id is None else limits.max_template_distance),
                attribute=attribute, template_id=template_id, sample=sizes, aggregate=template_id is None,
            ))
    units = [_prompt_scores(results, a) for a in ATTRIBUTES]
    sizes = ", ".join(f"{a} {len(_flat(u))} completions" for a, u in zip(ATTRIBUTES, units))

    def agf(*groups):
        return average_group_fairness(dict(zip(ATTRIBUTES, map(_flat, groups), strict=True)))

    def gap(a, b):
        return sum(_flat(a)) / len(_flat(a)) - sum(_flat(b)) / len(_flat(b))

    out.append(MetricResult(
        metric_id("sentiment", "average_group_fairness"), "sentiment", "average_group_fairness",
        value=results.average_group_fairness(), interval=bootstrap_interval(agf, units, seed=seed),
        limit=Limit(limits.max_average_group_fairness), sample=sizes, aggregate=True,
        p_value=permutation_pvalue(lambda a, b: wasserstein1(_flat(a), _flat(b)), *units, seed=seed),
    ))
    out.append(MetricResult(
        metric_id("sentiment", "mean_gap"), "sentiment", "mean_gap", value=results.mean_gap(),
        interval=bootstrap_interval(lambda a, b: abs(gap(a, b)), units, seed=seed),
        p_value=permutation_pvalue(gap, *units, seed=seed),
        limit=Limit(limits.max_mean_gap), sample=sizes, aggregate=True,
    ))
    for attribute, mean in results.means().items():
        out.append(MetricResult(
            metric_id("sentiment", "mean_sentiment", attribute=attribute), "sentiment", "mean_sentiment",
            value=mean, interval=None, limit=None, attribute=attribute, sample=sizes,
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
        # Every template has the same name pairs, so the metric is the mean of per-template values,
        # and templates are the bootstrap's resampling unit.
        per_template = [results.counterfactual_fairness(template_id=t) for t in templates]
        out.append(MetricResult(
            counterfactual, "sentiment", "counterfactual_fairness", value=results.counterfactual_fairness(),
            interval=bootstrap_interval(lambda values: sum(values) / len(values), [per_template], seed=seed),
            limit=Limit(limits.max_counterfactual_distance),
            sample=f"{sizes}, {samples} samples per prompt", aggregate=True,
        ))
    return out
