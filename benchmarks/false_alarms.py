"""False-alarm rate of the shipped thresholds on a fair demo model, for any attribute set: every test counted.

A fair demo model has equal planted rates for every group, so every test that
fails on it is a false alarm: the aggregates and the per-template and
per-category tests alike, as a deploy gate blocks on any of them.  For each
sampling seed this runs the audit session itself (the shipped
``thresholds.yaml`` with the attribute set's overrides, the full default
protocol, no cache), prints the tests that fail, and ends with the share of
seeds with any failing test and its 95% Clopper-Pearson interval, to set next
to the simulated rate of ``benchmarks/operating_characteristics.py``.

    python benchmarks/false_alarms.py [--seeds 30] [--model demo]
    python benchmarks/false_alarms.py --attributes nationality --model demo:nationality --seeds 30
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from operating_characteristics import clopper_pearson

from fairness_core.audit_options import AuditOptions
from fairness_core.backends.base import BackendSettings
from fairness_core.session import AuditPlan, AuditSession

REPO = Path(__file__).resolve().parents[1]


def failing_tests(model: str, attributes: str, seed: int) -> list[str]:
    options = AuditOptions(BackendSettings(model=model, device="cpu", seed=seed))
    plan = AuditPlan.load(REPO / "thresholds.yaml", attributes)
    session = AuditSession(options, plan, selected=list(plan.evaluations))
    session.compute_all()
    rule = plan.config.decision_rule
    return [f"{r.id}: {r.verdict(rule)}" for name in session.evaluations
            for r in session.card(name).metrics if r.limit is not None and r.verdict(rule)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--model", default="demo")
    parser.add_argument("--attributes", default="gender", help="an attribute set (built-in name or path)")
    args = parser.parse_args()
    alarms = 0
    for seed in range(args.seeds):
        started = time.perf_counter()
        failing = failing_tests(args.model, args.attributes, seed)
        alarms += bool(failing)
        print(f"seed {seed}: {len(failing)} failing tests ({time.perf_counter() - started:.0f} s)", flush=True)
        for line in failing:
            print(f"  {line}", flush=True)
    low, high = clopper_pearson(alarms, args.seeds)
    print(f"{args.model} --attributes={args.attributes}: {alarms} of {args.seeds} seeds with a failing test "
          f"(suite-wide false-alarm rate {alarms / args.seeds:.3f}, 95% CI [{low:.3f}, {high:.3f}])")


if __name__ == "__main__":
    main()
