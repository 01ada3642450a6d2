"""Every HONEST number: per group (overall, per template, per category) and the disparity between groups.

Intervals are Wilson's for a share and a bootstrap over prompts for the
ratios; the permutation p-values shuffle prompts between groups.  The
prompt is also the unit the regression gate pairs two runs by
(:func:`prompt_units`, :func:`gated_values`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from fairness_core.evaluations.honest.config import HonestConfig
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED
from fairness_core.evaluations.honest.rates import honest_disparity, rate_ratio, rate_ratios_to_pooled
from fairness_core.evaluations.honest.scoring import HonestCompletions
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import (
    bootstrap_interval,
    bootstrap_intervals,
    group_vs_rest_rate_pvalues,
    permutation_pvalue,
    wilson_interval,
)


def _prompt_counts(results: HonestCompletions, group: str) -> list[tuple[int, int]]:
    """(hurtful, total) per prompt of ``group``: the bootstrap's resampling unit."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in results.select(group=group):
        cell = counts[row.prompt.text]
        cell[0] += row.hurtful
        cell[1] += 1
    return [(hits, total) for hits, total in counts.values()]


def pooled_rate(units: Sequence[tuple[int, int]]) -> float:
    return sum(h for h, _ in units) / sum(t for _, t in units)


def honest_metrics(results: HonestCompletions, limits: HonestConfig, *, groups: Sequence[str],
                   seed: int = 0) -> list[MetricResult]:
    """Every HONEST number: per group (overall, per template, per category) and the disparity between groups."""
    out = []
    for group in groups:
        count = results.count(group=group)
        out.append(MetricResult(
            metric_id("honest", "honest_score", group=group), "honest", "honest_score",
            value=count.rate, interval=wilson_interval(count.hits, count.total),
            limit=Limit(limits.max_honest_score[group], rule=limits.level_decision_rule),
            group=group, aggregate=True, sample=f"{count.hits} hurtful of {count.total} completions",
        ))
        for template_id in dict.fromkeys(r.prompt.template_id for r in results.rows):
            cell = results.count(group=group, template_id=template_id)
            out.append(MetricResult(
                metric_id("honest", "honest_score", template=template_id, group=group), "honest",
                "honest_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(limits.max_template_score), group=group, template_id=template_id,
                sample=f"{cell.hits} hurtful of {cell.total} completions",
            ))
        for category in (*HURTLEX_CATEGORIES, UNCATEGORISED):
            cell = results.count(group=group, category=category)
            threshold = limits.max_category_score.get(category)
            out.append(MetricResult(
                metric_id("honest", "category_score", category=category, group=group), "honest",
                "category_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(threshold, rule=limits.level_decision_rule) if threshold is not None else None,
                group=group, category=category, aggregate=threshold is not None,
                sample=f"{cell.hits} of {cell.total} completions hurtful in {category}",
            ))
    out.append(_honest_ratio(results, limits, groups=groups, seed=seed))
    out += _pool_ratios(results, groups=groups, seed=seed)
    return out


def _pool_ratios(results: HonestCompletions, *, groups: Sequence[str], seed: int) -> list[MetricResult]:
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
        metric_id("honest", "pool_ratio", group=g), "honest", "pool_ratio", value=ratios[g],
        interval=interval, p_value=p_values[g], limit=None, group=g,
        sample=f"{_totals(units[g])[0]} of {_totals(units[g])[1]} completions hurtful; p-value Holm-adjusted "
               f"over {len(groups)} groups",
    ) for g, interval in zip(groups, intervals)]


def _pool_ratios_of(*groups: Sequence[tuple[int, int]]) -> list[float]:
    """Every group's ratio to the pool, in group order (one resample's values)."""
    return list(rate_ratios_to_pooled({str(i): _totals(g) for i, g in enumerate(groups)}).values())


def _totals(units: Sequence[tuple[int, int]]) -> tuple[int, int]:
    return sum(h for h, _ in units), sum(t for _, t in units)


def disparity(*groups: Sequence[tuple[int, int]]) -> float:
    """The HONEST ratio: first group over second with two groups (its sign kept), highest over lowest with more."""
    if len(groups) == 2:
        (hits_a, total_a), (hits_b, total_b) = map(_totals, groups)
        return rate_ratio(hits_a=hits_a, total_a=total_a, hits_b=hits_b, total_b=total_b)
    return honest_disparity({str(i): _totals(g) for i, g in enumerate(groups)}).value


def _rate_spread(*groups: Sequence[tuple[int, int]]) -> float:
    """The permutation statistic: first minus second rate with two groups, highest minus lowest with more."""
    rates = [pooled_rate(g) for g in groups]
    return rates[0] - rates[1] if len(rates) == 2 else max(rates) - min(rates)


def _honest_ratio(results: HonestCompletions, limits: HonestConfig, *, groups: Sequence[str], seed: int) -> MetricResult:
    counts = [results.count(group=g) for g in groups]
    hits = sum(c.hits for c in counts)
    sample = ", ".join(f"{g} {c.hits}/{c.total}" for g, c in zip(groups, counts)) + " hurtful completions"
    ratio_id = metric_id("honest", "honest_ratio")
    if hits < limits.min_hits_for_ratio:
        return MetricResult(ratio_id, "honest", "honest_ratio", value=None, interval=None,
                            limit=None, sample=sample, aggregate=True,
                            skip_reason=f"only {hits} hurtful completions in all (< "
                                        f"min_hits_for_ratio={limits.min_hits_for_ratio}): too few for a ratio")
    units = [_prompt_counts(results, g) for g in groups]
    if len(groups) > 2:
        ends = honest_disparity({g: _totals(u) for g, u in zip(groups, units)})
        sample += f"; highest {ends.highest}, lowest {ends.lowest}"
    return MetricResult(
        ratio_id, "honest", "honest_ratio", value=disparity(*units),
        interval=bootstrap_interval(disparity, units, seed=seed),
        p_value=permutation_pvalue(_rate_spread, *units, seed=seed),
        limit=Limit(limits.max_ratio, 1 / limits.max_ratio), sample=sample, aggregate=True,
    )
