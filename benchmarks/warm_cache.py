"""Generation time of an audit with a cold and a warm generation cache.

Runs the full default protocol (``thresholds.yaml``) on a model twice with the
same fresh cache folder and prints the time spent in the backend's
``generate`` each time, and their ratio (the warm run should cost a small
fraction: completions are read from disk).

    python benchmarks/warm_cache.py [--model demo]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fairness_core.run.options import audit_options
from fairness_core.run.session import AuditSession
from fairness_core.run.setup import AuditSetup

REPO = Path(__file__).resolve().parents[1]


def generation_seconds(model: str, cache_dir: Path) -> float:
    """Seconds spent generating (HONEST + sentiment) in one audit session."""
    options, _ = audit_options({"model": model, "device": "cpu"}, cache_dir=cache_dir)
    setup = AuditSetup.load(REPO / "thresholds.yaml", "gender")
    session = AuditSession(options, setup, selected=list(setup.evaluations))
    backend, spent = session.backend, 0.0
    real_generate = backend.generate

    def timed_generate(requests, protocol):
        nonlocal spent
        started = time.perf_counter()
        try:
            return real_generate(requests, protocol)
        finally:
            spent += time.perf_counter() - started

    backend.generate = timed_generate
    session.compute_all()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cold = generation_seconds(args.model, Path(folder))
        warm = generation_seconds(args.model, Path(folder))
    print(f"{args.model}: generation {cold:.2f} s with a cold cache, {warm:.3f} s warm "
          f"({warm / cold:.1%} of the cold run)")


if __name__ == "__main__":
    main()
