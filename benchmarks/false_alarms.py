"""False-alarm rate of the shipped thresholds on a fair demo model, for any attribute set.

A fair demo model has equal planted rates for every group, so every aggregate
audit that fails on it is a false alarm.  For each sampling seed this runs the
audit session itself (the shipped ``thresholds.yaml`` with the attribute set's
overrides, the full default protocol, no cache), prints the aggregate metrics
that fail, and ends with the share of seeds with any failing aggregate.

    python benchmarks/false_alarms.py [--seeds 10] [--model demo]
    python benchmarks/false_alarms.py --attributes nationality --model demo:nationality --seeds 10
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fairness_core.audit_options import AuditOptions
from fairness_core.session import AuditPlan, AuditSession

REPO = Path(__file__).resolve().parents[1]


def failing_aggregates(model: str, attributes: str, seed: int) -> list[str]:
    options = AuditOptions(model=model, thresholds=REPO / "thresholds.yaml", attributes=attributes, device="cpu",
                           seed=seed)
    plan = AuditPlan.load(options.thresholds, attributes)
    session = AuditSession(options, plan, selected=list(plan.evaluations))
    session.compute_all()
    rule = plan.config.decision_rule
    return [f"{r.id}: {r.verdict(rule)}" for name in session.evaluations
            for r in session.card(name).aggregates() if r.verdict(rule)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--model", default="demo")
    parser.add_argument("--attributes", default="gender", help="an attribute set (built-in name or path)")
    args = parser.parse_args()
    alarms = 0
    for seed in range(args.seeds):
        started = time.perf_counter()
        failing = failing_aggregates(args.model, args.attributes, seed)
        alarms += bool(failing)
        print(f"seed {seed}: {len(failing)} failing aggregates ({time.perf_counter() - started:.0f} s)", flush=True)
        for line in failing:
            print(f"  {line}", flush=True)
    print(f"{args.model} --attributes={args.attributes}: {alarms} of {args.seeds} seeds with a failing aggregate")


if __name__ == "__main__":
    main()
