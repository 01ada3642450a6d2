"""Every sentiment number: W1 of each group to the pool (overall and per template), AGF, mean gap, counterfactual fairness.

Intervals come from a bootstrap over prompts (templates for counterfactual
fairness); the permutation p-values shuffle prompts between groups.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from fairness_core.evaluations.sentiment.config import SentimentConfig
from fairness_core.evaluations.sentiment.distances import (
    average_group_fairness,
    group_distances,
    largest_mean_gap,
    wasserstein1,
)
from fairness_core.evaluations.sentiment.scoring import SentimentCompletions
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import bootstrap_interval, bootstrap_intervals, permutation_pvalue


def _prompt_scores(results: SentimentCompletions, group: str, template_id: str | None = None) -> list[list[float]]:
    """Scores per prompt of ``group``: the bootstrap's resampling unit."""
    scores: dict[str, list[float]] = defaultdict(list)
    for row in results.select(group=group, template_id=template_id):
        scores[row.prompt.text].append(row.score)
    return list(scores.values())


def flat(units):
    return [s for unit in units for s in unit]


def _mean(units) -> float:
    values = flat(units)
    return sum(values) / len(values)


def gap(*groups) -> float:
    """Sentiment mean gap: first minus second group with two groups (signed, for the permutation test),
    the largest pairwise difference with more."""
    if len(groups) == 2:
        return _mean(groups[0]) - _mean(groups[1])
    return largest_mean_gap({str(i): flat(g) for i, g in enumerate(groups)}).value


def sentiment_metrics(results: SentimentCompletions, limits: SentimentConfig, *, groups: Sequence[str],
                      seed: int = 0) -> list[MetricResult]:
    """Every sentiment number: W1 of each group to the pool (overall and per template), AGF, mean gap,
    counterfactual fairness."""
    out = []
    templates = list(dict.fromkeys(r.prompt.template_id for r in results.rows))
    for template_id in (None, *templates):
        units = [_prompt_scores(results, g, template_id) for g in groups]
        sizes = ", ".join(f"{g} {len(flat(u))} completions" for g, u in zip(groups, units))
        distances = results.distances(template_id=template_id)

        def all_distances(*dealt):
            found = group_distances(dict(zip(groups, map(flat, dealt))))
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
    sizes = ", ".join(f"{g} {len(flat(u))} completions" for g, u in zip(groups, units))

    def agf(*dealt):
        return average_group_fairness(dict(zip(groups, map(flat, dealt), strict=True)))

    def spread(*dealt):
        return wasserstein1(flat(dealt[0]), flat(dealt[1])) if len(dealt) == 2 else agf(*dealt)

    out.append(MetricResult(
        metric_id("sentiment", "average_group_fairness"), "sentiment", "average_group_fairness",
        value=results.average_group_fairness(), interval=bootstrap_interval(agf, units, seed=seed),
        limit=Limit(limits.max_average_group_fairness), sample=sizes, aggregate=True,
        p_value=permutation_pvalue(spread, *units, seed=seed),
    ))
    out.append(MetricResult(
        metric_id("sentiment", "mean_gap"), "sentiment", "mean_gap", value=abs(gap(*units)),
        interval=bootstrap_interval(lambda *dealt: abs(gap(*dealt)), units, seed=seed),
        p_value=permutation_pvalue(gap, *units, seed=seed),
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
