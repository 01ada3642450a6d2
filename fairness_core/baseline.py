"""Regression gate against an earlier run's ``--audit-json`` file (``--baseline``).

A metric regresses when the new model is worse than the baseline by more than
the tolerance in ``thresholds.yaml`` *and* the difference is significant: a
one-sided test of the difference of two noisy estimates (both runs' intervals
give their standard errors), Bonferroni-corrected over the gated metrics.  The
baseline is itself an estimate: judging it as exact (is it outside the new
interval?) flags re-runs of the same model far above 5%.
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
from fairness_core.statistics import standard_error_towards, worsening_pvalue
from fairness_core.thresholds import RegressionConfig

#: Longest rendering of one differing value in an incompatibility message; the key path is never cut.
VALUE_WIDTH = 80


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


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def _badness(metric: str, value: float) -> float:
    return abs(math.log(value)) if metric == "honest_ratio" else value


def _badness_interval(metric: str, interval: tuple[float, float]) -> tuple[float, float]:
    """An interval of the metric mapped to badness; a ratio interval that holds 1 reaches a badness of 0."""
    if metric != "honest_ratio":
        return interval
    low, high = interval
    ends = sorted((_badness(metric, low), _badness(metric, high)))
    return (0.0, ends[1]) if low <= 1 <= high else (ends[0], ends[1])


def regression(current: MetricResult, baseline: MetricRecord, config: RegressionConfig, *,
               comparisons: int = 1) -> str | None:
    """Why ``current`` is a significant regression from ``baseline``, or ``None``.

    Worse by more than the tolerance, and significantly so: a one-sided test of
    the difference that counts both runs' noise (each standard error read off
    its run's 95% interval), at ``config.alpha / comparisons`` so that the
    ``comparisons`` gated metrics together stay at ``alpha`` (Bonferroni).  A
    run without an interval is taken as exact; with neither, the tolerance decides.
    """
    if current.value is None or baseline.value is None:
        return None
    tolerance = config.tolerance.get(current.metric, config.default_tolerance)
    new, old = _badness(current.metric, current.value), _badness(current.metric, baseline.value)
    if new - old <= tolerance:
        return None
    test = ""
    if current.interval is not None or baseline.interval is not None:
        theirs = _badness_interval(current.metric, baseline.interval) if baseline.interval else (old, old)
        ours = _badness_interval(current.metric, current.interval) if current.interval else (new, new)
        p_value = worsening_pvalue(new, standard_error_towards(new, ours, old),
                                   old, standard_error_towards(old, theirs, new))
        level = config.alpha / comparisons
        if p_value >= level:
            return None
        test = f"; one-sided p = {p_value:.4f} < {level:.4f} for the difference"
    interval = "" if current.interval is None else f" [95% CI {current.interval[0]:.3f}, {current.interval[1]:.3f}]"
    return (f"{current.value:.3f}{interval} vs baseline {baseline.value:.3f}: worse by {new - old:.3f}"
            f"{' in |log ratio|' if current.metric == 'honest_ratio' else ''} > tolerance {tolerance:g}{test}")
