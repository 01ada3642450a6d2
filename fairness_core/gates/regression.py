"""Reading and checking the ``--baseline`` file, and the significance rule the non-inferiority gate replaced.

The audit's regression tests judge each gated metric with
:mod:`fairness_core.gates.certification` (certified, regression or undecided).
This module reads the baseline and refuses one from another experiment; its
:func:`regression` and :func:`gate_regressions` are the previous rule, kept for
the comparisons of ``benchmarks/operating_characteristics.py --regression``:
a metric regresses when the new model is worse than the baseline by more than
the tolerance in ``thresholds.yaml`` *and* the difference is significant: a
one-sided test of the difference of two noisy estimates, Bonferroni-corrected
over the gated metrics.  The baseline is itself an estimate: judging it as
exact (is it outside the new interval?) flags re-runs of the same model far
above 5%.  Where both runs asked the same prompts (the baseline's
``--audit-json`` holds its completions), the difference's standard error comes
from a bootstrap over the prompts that takes each resampled prompt's completions
from both runs (:func:`paired_standard_errors`); otherwise each run's interval
gives its own standard error (unpaired).
Which way is worse each evaluation declares per metric
(:class:`~fairness_core.api.evaluation.MetricSpec`): higher for a rate or a
distance, further from 1 for a ratio (compared as ``|log ratio|``).

Comparing runs of different protocols, templates, terms, names or scorers
would compare different experiments, so that is refused up front.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fairness_core.config.thresholds import RegressionConfig
from fairness_core.reporting.results import (
    AuditResults,
    CompletionRecord,
    MetricRecord,
    Provenance,
    ResultsFileError,
    read_results,
)
from fairness_core.scorecard import MetricResult
from fairness_core.statistics import group_resamples, standard_error_towards, worsening_pvalue

if TYPE_CHECKING:
    from fairness_core.api.evaluation import Evaluation, MetricSpec

#: Longest rendering of one differing value in an incompatibility message; the key path is never cut.
VALUE_WIDTH = 80
#: Resamples of the paired bootstrap: a standard error needs fewer than the tails of a 95% interval.
PAIRED_RESAMPLES = 200


def read_baseline(path: Path) -> AuditResults:
    """An ``--audit-json`` file read as the regression gate's baseline; :class:`ResultsFileError` if it is unfit.

    A baseline with no value for any aggregate metric (an empty metric list, or a
    run that computed none) would skip every regression test and let the gate
    pass on nothing, so it is refused like an unreadable file.
    """
    baseline = read_results(path)
    if not any(m.aggregate and m.value is not None for m in baseline.metrics):
        found = f"{len(baseline.metrics)} metrics, no aggregate one with a value" if baseline.metrics \
            else "an empty metric list"
        raise ResultsFileError(
            f"The baseline {str(path)!r} has no value for any aggregate metric ({found}): the regression gate "
            f"would compare nothing. Pass the --audit-json file of a run that computed them."
        )
    return baseline


def impossible_values(baseline: AuditResults, evaluations: Mapping[str, Evaluation]) -> list[str]:
    """The baseline's values that no run makes (NaN, a share of 7.5, a ratio of 0), one line each.

    Comparing with them would pass or crash the gate for no reason of the model's.
    """
    problems = []
    for record in baseline.metrics:
        known = {spec.name for spec in type(evaluations[record.evaluation]).metric_specs} \
            if record.evaluation in evaluations else set()
        if record.metric not in known or record.value is None:
            continue
        spec = type(evaluations[record.evaluation]).metric_spec(record.metric)
        values = [record.value, *(record.interval or ())]
        problems += [f"{record.id}: {problem}" for value in values if (problem := spec.value_problem(value))]
    return problems


def incompatibilities(baseline: AuditResults, current: Provenance) -> list[str]:
    """How ``baseline`` differs from the current run in ways that make a comparison meaningless.

    The attribute set must agree, and so must the setup (protocol, templates,
    lexicon content, scorer) of every evaluation that both runs computed; an
    evaluation that only one of them ran is not compared (its regression tests
    say so).  One line per differing key, its full path first
    (``sentiment.protocol.num_samples``) so that it stays visible however long
    the values are; only the values are shortened.
    """
    problems = _differences("attributes", _without_source(baseline.provenance.attributes),
                            _without_source(current.attributes))
    for name in sorted(baseline.provenance.evaluations.keys() & current.evaluations.keys()):
        problems += _differences(name, _without_source(baseline.provenance.evaluations[name]),
                                 _without_source(current.evaluations[name]))
    return problems


def _without_source(value):
    """A provenance part as compared: a lexicon or attribute set by content, not by the path it was read from."""
    if isinstance(value, dict):
        return {k: _without_source(v) for k, v in value.items() if k != "source"}
    return value


def _differences(path: str, theirs, ours) -> list[str]:
    """``path: baseline X vs this run Y`` for each differing leaf, descending into dicts and same-length lists."""
    if theirs == ours:
        return []
    if isinstance(theirs, dict) and isinstance(ours, dict):
        lines = []
        for key in [*theirs, *(k for k in ours if k not in theirs)]:
            if _absent(theirs.get(key)) and _absent(ours.get(key)):
                continue
            if key not in ours:
                lines.append(f"{path}.{key}: baseline {_short(theirs[key])} vs this run (missing)")
            elif key not in theirs:
                lines.append(f"{path}.{key}: baseline (missing) vs this run {_short(ours[key])}")
            else:
                lines += _differences(f"{path}.{key}", theirs[key], ours[key])
        return lines
    if isinstance(theirs, list) and isinstance(ours, list):
        if len(theirs) == len(ours):
            return [line for index, (a, b) in enumerate(zip(theirs, ours))
                    for line in _differences(f"{path}[{index}]", a, b)]
        only_theirs = [item for item in theirs if item not in ours]
        only_ours = [item for item in ours if item not in theirs]
        return [f"{path}: baseline {len(theirs)} items vs this run {len(ours)} items; "
                f"only in the baseline: {_short(only_theirs)}; only in this run: {_short(only_ours)}"]
    return [f"{path}: baseline {_short(theirs)} vs this run {_short(ours)}"]


def _absent(value) -> bool:
    """A key left out, set to null or empty: all three say "nothing here" (an attribute set without a section)."""
    return value is None or value == {} or value == []


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def paired_standard_errors(evaluation: Evaluation, current: Sequence[CompletionRecord],
                           baseline: Sequence[CompletionRecord], *, resamples: int = PAIRED_RESAMPLES,
                           seed: int = 0) -> dict[str, float]:
    """Standard error of the change in each gated metric's badness, paired by prompt; ``{}`` if the prompts differ.

    Two runs of the same prompts share each prompt's effect (its template's
    wording, its term).  Resampling each group's prompts once and taking every
    drawn prompt's completions from *both* runs keeps that shared part out of
    the difference, which the unpaired test (each run's own interval) counts
    twice: the paired test is as safe for a re-run of the same model and has
    more power against a real change.  Only the evaluation's prompt-level
    metrics (:meth:`~fairness_core.api.evaluation.Evaluation.gated_values`)
    get one; the others stay unpaired, as do all of them when a group has no answered prompt (a chat model that
    refused it entirely: its metrics are not judged).
    """
    ours, theirs = evaluation.prompt_units(current), evaluation.prompt_units(baseline)
    if {g: set(u) for g, u in ours.items()} != {g: set(u) for g, u in theirs.items()}:
        return {}
    if not all(ours.get(g) for g in evaluation.groups):
        return {}
    keys = [sorted(ours[g]) for g in evaluation.groups]
    changes: dict[str, list[float]] = defaultdict(list)
    for drawn in group_resamples(keys, resamples, seed):
        new = evaluation.gated_values([[ours[g][k] for k in ks] for g, ks in zip(evaluation.groups, drawn)])
        old = evaluation.gated_values([[theirs[g][k] for k in ks] for g, ks in zip(evaluation.groups, drawn)])
        for metric_id, value in new.items():
            spec = type(evaluation).metric_spec(metric_name(metric_id))
            changes[metric_id].append(spec.badness(value) - spec.badness(old[metric_id]))
    return {metric_id: float(np.std(values, ddof=1)) for metric_id, values in changes.items()}


def metric_name(metric_id: str) -> str:
    """The metric of an id: ``share`` of ``x.share``, and of ``x.share[group=a]``."""
    return metric_id.split(".", 1)[1].split("[", 1)[0]


def regression(current: MetricResult, baseline: MetricRecord, config: RegressionConfig, *, spec: MetricSpec,
               comparisons: int = 1, paired_error: float | None = None) -> str | None:
    """Why ``current`` is a significant regression from ``baseline``, or ``None``.

    Worse (by ``spec``'s direction) by more than the tolerance, and significantly so: a one-sided test of
    the difference at ``config.alpha / comparisons``, so that the ``comparisons``
    gated metrics together stay at ``alpha`` (Bonferroni).  The difference's
    standard error is ``paired_error`` (:func:`paired_standard_errors`) when the
    runs could be paired by prompt; otherwise each run's standard error is read
    off its 95% interval, a run without one taken as exact; with neither, the
    tolerance decides.
    """
    if current.value is None or baseline.value is None:
        return None
    tolerance = config.tolerance_of(current.evaluation, current.metric)
    new, old = spec.badness(current.value), spec.badness(baseline.value)
    if new - old <= tolerance:
        return None
    test = ""
    if paired_error is not None:
        p_value, how = worsening_pvalue(new, paired_error, old, 0.0), "paired by prompt"
    elif current.interval is not None or baseline.interval is not None:
        theirs = spec.badness_interval(baseline.interval) if baseline.interval else (old, old)
        ours = spec.badness_interval(current.interval) if current.interval else (new, new)
        p_value = worsening_pvalue(new, standard_error_towards(new, ours, old),
                                   old, standard_error_towards(old, theirs, new))
        how = "unpaired"
    else:
        p_value, how = None, ""
    if p_value is not None:
        level = config.alpha / comparisons
        if p_value >= level:
            return None
        test = f"; one-sided p = {p_value:.4f} < {level:.4f} for the difference ({how})"
    interval = "" if current.interval is None else f" [95% CI {current.interval[0]:.3f}, {current.interval[1]:.3f}]"
    return (f"{current.value:.3f}{interval} vs baseline {baseline.value:.3f}: worse by {new - old:.3f}"
            f"{spec.badness_unit} > tolerance {tolerance:g}{test}")


def gated_metrics(evaluations: Mapping[str, Evaluation]) -> list[str]:
    """Every metric id the regression gate compares, over all ``evaluations``: their number is its Bonferroni count."""
    return [metric for evaluation in evaluations.values() for metric in evaluation.gated_metrics()]


def gate_regressions(evaluations: Mapping[str, Evaluation], current: Mapping[str, MetricResult],
                     baseline: Mapping[str, MetricRecord], config: RegressionConfig, *,
                     completions: tuple[Mapping[str, Sequence[CompletionRecord]],
                                        Mapping[str, Sequence[CompletionRecord]]] | None = None,
                     seed: int = 0) -> list[str]:
    """The whole regression gate of one run against its baseline: ``"metric id: why"`` per flagged gated metric.

    The audit runs one test per gated metric (``fairness_core/audits/test_regression.py``);
    the benchmarks that measure the gate's error rates need its verdict on a
    run as a whole, by the same rule and the same Bonferroni count.  Given the
    two runs' ``completions`` (current, baseline) by evaluation name, the
    metrics are compared paired by prompt where the prompts match; without,
    every metric is compared unpaired.
    """
    gated = gated_metrics(evaluations)
    paired: dict[str, float] = {}
    if completions is not None:
        ours, theirs = completions
        for name, evaluation in evaluations.items():
            paired.update(paired_standard_errors(evaluation, ours[name], theirs[name], seed=seed))
    specs = {metric: type(evaluations[metric.split(".", 1)[0]]).metric_spec(metric_name(metric)) for metric in gated}
    verdicts = ((metric, regression(current[metric], baseline[metric], config, spec=specs[metric],
                                    comparisons=len(gated), paired_error=paired.get(metric))) for metric in gated)
    return [f"{metric}: {verdict}" for metric, verdict in verdicts if verdict]
