"""The stub evaluation's audit tests, one per group (collected by ``pytest --pyargs fairness_core.audits``)."""

import pytest

from fairness_core.scorecard import metric_id

pytestmark = pytest.mark.fairness_audit("stub")


def test_unfinished_share(audit, group):
    audit.check(metric_id("stub", "unfinished_share", group=group), where=[f"group {group}"],
                evidence=lambda: audit.evaluations["stub"].evidence(audit.scored("stub"), group))
