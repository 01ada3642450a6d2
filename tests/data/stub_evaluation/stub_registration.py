# Copied as conftest.py by tests/test_architecture.py: the one registry line of the stub evaluation.
from fairness_core.evaluations import EVALUATIONS

EVALUATIONS.register("stub", "stub_evaluation:StubEvaluation")
