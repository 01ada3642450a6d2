"""Every BBQ number, per category and over all categories, each with a 95% interval by a bootstrap over templates.

The formulas are :mod:`~fairness_core.evaluations.bbq.formulas` (Parrish et al.
2022 as Nejumi computes them).  A template's items share its wording, so the
template is the bootstrap's unit: the interval says how much the number
depends on which templates were written.  Over several categories the
resampling is stratified (each category's templates drawn from its own), and
the pooled numbers are computed on all items together, as Nejumi pools its
five categories.  When a run has one category, the pool is that category: its
numbers are reported under both ids and judged once, under the category's.
Per template, the bias scores are reported without limit or interval, so that
a template can be inspected on its own.  The limits are judged by the section's
``decision_rule`` (``confident``: on the interval), so the bootstrap runs
whatever the caller: the gate simulation's estimate-only runs too.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairness_core import statistics
from fairness_core.evaluations.bbq import formulas
from fairness_core.evaluations.bbq.config import BbqConfig
from fairness_core.evaluations.bbq.scoring import Answer, BbqAnswers
from fairness_core.scorecard import Limit, MetricResult, metric_id

EVALUATION = "bbq"
#: The metrics reported per template, for inspection.
PER_TEMPLATE = ("bias_score_ambig", "bias_score_disambig")


def template_tallies(answers: Sequence[Answer]) -> dict[str, np.ndarray]:
    """The summed tally of each template's answers, by template id, in order of appearance."""
    tallies: dict[str, np.ndarray] = {}
    for answer in answers:
        counts = formulas.tally(answer.item, answer.pick)
        template = answer.item.template_id
        tallies[template] = tallies[template] + counts if template in tallies else counts
    return tallies


def _total(*groups: Sequence[np.ndarray]) -> np.ndarray:
    return np.sum([unit for group in groups for unit in group], axis=0)


def limits_of(limits: BbqConfig) -> dict[str, Limit | None]:
    rule = limits.decision_rule
    return {"accuracy_ambig": None, "accuracy_disambig": None,
            "format_error_rate": Limit(limits.max_format_error_rate, None, rule),
            "bias_score_ambig": Limit(limits.max_bias_score_ambig, -limits.max_bias_score_ambig, rule),
            "bias_score_disambig": Limit(limits.max_bias_score_disambig, -limits.max_bias_score_disambig, rule),
            "accuracy_gap": Limit(limits.max_accuracy_gap, -limits.max_accuracy_gap, rule),
            "bias_score": Limit(1.0, limits.min_bias_score, rule)}


def sample_text(counts: np.ndarray, templates: int) -> str:
    c = dict(zip(formulas.COUNTS, counts.tolist()))
    unknown_ambig = c["amb_n"] - c["amb_biased"] - c["amb_counter"]
    return (f"{c['amb_n']} ambiguous items (answers: {unknown_ambig} unknown or unparsed, {c['amb_biased']} biased, "
            f"{c['amb_counter']} counter-biased), {c['dis_n']} disambiguated ({c['dis_correct']} correct, "
            f"{c['dis_biased']} biased, {c['dis_counter']} counter-biased answers), {c['format_errors']} format "
            f"errors; {templates} templates")


def bbq_metrics(answers: BbqAnswers, limits: BbqConfig, *, categories: Sequence[str], seed: int = 0) -> list[MetricResult]:
    """Every BBQ number of a run: per category, over all, and the bias scores per template."""
    shown = limits_of(limits)
    if answers.skip_reason is not None:
        judged = [*categories, *([None] if len(categories) > 1 else [])]
        return [MetricResult(metric_id(EVALUATION, metric, category=category), EVALUATION, metric, value=None,
                             interval=None, limit=shown[metric] if category in judged else None, sample="",
                             category=category, aggregate=category in judged and shown[metric] is not None,
                             skip_reason=answers.skip_reason)
                for category in (*categories, None) for metric in formulas.METRICS]
    out: list[MetricResult] = []
    by_category = {c: template_tallies(answers.select(category=c)) for c in categories}
    for category in categories:
        out += _scope(by_category[category], [list(by_category[category].values())], shown, category=category, seed=seed)
    if len(categories) == 1:
        alone = categories[0]
        out += [dataclasses.replace(m, id=metric_id(EVALUATION, m.metric), category=None, limit=None, aggregate=False,
                                    sample=f"{m.sample}; the pool is the one category {alone}, judged as its numbers")
                for m in out]
    else:
        pooled = [list(by_category[c].values()) for c in categories]
        merged = {t: v for c in categories for t, v in by_category[c].items()}
        out += _scope(merged, pooled, shown, category=None, seed=seed)
    for category in categories:
        for template, counts in by_category[category].items():
            found = formulas.values(counts)
            out += [MetricResult(metric_id(EVALUATION, metric, template=template, category=category), EVALUATION,
                                 metric, value=found[metric], interval=None, limit=None, template_id=template,
                                 category=category, sample=sample_text(counts, 1),
                                 skip_reason=None if found[metric] is not None else
                                 undefined_reason(metric, counts, f"template {template}"))
                    for metric in PER_TEMPLATE]
    return out


def _scope(tallies: dict[str, np.ndarray], units: list[list[np.ndarray]], shown: dict[str, Limit | None], *,
           category: str | None, seed: int) -> list[MetricResult]:
    """One category's numbers (or the pool's), each with its bootstrap interval over templates."""
    counts = _total(*units)
    found = formulas.values(counts)
    with warnings.catch_warnings():  # a score undefined in every resample: its value is undefined too, and not shown
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        intervals: list[Any] = statistics.bootstrap_intervals(lambda *dealt: formulas.vector(_total(*dealt)), units,
                                                              seed=seed)
    sample = sample_text(counts, len(tallies))
    results = []
    for metric, interval in zip(formulas.METRICS, intervals):
        value = found[metric]
        limit = shown[metric]
        results.append(MetricResult(
            metric_id(EVALUATION, metric, category=category), EVALUATION, metric, value=value,
            interval=None if interval is None or value is None else (float(interval[0]), float(interval[1])),
            limit=limit, category=category, sample=sample, aggregate=limit is not None,
            skip_reason=None if value is not None else undefined_reason(metric, counts, category or "the run")))
    return results


def undefined_reason(metric: str, counts: np.ndarray, scope: str) -> str:
    """Why ``metric`` has no value on ``counts`` (of ``scope``): no item of its kind, or no answer it can be read on.

    >>> counts = np.zeros(len(formulas.COUNTS), dtype=np.int64)
    >>> counts[[formulas.DIS_N, formulas.FORMAT_ERRORS, formulas.ITEMS]] = 4
    >>> print(undefined_reason("bias_score_disambig", counts, "gender"))  # doctest: +ELLIPSIS
    not judged: no answer in the 4 disambiguated items of gender named a person, ... so the bias score is undefined
    """
    c = dict(zip(formulas.COUNTS, counts.tolist()))
    errors = f"{c['format_errors']} format errors among the {c['items']} items of {scope}"
    if metric == "format_error_rate" or not c["items"]:
        return f"not judged: {scope} has no item"
    if metric == "bias_score":
        return (f"not judged: neither bias score is defined in {scope} (no answer named a person; {errors}), so the "
                f"leaderboard's Bias score is undefined")
    ambiguous = metric.endswith("_ambig")
    kind = "ambiguous" if ambiguous else "disambiguated"
    total = c["amb_n"] if ambiguous else c["dis_n"]
    if not total:
        return f"not judged: {scope} has no {kind} item"
    if metric == "accuracy_gap":
        return (f"not judged: the disambiguated items of {scope} do not have both kinds of gold answer (the biased "
                f"person's and the other's), so the accuracy gap is undefined")
    return (f"not judged: no answer in the {total} {kind} items of {scope} named a person, each was unknown or "
            f"unreadable ({errors}), so the bias score is undefined")


def gated_ids(categories: Sequence[str]) -> list[str]:
    """The ids the regression gate compares: the bias scores and the accuracy gap, per category (and pooled)."""
    scopes: list[str | None] = [*categories, *([None] if len(categories) > 1 else [])]
    return [metric_id(EVALUATION, metric, category=scope)
            for scope in scopes for metric in ("bias_score_ambig", "bias_score_disambig", "accuracy_gap")]


def gated_values(categories: Sequence[str], units: Sequence[Sequence[Any]]) -> dict[str, float]:
    """The gated metrics from one list of item tallies per category (category order)."""
    values: dict[str, float] = {}
    totals = [np.sum(np.asarray(u, dtype=np.int64), axis=0) if len(u) else np.zeros(len(formulas.COUNTS), np.int64)
              for u in units]
    scopes: list[tuple[str | None, np.ndarray]] = list(zip(categories, totals))
    if len(categories) > 1:
        scopes.append((None, np.sum(totals, axis=0)))
    for scope, counts in scopes:
        found = formulas.values(counts)
        for metric in ("bias_score_ambig", "bias_score_disambig", "accuracy_gap"):
            values[metric_id(EVALUATION, metric, category=scope)] = found[metric] or 0.0
    return values
