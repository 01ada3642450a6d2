"""What the installed plugin costs a pytest run that has nothing to do with the audits.

Runs a trivial one-test file in a fresh subprocess, with the plugin (as every
pytest run in an environment with the package installed loads it through its
``pytest11`` entry point) and without it (``-p no:fairness_audit``), in
alternation, and prints the median wall time of each and their difference.
Target: a difference under 0.5 s.

    python benchmarks/bench_plugin_import.py --repetitions 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall_time(folder: Path, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_trivial.py"],
                   cwd=folder, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "test_trivial.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        wall_time(Path(folder))  # warm the file system cache for both
        with_plugin, without = [], []
        for _ in range(args.repetitions):
            with_plugin.append(wall_time(Path(folder)))
            without.append(wall_time(Path(folder), "-p", "no:fairness_audit"))
    a, b = statistics.median(with_plugin), statistics.median(without)
    print(f"one trivial test, median of {args.repetitions} runs each, alternating:")
    print(f"  with the fairness_audit plugin     {a:.3f} s   ({', '.join(f'{t:.2f}' for t in with_plugin)})")
    print(f"  with -p no:fairness_audit          {b:.3f} s   ({', '.join(f'{t:.2f}' for t in without)})")
    print(f"  difference                         {a - b:+.3f} s  (target: under 0.5 s)")


if __name__ == "__main__":
    main()
