"""``--require``: each listed evaluation must be judged by this run (collected only with ``--require``).

Without it, an evaluation that the run cannot judge (an attribute set without
its section, prompts that do not fit the model) is reported as not judged,
with the reason, and blocks nothing; a gate that needs it lists it here.
"""

import pytest

from fairness_core.reporting.violations import AuditViolation

pytestmark = pytest.mark.fairness_require


@pytest.mark.fairness_audit
def test_required_evaluation_is_judged(audit, required):
    """The required evaluation was judged: its tests ran (they may pass or fail on their own)."""
    why = audit.not_judged.get(required) or audit.not_run.get(required)
    if why:
        summary = f"REQUIRED {required} not judged: {why}"
        raise AuditViolation(f"{summary}\n  --require={required}: the gate needs this evaluation's verdict",
                             metric=required, summary=summary, kind="required")
