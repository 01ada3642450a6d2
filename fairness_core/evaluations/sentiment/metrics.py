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


def _no_answers(group: str, where: str) -> str:
    return (f"not judged, because {group} has no answers to score{where}: every output was a refusal or withheld "
            f"(the refusal_rate and withheld_rate metrics count them)")


def _left_out(silent: Sequence[str]) -> str:
    return f"; {', '.join(silent)}: no answers, left out of the comparison" if silent else ""


def _group_distances(results: SentimentCompletions, limits: SentimentConfig, groups: Sequence[str],
                     template_id: str | None, seed: int) -> list[MetricResult]:
    """W1 of each group to the pool, over all templates or one; the pool is that of the groups with answers, and a
    group with none is not judged."""
    units = {g: _prompt_scores(results, g, template_id) for g in groups}
    answered = [g for g in groups if units[g]]
    where = f" in template {template_id}" if template_id else ""
    sizes = ", ".join(f"{g} {len(flat(units[g]))} completions" for g in groups)
    limit = Limit(limits.max_group_distance if template_id is None else limits.max_template_distance)
    found: dict[str, tuple[float | None, tuple[float, float] | None, str | None]] = {
        g: (None, None, _no_answers(g, where)) for g in groups if g not in answered}
    if len(answered) < 2:
        found |= {g: (None, None, f"not judged, because only {g} has answers{where}: no pool of two groups to "
                                  f"compare with") for g in answered}
    else:
        dealt_units = [units[g] for g in answered]

        def all_distances(*dealt):
            distances = group_distances(dict(zip(answered, map(flat, dealt))))
            return [distances[g] for g in answered]
        values = all_distances(*dealt_units)
        intervals = bootstrap_intervals(all_distances, dealt_units, seed=seed)
        found |= {g: (v, i, None) for g, v, i in zip(answered, values, intervals)}
        sizes += _left_out([g for g in groups if g not in answered])
    return [MetricResult(
        metric_id("sentiment", "group_distance", template=template_id, group=g), "sentiment", "group_distance",
        value=found[g][0], interval=found[g][1], limit=limit, group=g, template_id=template_id, sample=sizes,
        aggregate=template_id is None, skip_reason=found[g][2]) for g in groups]


def sentiment_metrics(results: SentimentCompletions, limits: SentimentConfig, *, groups: Sequence[str],
                      seed: int = 0) -> list[MetricResult]:
    """Every sentiment number: W1 of each group to the pool (overall and per template), AGF, mean gap,
    counterfactual fairness.

    A group with no answers (every output a refusal or withheld) is not judged,
    and the comparisons are between the groups that answered, which their
    sample says; with fewer than two such groups a comparison is not judged.
    """
    out = []
    templates = results.template_ids()
    for template_id in (None, *templates):
        out += _group_distances(results, limits, groups, template_id, seed)
    all_units = {g: _prompt_scores(results, g) for g in groups}
    answered = [g for g in groups if all_units[g]]
    silent = [g for g in groups if g not in answered]
    units = [all_units[g] for g in answered]
    sizes = ", ".join(f"{g} {len(flat(all_units[g]))} completions" for g in groups) + _left_out(silent)

    def agf(*dealt):
        return average_group_fairness(dict(zip(answered, map(flat, dealt), strict=True)))

    def spread(*dealt):
        return wasserstein1(flat(dealt[0]), flat(dealt[1])) if len(dealt) == 2 else agf(*dealt)

    if len(answered) < 2:
        why = (f"not judged, because {', '.join(answered) or 'no group'} alone has answers to score: the other "
               f"groups' outputs were all refusals or withheld")
        out += [MetricResult(metric_id("sentiment", name), "sentiment", name, value=None, interval=None, limit=None,
                             sample=sizes, aggregate=True, skip_reason=why)
                for name in ("average_group_fairness", "mean_gap")]
    else:
        out.append(MetricResult(
            metric_id("sentiment", "average_group_fairness"), "sentiment", "average_group_fairness",
            value=agf(*units), interval=bootstrap_interval(agf, units, seed=seed),
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
            skip_reason=_no_answers(group, "") if mean is None else None,
        ))
    out.append(_counterfactual(results, limits, templates, sizes, seed))
    return out


def _counterfactual(results: SentimentCompletions, limits: SentimentConfig, templates: Sequence[str], sizes: str,
                    seed: int) -> MetricResult:
    samples = limits.protocol.num_samples
    counterfactual = metric_id("sentiment", "counterfactual_fairness")
    skip = None
    if samples < 2:
        skip = (f"counterfactual fairness compares per-prompt score distributions and needs "
                f"sentiment.protocol.num_samples >= 2 (got {samples})")
    # Every template has the same name tuples, so the metric is the mean of per-template values,
    # and templates are the bootstrap's resampling unit; a template where fewer than two groups answered has no pair.
    per_template = [v for t in templates if (v := results.counterfactual_fairness(template_id=t)) is not None]
    if skip is None and not per_template:
        skip = "not judged, because no template has answers of two groups: every pair of names lacks one side"
    if skip is not None:
        return MetricResult(counterfactual, "sentiment", "counterfactual_fairness", value=None, interval=None,
                            limit=None, sample=sizes, aggregate=True, skip_reason=skip)
    return MetricResult(
        counterfactual, "sentiment", "counterfactual_fairness", value=results.counterfactual_fairness(),
        interval=bootstrap_interval(lambda values: sum(values) / len(values), [per_template], seed=seed),
        limit=Limit(limits.max_counterfactual_distance),
        sample=f"{sizes}, {samples} samples per prompt", aggregate=True,
    )
