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
from typing import TYPE_CHECKING, Literal

from fairness_core.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED
from fairness_core.metrics import (
    average_group_fairness,
    group_distances,
    honest_disparity,
    largest_mean_gap,
    rate_ratio,
    rate_ratios_to_pooled,
    wasserstein1,
)
from fairness_core.statistics import (
    bootstrap_interval,
    bootstrap_intervals,
    group_vs_rest_rate_pvalues,
    permutation_pvalue,
    wilson_interval,
)
from fairness_core.thresholds import AuditConfig

if TYPE_CHECKING:
    from fairness_core.group_fairness import SentimentResults
    from fairness_core.honest import HonestResults

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


def _prompt_counts(results: HonestResults, group: str) -> list[tuple[int, int]]:
    """(hurtful, total) per prompt of ``group``: the bootstrap's resampling unit."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in results.select(attribute=group):
        cell = counts[row.prompt.text]
        cell[0] += row.hurtful
        cell[1] += 1
    return [(hits, total) for hits, total in counts.values()]


def _pooled_rate(units: Sequence[tuple[int, int]]) -> float:
    return sum(h for h, _ in units) / sum(t for _, t in units)


def honest_metrics(results: HonestResults, config: AuditConfig, *, groups: Sequence[str],
                   seed: int = 0) -> list[MetricResult]:
    """Every HONEST number: per group (overall, per template, per category) and the disparity between groups."""
    limits = config.honest
    out = []
    for group in groups:
        count = results.count(attribute=group)
        out.append(MetricResult(
            metric_id("honest", "honest_score", attribute=group), "honest", "honest_score",
            value=count.rate, interval=wilson_interval(count.hits, count.total),
            limit=Limit(limits.max_honest_score[group]), attribute=group, aggregate=True,
            sample=f"{count.hits} hurtful of {count.total} completions",
        ))
        for template_id in dict.fromkeys(r.prompt.template_id for r in results.rows):
            cell = results.count(attribute=group, template_id=template_id)
            out.append(MetricResult(
                metric_id("honest", "honest_score", template=template_id, attribute=group), "honest",
                "honest_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(limits.max_template_score), attribute=group, template_id=template_id,
                sample=f"{cell.hits} hurtful of {cell.total} completions",
            ))
        for category in (*HURTLEX_CATEGORIES, UNCATEGORISED):
            cell = results.count(attribute=group, category=category)
            threshold = limits.max_category_score.get(category)
            out.append(MetricResult(
                metric_id("honest", "category_score", category=category, attribute=group), "honest",
                "category_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(threshold) if threshold is not None else None, attribute=group,
                category=category, aggregate=threshold is not None,
                sample=f"{cell.hits} of {cell.total} completions hurtful in {category}",
            ))
    out.append(_honest_ratio(results, config, groups=groups, seed=seed))
    out += _pool_ratios(results, groups=groups, seed=seed)
    return out


def _pool_ratios(results: HonestResults, *, groups: Sequence[str], seed: int) -> list[MetricResult]:
    """Each group's HONEST score over the pooled score, with Holm-adjusted permutation p-values (group vs rest).

    With many groups the headline ratio names only the two ends; these say which
    groups stand out, and Holm's correction keeps the chance of naming any group
    by accident at the nominal level however many groups there are.
    """
    units = {g: _prompt_counts(results, g) for g in groups}
    ratios = rate_ratios_to_pooled({g: _totals(u) for g, u in units.items()})
    p_values = group_vs_rest_rate_pvalues(units, seed=seed)
    intervals = bootstrap_intervals(_pool_ratios_of, list(units.values()), seed=seed)
    return [MetricResult(
        metric_id("honest", "pool_ratio", attribute=g), "honest", "pool_ratio", value=ratios[g],
        interval=interval, p_value=p_values[g], limit=None, attribute=g,
        sample=f"{_totals(units[g])[0]} of {_totals(units[g])[1]} completions hurtful; p-value Holm-adjusted "
               f"over {len(groups)} groups",
    ) for g, interval in zip(groups, intervals)]


def _pool_ratios_of(*groups: Sequence[tuple[int, int]]) -> list[float]:
    """Every group's ratio to the pool, in group order (one resample's values)."""
    return list(rate_ratios_to_pooled({str(i): _totals(g) for i, g in enumerate(groups)}).values())


def _totals(units: Sequence[tuple[int, int]]) -> tuple[int, int]:
    return sum(h for h, _ in units), sum(t for _, t in units)


def _disparity(*groups: Sequence[tuple[int, int]]) -> float:
    """The HONEST ratio: first group over second with two groups (its sign kept), highest over lowest with more."""
    if len(groups) == 2:
        (hits_a, total_a), (hits_b, total_b) = map(_totals, groups)
        return rate_ratio(hits_a=hits_a, total_a=total_a, hits_b=hits_b, total_b=total_b)
    return honest_disparity({str(i): _totals(g) for i, g in enumerate(groups)}).value


def _rate_spread(*groups: Sequence[tuple[int, int]]) -> float:
    """The permutation statistic: first minus second rate with two groups, highest minus lowest with more."""
    rates = [_pooled_rate(g) for g in groups]
    return rates[0] - rates[1] if len(rates) == 2 else max(rates) - min(rates)


def _honest_ratio(results: HonestResults, config: AuditConfig, *, groups: Sequence[str], seed: int) -> MetricResult:
    counts = [results.count(attribute=g) for g in groups]
    hits = sum(c.hits for c in counts)
    sample = ", ".join(f"{g} {c.hits}/{c.total}" for g, c in zip(groups, counts)) + " hurtful completions"
    ratio_id = metric_id("honest", "honest_ratio")
    if hits < config.honest.min_hits_for_ratio:
        return MetricResult(ratio_id, "honest", "honest_ratio", value=None, interval=None,
                            limit=None, sample=sample, aggregate=True,
                            skip_reason=f"only {hits} hurtful completions in all (< "
                                        f"min_hits_for_ratio={config.honest.min_hits_for_ratio}): too few for a ratio")
    units = [_prompt_counts(results, g) for g in groups]
    if len(groups) > 2:
        ends = honest_disparity({g: _totals(u) for g, u in zip(groups, units)})
        sample += f"; highest {ends.highest}, lowest {ends.lowest}"
    return MetricResult(
        ratio_id, "honest", "honest_ratio", value=_disparity(*units),
        interval=bootstrap_interval(_disparity, units, seed=seed),
        p_value=permutation_pvalue(_rate_spread, *units, seed=seed),
        limit=Limit(config.honest.max_ratio, 1 / config.honest.max_ratio), sample=sample, aggregate=True,
    )


def _prompt_scores(results: SentimentResults, group: str, template_id: str | None = None) -> list[list[float]]:
    """Scores per prompt of ``group``: the bootstrap's resampling unit."""
    scores: dict[str, list[float]] = defaultdict(list)
    for row in results.select(attribute=group, template_id=template_id):
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


def sentiment_metrics(results: SentimentResults, config: AuditConfig, *, groups: Sequence[str],
                      seed: int = 0) -> list[MetricResult]:
    """Every sentiment number: W1 of each group to the pool (overall and per template), AGF, mean gap,
    counterfactual fairness."""
    limits = config.sentiment
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
                metric_id("sentiment", "group_distance", template=template_id, attribute=group), "sentiment",
                "group_distance", value=distances[group], interval=intervals[group],
                limit=Limit(limits.max_group_distance if template_id is None else limits.max_template_distance),
                attribute=group, template_id=template_id, sample=sizes, aggregate=template_id is None,
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
            metric_id("sentiment", "mean_sentiment", attribute=group), "sentiment", "mean_sentiment",
            value=mean, interval=None, limit=None, attribute=group, sample=sizes,
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
