"""The packaged audits, collected from this checkout: see fairness_core/audits/test_group_fairness.py."""

from fairness_core.audits.test_group_fairness import *  # noqa: F403
