"""Regression gate: each gated aggregate metric against the ``--baseline`` run (collected only with ``--baseline``).

Each metric is certified (no worse than the baseline by more than its
tolerance, at ``regression.alpha`` over all gated metrics), a regression, or
undecided (:mod:`fairness_core.gates.certification`).  A CI gate passes on
certified only: undecided fails with the completions a certification is
expected to need, unless ``regression.undecided: pass``, which the notes state.
"""

import math

import pytest

from fairness_core.gates.noninferiority import CERTIFIED, REGRESSION
from fairness_core.reporting.violations import AuditViolation, violation_message

pytestmark = pytest.mark.fairness_baseline


def _verdict(c) -> str:
    bound = f"[{c.lower:+.3f}, {c.upper:+.3f}]"
    return (f"{c.verdict}: {c.candidate:.3f} vs baseline {c.baseline:.3f}, change of badness {c.difference:+.3f} "
            f"{bound} against tolerance {c.tolerance:g} ({c.method})")


@pytest.mark.fairness_audit
def test_no_regression(audit, metric):
    """The metric is certified no worse than in the baseline run, beyond the tolerance."""
    current = audit.metric(metric)
    baseline = audit.baseline_metric(metric)
    if current.value is None:
        pytest.skip(f"{metric} was not computed in this run: {current.skip_reason}")
    if baseline is None or baseline.value is None:
        pytest.skip(f"{metric} has no value in the baseline {audit.baseline_source}: not compared")
    comparison = audit.comparison(metric)
    if comparison.verdict == CERTIFIED:
        return
    model = audit.baseline.provenance.model.get("model", "?")
    verdict = _verdict(comparison) if math.isfinite(comparison.lower) else f"undecided: {comparison.method}"
    if comparison.verdict == REGRESSION:
        raise AuditViolation(
            violation_message(metric=f"REGRESSION vs baseline {model}: {metric}", where=[f"baseline {model}"],
                              verdict=verdict, sample=f"this run: {current.sample}; baseline: {baseline.sample}"),
            metric=metric, summary=f"REGRESSION vs baseline {model}: {metric}: {verdict}", kind="regression",
        )
    needed = ("" if not math.isfinite(comparison.lower)  # not judged: the method says why
              else f"; a certification is expected to need about {comparison.needed} completions" if comparison.needed
              else "; no run of this design is expected to certify it")
    if audit.config.regression.undecided == "pass":
        audit.notes.append(f"baseline: {metric} undecided, passed by regression.undecided: pass ({verdict}{needed})")
        return
    raise AuditViolation(
        violation_message(metric=f"UNDECIDED vs baseline {model}: {metric}", where=[f"baseline {model}"],
                          verdict=verdict + needed, sample=f"this run: {current.sample}; baseline: {baseline.sample}"),
        metric=metric, summary=f"UNDECIDED vs baseline {model}: {metric}: {verdict}{needed}", kind="regression",
    )
