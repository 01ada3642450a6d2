"""Regression gate against an earlier run's ``--audit-json`` file (``--baseline``).

A metric regresses when the new model is worse than the baseline by more than
the tolerance in ``thresholds.yaml`` *and* the difference is significant: the
baseline value lies outside the new value's 95% interval, on the better side.
Worse means higher for every audited metric; for the HONEST ratio it means
further from 1, compared as ``|log ratio|``.

Comparing runs of different protocols, templates, terms, names or scorers
would compare different experiments, so that is refused up front.
"""

from __future__ import annotations

import math
from pathlib import Path

from fairness_core.results import AuditResults, MetricRecord, Provenance, ResultsFileError, read_results
from fairness_core.scorecard import MetricResult
from fairness_core.thresholds import RegressionConfig

#: Provenance fields that must agree for two runs to be comparable.
COMPARABLE_FIELDS = ("protocols", "templates", "identity_terms", "names", "lexicon", "sentiment_scorer")
#: The aggregate metrics that the regression gate compares.
GATED_METRICS = (
    "honest.honest_score[attribute=female]", "honest.honest_score[attribute=male]", "honest.honest_ratio",
    "sentiment.group_distance[attribute=female]", "sentiment.group_distance[attribute=male]",
    "sentiment.average_group_fairness", "sentiment.mean_gap", "sentiment.counterfactual_fairness",
)


#: Longest rendering of one differing value in an incompatibility message; the key path is never cut.
VALUE_WIDTH = 80


def read_baseline(path: Path) -> AuditResults:
    """An ``--audit-json`` file read as the regression gate's baseline; :class:`ResultsFileError` if it is unfit.

    A baseline with no value for any gated metric (an empty metric list, or a
    run that computed none of them) would skip every regression test and let
    the gate pass on nothing, so it is refused like an unreadable file.
    """
    baseline = read_results(path)
    gated = [m.id for m in baseline.metrics if m.id in GATED_METRICS and m.value is not None]
    if not gated:
        found = f"{len(baseline.metrics)} metrics, no gated one with a value" if baseline.metrics else "an empty metric list"
        raise ResultsFileError(
            f"The baseline {str(path)!r} has no value for any metric the regression gate compares ({found}); "
            f"it needs at least one of: {', '.join(GATED_METRICS)}. Pass the --audit-json file of a run that "
            f"computed them."
        )
    return baseline


def incompatibilities(baseline: AuditResults, current: Provenance) -> list[str]:
    """How ``baseline`` differs from the current run in ways that make a comparison meaningless.

    One line per differing key, its full path first (``protocols.sentiment.num_samples``) so that it
    stays visible however long the values are; only the values are shortened.
    """
    problems = []
    for field in COMPARABLE_FIELDS:
        problems += _differences(field, _comparable(baseline.provenance, field), _comparable(current, field))
    return problems


def _differences(path: str, theirs, ours) -> list[str]:
    """``path: baseline X vs this run Y`` for each differing leaf, descending into dicts and same-length lists."""
    if theirs == ours:
        return []
    if isinstance(theirs, dict) and isinstance(ours, dict):
        lines = []
        for key in [*theirs, *(k for k in ours if k not in theirs)]:
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


def _comparable(provenance: Provenance, field: str):
    """The part of a provenance field that decides comparability: a lexicon by content, not by path."""
    value = getattr(provenance, field)
    if field == "lexicon":
        return {key: v for key, v in value.items() if key != "source"}
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def _badness(metric: str, value: float) -> float:
    return abs(math.log(value)) if metric == "honest_ratio" else value


def regression(current: MetricResult, baseline: MetricRecord, config: RegressionConfig) -> str | None:
    """Why ``current`` is a significant regression from ``baseline``, or ``None``."""
    if current.value is None or baseline.value is None:
        return None
    tolerance = config.tolerance.get(current.metric, config.default_tolerance)
    new, old = _badness(current.metric, current.value), _badness(current.metric, baseline.value)
    if new - old <= tolerance:
        return None
    if current.interval is not None:
        low, high = current.interval
        if current.metric == "honest_ratio":
            best_plausible = 0.0 if low <= 1 <= high else min(_badness("honest_ratio", low), _badness("honest_ratio", high))
        else:
            best_plausible = low
        if old >= best_plausible:
            return None
    interval = "" if current.interval is None else f" [95% CI {current.interval[0]:.3f}, {current.interval[1]:.3f}]"
    return (f"{current.value:.3f}{interval} vs baseline {baseline.value:.3f}: worse by {new - old:.3f}"
            f"{' in |log ratio|' if current.metric == 'honest_ratio' else ''} > tolerance {tolerance:g}")
