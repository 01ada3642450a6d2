"""False-alarm rate of the shipped thresholds on a fair demo model, for any attribute set: every test counted.

A fair demo model has equal planted rates for every group, so every test that
fails on it is a false alarm: the aggregates and the per-template and
per-category tests alike, as a deploy gate blocks on any of them.  For each
sampling seed this runs the audit session itself (the shipped
``thresholds.yaml`` with the attribute set's overrides, the full default
protocol, no cache), prints the tests that fail, and ends with the share of
seeds with any failing test and its 95% Clopper-Pearson interval, to set next
to the simulated rate of ``benchmarks/operating_characteristics.py``.

Then the regression gate, as ``--baseline`` runs it (paired by prompt), on
disjoint pairs of those seeds: seed 2k+1 judged against seed 2k.  Two seeds of
one fair model are a same-model re-run, so every flagged pair is a false alarm
of the gate.

    python benchmarks/false_alarms.py [--seeds 30] [--model demo]
    python benchmarks/false_alarms.py --attributes nationality --model demo:nationality --seeds 30
    python benchmarks/false_alarms.py ... --first-seed 16 --seeds 14   # the rest of an interrupted run
    python benchmarks/false_alarms.py --sampling adaptive --seeds 30   # also: completions used, and why it stopped

A run can be split (``--first-seed``, an even number, so that the seed pairs
stay whole): each seed's line and each pair's verdict is printed as it ends,
and the parts' counts add up.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from operating_characteristics import clopper_pearson

from fairness_core.gates.regression import gate_regressions, gated_metrics
from fairness_core.reporting.results import build_results
from fairness_core.run.options import audit_options
from fairness_core.run.session import AuditSession
from fairness_core.run.setup import AuditSetup

REPO = Path(__file__).resolve().parents[1]
#: The metrics printed for each seed beside its failing tests.
HEADLINE = ("honest_score", "honest_ratio", "mean_gap")


class SeedRun:
    """One seed's audit: its failing tests, and what the regression gate compares (metrics and completions)."""

    def __init__(self, model: str, attributes: str, seed: int, sampling: str = "fixed"):
        options, problems = audit_options({"model": model, "device": "cpu", "seed": seed, "sampling": sampling},
                                          cache_dir=None)
        if problems:
            raise SystemExit("\n".join(problems))
        setup = AuditSetup.load(REPO / "thresholds.yaml", attributes)
        self.session = AuditSession(options, setup, selected=list(setup.evaluations))
        self.session.compute_all()
        rule = setup.config.decision_rule
        self.failing = [f"{r.id}: {r.verdict(rule)}" for name in self.session.evaluations
                        for r in self.session.card(name).metrics if r.limit is not None and r.verdict(rule)]
        self.results = build_results(self.session)

    def used(self) -> str:
        """How many completions each evaluation used of its fixed budget (``--sampling``), and why it stopped."""
        return "; ".join(f"{name} {r.describe()}" for name, r in self.session.sampling.items())

    def headline(self) -> str:
        """The aggregate values the known answers quote (docs/data.md), for the record of each seed."""
        return ", ".join(f"{m.id.split('.', 1)[1]} {m.value:.3f}" for m in self.results.metrics
                         if m.aggregate and m.value is not None and m.metric in HEADLINE)

    def regressions(self, baseline: SeedRun) -> list[str]:
        """The gated metrics that the regression gate flags in this run against ``baseline``, paired by prompt."""
        session = self.session
        current = {metric: session.metric(metric) for metric in gated_metrics(session.evaluations)}
        return gate_regressions(session.evaluations, current, {m.id: m for m in baseline.results.metrics},
                                session.config.regression, seed=session.options.settings.seed,
                                completions=(self.results.completions, baseline.results.completions))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30, help="how many seeds (default 30)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed, even (default 0)")
    parser.add_argument("--model", default="demo")
    parser.add_argument("--attributes", default="gender", help="an attribute set (built-in name or path)")
    parser.add_argument("--sampling", choices=("fixed", "adaptive"), default="fixed")
    args = parser.parse_args()
    alarms, pairs_flagged, waiting = 0, 0, None
    if args.first_seed % 2 or args.first_seed < 0:
        parser.error(f"--first-seed must be even and >= 0, so that the seed pairs stay whole; got {args.first_seed}")
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        started = time.perf_counter()
        run = SeedRun(args.model, args.attributes, seed, args.sampling)
        alarms += bool(run.failing)
        print(f"seed {seed}: {len(run.failing)} failing tests ({time.perf_counter() - started:.0f} s); {run.headline()}",
              flush=True)
        for line in run.failing:
            print(f"  {line}", flush=True)
        print(f"  sampling: {run.used()}", flush=True)
        if waiting is None:
            waiting = run
            continue
        flagged = run.regressions(waiting)
        pairs_flagged += bool(flagged)
        print(f"  regression gate, seed {seed} against seed {seed - 1}: {len(flagged)} flagged", flush=True)
        for line in flagged:
            print(f"    {line}", flush=True)
        waiting = None
    low, high = clopper_pearson(alarms, args.seeds)
    print(f"{args.model} --attributes={args.attributes} --sampling={args.sampling}, "
          f"seeds {args.first_seed}-{args.first_seed + args.seeds - 1}: "
          f"{alarms} of {args.seeds} seeds with a failing test "
          f"(suite-wide false-alarm rate {alarms / args.seeds:.3f}, 95% CI [{low:.3f}, {high:.3f}])")
    pairs = args.seeds // 2
    low, high = clopper_pearson(pairs_flagged, pairs)
    print(f"regression gate (paired by prompt), seed 2k+1 against seed 2k: {pairs_flagged} of {pairs} same-model "
          f"pairs flagged ({pairs_flagged / pairs:.3f}, 95% CI [{low:.3f}, {high:.3f}])")

if __name__ == "__main__":
    main()
