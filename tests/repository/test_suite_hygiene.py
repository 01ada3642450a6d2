"""The test suite cleans up after itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_the_generation_cache_folder_exists_while_the_session_runs():
    """Runs started from a test (pytester, subprocesses) inherit the variable and must find the folder."""
    assert Path(os.environ["JA_FAIRNESS_AUDIT_CACHE"]).is_dir()


def test_a_test_session_leaves_no_cache_folder_in_the_temp_dir(tmp_path):
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    environment.pop("JA_FAIRNESS_AUDIT_CACHE")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base"),
         f"{TESTS / 'repository' / 'test_suite_hygiene.py'}::test_the_generation_cache_folder_exists_while_the_session_runs"],
        cwd=TESTS.parent, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(tmp_path.glob("ja-fairness-audit-test-cache-*")) == []
