"""The names limits' operating characteristics: false alarms of the five gaps for fair models, power at planted gaps.

Runs the names evaluation's own metric and decision code
(``NamesEvaluation.metrics``, ``MetricResult.decision``) on answers drawn by its
simulator (:mod:`fairness_core.evaluations.names.simulation` states the model):
every request with every name, refusals, occupation shares, sentiment,
hurtful words and length, with each request's and each name's own lean.  For
each world of the simulator's grid it counts the fair runs in which any of the
five gaps fails (a false alarm), and at the reference world the runs that block
each planted effect (power), with 95% Clopper-Pearson intervals.  The whole
suite's false alarms with this evaluation in it are measured by
``benchmarks/operating_characteristics.py``.

    python benchmarks/names_gate.py [--runs 200] [--power-runs 200] [--attributes gender nationality]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import beta

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.names.evaluation import NamesEvaluation
from fairness_core.evaluations.names.simulation import GRID, POWER_EFFECTS, NamesEffect

#: Planted effects at half the power effects' size: what the limits do not promise to catch.
SMALL_EFFECTS = (NamesEffect("an occupation-share gap of 0.05", occupation_share_gap=0.05),
                 NamesEffect("a refusal gap of 0.05", refusal_gap=0.05))


def clopper_pearson(hits: int, runs: int) -> tuple[float, float]:
    low = beta.ppf(0.025, hits, runs - hits + 1) if hits else 0.0
    high = beta.ppf(0.975, hits + 1, runs - hits) if hits < runs else 1.0
    return float(low), float(high)


def blocked(evaluation: NamesEvaluation, world, effect: NamesEffect, runs: int, seed: int) -> tuple[int, dict]:
    """How many of ``runs`` simulated runs fail a names limit, and which gaps failed how often."""
    simulator, rule = evaluation.simulator(), evaluation.limits.decision_rule or "point"
    rng = np.random.default_rng(seed)
    count, families = 0, {}
    for run in range(runs):
        model = simulator.draw_model(world, effect, evaluation.groups[0], rng)
        failed = [m.metric for m in evaluation.metrics(simulator.sample(model, world, rng), seed=run)
                  if m.aggregate and m.decision(rule) == "fail"]
        count += bool(failed)
        for metric in failed:
            families[metric] = families.get(metric, 0) + 1
    return count, families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="fair runs per grid world (default 200)")
    parser.add_argument("--power-runs", type=int, default=200, help="biased runs per effect (default 200)")
    parser.add_argument("--attributes", nargs="+", default=["gender"])
    args = parser.parse_args()
    config = load_thresholds(default_thresholds_path())
    for attributes in args.attributes:
        attribute_set = load_attribute_set(attributes)
        evaluation = NamesEvaluation(config.for_attribute_set(attributes), attribute_set,
                                     {"prompt_format": "chat-instruction"})
        simulator = evaluation.simulator()
        print(f"== {attributes}: {len(evaluation.prompts)} prompts x {evaluation.protocol.num_samples} samples, "
              f"rule {evaluation.limits.decision_rule or config.decision_rule} ==", flush=True)
        cells = [(world, NamesEffect("fair"), args.runs) for world in GRID]
        if args.power_runs:
            cells += [(GRID[0], effect, args.power_runs) for effect in (*POWER_EFFECTS, *SMALL_EFFECTS)]
        for index, (world, effect, runs) in enumerate(cells):
            start = time.time()
            count, families = blocked(evaluation, world, effect, runs, seed=1000 + index)
            low, high = clopper_pearson(count, runs)
            shares = ", ".join(f"{name} {n / runs:.3f}" for name, n in sorted(families.items()))
            print(f"  {simulator.describe(world)} | {effect.label}: blocked {count}/{runs} = {count / runs:.3f} "
                  f"[{low:.3f}, {high:.3f}]{'; ' + shares if shares else ''} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
