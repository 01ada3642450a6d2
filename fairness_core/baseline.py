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

from fairness_core.results import AuditResults, MetricRecord, Provenance
from fairness_core.scorecard import MetricResult
from fairness_core.thresholds import RegressionConfig


def incompatibilities(baseline: AuditResults, current: Provenance) -> list[str]:
    """How ``baseline`` differs from the current run in ways that make a comparison meaningless.

    The attribute set must agree, and so must the setup (protocol, templates,
    lexicon content, scorer) of every evaluation that both runs computed; an
    evaluation that only one of them ran is not compared (its regression tests
    say so).  Each problem names the differing keys in full.
    """
    problems = _differences("attribute set", _without_source(baseline.provenance.attributes),
                            _without_source(current.attributes))
    for name in baseline.provenance.evaluations.keys() & current.evaluations.keys():
        problems += _differences(name, _without_source(baseline.provenance.evaluations[name]),
                                 _without_source(current.evaluations[name]))
    return problems


def _without_source(value):
    """A provenance part as compared: a lexicon or attribute set by content, not by the path it was read from."""
    if isinstance(value, dict):
        return {k: _without_source(v) for k, v in value.items() if k != "source"}
    return value


def _differences(where: str, theirs: dict, ours: dict) -> list[str]:
    return [f"{where}.{key}: baseline {_short(theirs.get(key))} vs this run {_short(ours.get(key))}"
            for key in sorted(theirs.keys() | ours.keys()) if theirs.get(key) != ours.get(key)]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


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
