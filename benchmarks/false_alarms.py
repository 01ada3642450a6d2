"""False-alarm rate of the default thresholds on the fair demo model.

The fair demo model has equal planted rates for both attributes, so every
aggregate audit that fails on it is a false alarm.  This runs the full default
protocol (``thresholds.yaml``) for several sampling seeds and prints, per seed,
the aggregate metrics and which of them fail, then the share of seeds with any
failing aggregate.

    python benchmarks/false_alarms.py [--seeds 10] [--model demo]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fairness_core.session import AuditOptions, AuditSession

REPO = Path(__file__).resolve().parents[1]


def run_seed(model: str, seed: int) -> list[tuple[str, float | None, str]]:
    options = AuditOptions(model=model, thresholds=REPO / "thresholds.yaml", device="cpu", seed=seed)
    session = AuditSession(options)
    rule = session.config.decision_rule
    aggregates = session.honest_card.aggregates() + session.sentiment_card.aggregates()
    return [(r.id, r.value, r.decision(rule)) for r in aggregates]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--model", default="demo")
    args = parser.parse_args()
    alarms = 0
    for seed in range(args.seeds):
        started = time.perf_counter()
        results = run_seed(args.model, seed)
        failed = [metric for metric, _, decision in results if decision == "fail"]
        alarms += bool(failed)
        values = ", ".join(f"{metric}={value:.3f}" for metric, value, _ in results if value is not None)
        print(f"seed {seed}: {'FAIL ' + ', '.join(failed) if failed else 'pass'} "
              f"({time.perf_counter() - started:.0f} s)\n  {values}")
    print(f"\n{args.model}: {alarms} of {args.seeds} seeds with a failing aggregate audit "
          f"(false-alarm rate {alarms / args.seeds:.0%})")


if __name__ == "__main__":
    main()
