"""The plugin costs nothing until asked: importing it loads none of the heavy libraries.

Every pytest run in an environment where the package is installed imports the
plugin through its ``pytest11`` entry point, audits or not.  Checked in a fresh
interpreter, since this test session has long imported everything.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "matplotlib", "fugashi", "scipy")


def test_importing_the_plugin_loads_no_heavy_library():
    code = ("import sys, fairness_core.pytest_plugin; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert loaded == "", f"importing fairness_core.pytest_plugin loaded {loaded}"
