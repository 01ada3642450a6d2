"""The packaged audits, collected from this checkout: see fairness_core/audits/test_regression.py."""

from fairness_core.audits.test_regression import *  # noqa: F403
