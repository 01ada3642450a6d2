"""The packaged audits, collected from this checkout: see fairness_core/audits/test_honest.py."""

from fairness_core.audits.test_honest import *  # noqa: F403
