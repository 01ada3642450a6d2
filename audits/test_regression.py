"""Regression gate: each aggregate metric against the ``--baseline`` run (collected only with ``--baseline``)."""

import pytest

from fairness_core.baseline import GATED_METRICS, regression
from fairness_core.violations import AuditViolation, violation_message

pytestmark = [pytest.mark.fairness_audit, pytest.mark.fairness_baseline]


@pytest.mark.parametrize("metric", GATED_METRICS)
def test_no_regression(audit_session, metric):
    """The metric is not significantly worse than in the baseline run, beyond the tolerance."""
    current = audit_session.card(metric.split(".", 1)[0])[metric]
    baseline = audit_session.baseline_metric(metric)
    if current.value is None or baseline is None or baseline.value is None:
        pytest.skip(f"{metric} was not computed in {'this run' if current.value is None else 'the baseline'}")
    verdict = regression(current, baseline, audit_session.config.regression)
    if verdict:
        model = audit_session.baseline.provenance.model.get("model", "?")
        raise AuditViolation(
            violation_message(metric=f"REGRESSION vs baseline {model}: {metric}", where=[f"baseline {model}"],
                              verdict=verdict, sample=f"this run: {current.sample}; baseline: {baseline.sample}"),
            summary=f"REGRESSION vs baseline {model}: {metric}: {verdict}",
        )
