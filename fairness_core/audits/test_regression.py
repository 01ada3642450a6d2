"""Regression gate: each gated aggregate metric against the ``--baseline`` run (collected only with ``--baseline``)."""

import pytest

from fairness_core.gates.regression import gated_metrics, regression
from fairness_core.reporting.violations import AuditViolation, violation_message

pytestmark = pytest.mark.fairness_baseline


@pytest.mark.fairness_audit
def test_no_regression(audit, metric):
    """The metric is not significantly worse than in the baseline run, beyond the tolerance."""
    current = audit.metric(metric)
    baseline = audit.baseline_metric(metric)
    if current.value is None:
        pytest.skip(f"{metric} was not computed in this run: {current.skip_reason}")
    if baseline is None or baseline.value is None:
        pytest.skip(f"{metric} has no value in the baseline {audit.baseline_source}: not compared")
    verdict = regression(current, baseline, audit.config.regression, spec=audit.setup.metric_spec(metric),
                         comparisons=len(gated_metrics(audit.evaluations)),
                         paired_error=audit.paired_errors(current.evaluation).get(metric))
    if verdict:
        model = audit.baseline.provenance.model.get("model", "?")
        raise AuditViolation(
            violation_message(metric=f"REGRESSION vs baseline {model}: {metric}", where=[f"baseline {model}"],
                              verdict=verdict, sample=f"this run: {current.sample}; baseline: {baseline.sample}"),
            metric=metric, summary=f"REGRESSION vs baseline {model}: {metric}: {verdict}", kind="regression",
        )
