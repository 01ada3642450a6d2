"""The non-inferiority gate on simulated HONEST runs: A/A flips, cost, false certification, power, undecided rate.

Each pair is a baseline run and a candidate run (new sampling, no common
random numbers: the conservative case of a baseline read from a file) of
simulated models from ``HonestSimulator`` (the gate simulation's worlds).  The
candidate is the baseline's model itself (A/A), the model with one group's
HONEST score raised by the tolerance (``score at tol``) or twice it (``score
2x tol``), or one group's rate scaled so that the true ``|log ratio|`` grows by
exactly the tolerance (``ratio at tol``) or twice it (``ratio 2x tol``).
Every pair is judged by ``fairness_core.gates.certification.certify_units``
(the audit's code): at the fixed protocol (one look), adaptively (the
confidence sequence at :func:`look_points`, stopping when every gated metric is
certified or one is a regression), and, on the same draws, by two tests
without the gate's design: lm-eval's comparison (an unpaired two-sided z-test
per metric at 0.05, no correction, no tolerance: a "regression" is a
significantly worse metric) and an unpaired fixed-n non-inferiority test (the
same bounds without the pairing).

    python benchmarks/certification.py --attributes gender --runs 100 --worlds 0.005 --kinds aa
    python benchmarks/certification.py --summary cert.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta, norm

from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.honest.evaluation import HonestEvaluation
from fairness_core.evaluations.honest.simulation import HonestEffect, HonestWorld
from fairness_core.gates.certification import certify_units, look_points, tolerance_of
from fairness_core.gates.noninferiority import CERTIFIED, REGRESSION, UNDECIDED

KINDS = ("aa", "score at tol", "score 2x tol", "ratio at tol", "ratio 2x tol")


def clopper_pearson(hits: int, total: int) -> tuple[float, float]:
    low = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, total - hits + 1))
    high = 1.0 if hits == total else float(beta.ppf(0.975, hits + 1, total - hits))
    return low, high


class Bench:
    def __init__(self, attributes: str, resamples: int):
        config = load_thresholds(default_thresholds_path())
        self.attribute_set = load_attribute_set(attributes)
        self.config = config.for_attribute_set(self.attribute_set.name)
        self.evaluation = HonestEvaluation(self.config, self.attribute_set)
        self.simulator = self.evaluation.simulator()
        self.groups = list(self.evaluation.groups)
        self.target = self.groups[0]
        self.resamples = resamples
        self.ids = [p.id for p in self.evaluation.prompts]
        self.in_group = [np.array([p.group == g for p in self.evaluation.prompts]) for g in self.groups]
        self.regression = self.config.regression
        self.score_id = f"honest.honest_score[group={self.target}]"
        self.ratio_id = "honest.honest_ratio"

    def true_ratio_badness(self, model: np.ndarray) -> float:
        rates = [float(model[m].mean()) for m in self.in_group]
        if len(rates) == 2:
            return abs(math.log(rates[0] / rates[1]))
        return math.log(max(rates) / min(rates))

    def candidate(self, model: np.ndarray, kind: str) -> tuple[np.ndarray, str | None]:
        """The candidate's per-prompt rates and the metric whose true change is planted (``None`` for A/A)."""
        if kind == "aa":
            return model, None
        times = 2.0 if kind.endswith("2x tol") else 1.0
        target = self.in_group[0]
        if kind.startswith("score"):
            shifted = model.copy()
            shifted[target] = np.minimum(model[target] + times * tolerance_of(self.score_id, self.regression), 1.0)
            return shifted, self.score_id
        wanted = self.true_ratio_badness(model) + times * tolerance_of(self.ratio_id, self.regression)

        def scaled(factor: float) -> np.ndarray:
            out = model.copy()
            out[target] = np.minimum(model[target] * factor, 1.0)
            return out

        factor = brentq(lambda f: self.true_ratio_badness(scaled(f)) - wanted, 1.0, 1e3)
        return scaled(factor), self.ratio_id

    def units(self, hits: np.ndarray, samples: int) -> dict[str, dict[str, tuple[int, int]]]:
        found: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in self.groups}
        for prompt, count in zip(self.evaluation.prompts, hits.tolist()):
            found[prompt.group][prompt.id] = (count, samples)
        return found

    def pair(self, world: HonestWorld, kind: str, run: int) -> dict:
        model = self.simulator.draw_model(world, HonestEffect("fair"), self.target, np.random.default_rng([run, 1]))
        new_model, planted = self.candidate(model, kind)
        budget = self.simulator.samples
        old_hits = np.random.default_rng([run, 2]).random((budget, len(model))) < model
        new_hits = np.random.default_rng([run, 3]).random((budget, len(model))) < new_model
        base_units = self.units(old_hits.sum(axis=0), budget)
        ev = {"honest": self.evaluation}

        def judged(samples: int, fraction: float | None, paired: bool = True):
            return certify_units(ev, {"honest": self.units(new_hits[:samples].sum(axis=0), samples)},
                                 {"honest": base_units}, self.regression, used={"honest": samples * len(model)},
                                 fraction=fraction, paired=paired, resamples=self.resamples, seed=run)

        fixed = judged(budget, None)
        unpaired = judged(budget, None, paired=False)
        adaptive, stopped, first = fixed, budget, {}
        for samples in look_points(budget):
            adaptive = judged(samples, samples / budget)
            for c in adaptive:
                if c.verdict == CERTIFIED:
                    first.setdefault(c.metric, samples / budget)
            verdicts = [c.verdict for c in adaptive]
            if REGRESSION in verdicts or all(v == CERTIFIED for v in verdicts):
                stopped = samples
                break
        return {"fixed": {c.metric: c.verdict for c in fixed}, "adaptive": {c.metric: c.verdict for c in adaptive},
                "unpaired": {c.metric: c.verdict for c in unpaired}, "lm_eval": lm_eval_flags(unpaired, self.regression.alpha),
                "stopped": stopped, "budget": budget, "planted": planted,
                "needed": {c.metric: c.needed for c in fixed}, "first_certified": first}


def lm_eval_flags(unpaired, alpha: float) -> dict[str, bool]:
    """lm-eval's comparison per metric: unpaired ``z = diff / se``, two-sided p < 0.05, worse: flagged.

    The unpaired one-look bound is ``diff + z(1 - alpha/m) se``: the standard error is read back from it.
    """
    flags = {}
    for c in unpaired:
        se = (c.upper - c.difference) / float(norm.isf(alpha / len(unpaired)))
        flags[c.metric] = bool(math.isfinite(c.difference) and c.difference > 0 and se > 0
                               and 2 * norm.sf(c.difference / se) < 0.05)
    return flags


def tally(bench: Bench, world: HonestWorld, kind: str, runs: int, first: int) -> dict:
    counts: Counter = Counter()
    stops, firsts, regressed, needed = [], [], Counter(), []
    start = time.time()
    for run in range(first, first + runs):
        r = bench.pair(world, kind, run)
        stops.append(r["stopped"] / r["budget"])
        firsts.append(r["first_certified"])
        needed.append(r["needed"])
        regressed.update(m for rule in ("fixed", "adaptive") for m, v in r[rule].items() if v == REGRESSION)
        for rule in ("fixed", "adaptive", "unpaired"):
            verdicts = r[rule]
            counts[f"{rule} certified all"] += all(v == CERTIFIED for v in verdicts.values())
            counts[f"{rule} any regression"] += any(v == REGRESSION for v in verdicts.values())
            counts[f"{rule} any undecided"] += any(v == UNDECIDED for v in verdicts.values())
            if r["planted"]:
                counts[f"{rule} planted certified"] += verdicts[r["planted"]] == CERTIFIED
                counts[f"{rule} planted regression"] += verdicts[r["planted"]] == REGRESSION
                counts[f"{rule} planted undecided"] += verdicts[r["planted"]] == UNDECIDED
        counts["lm_eval any flagged"] += any(r["lm_eval"].values())
        if r["planted"]:
            counts["lm_eval planted flagged"] += r["lm_eval"][r["planted"]]
        counts["flips"] += any({r["fixed"][m], r["adaptive"][m]} == {CERTIFIED, REGRESSION} for m in r["fixed"])
    return {"attributes": bench.attribute_set.name, "world": [world.base_rate, world.template_sd], "kind": kind,
            "runs": runs, "first": first, "counts": dict(counts), "stop_fractions": stops,
            "first_certified": firsts, "regressed": dict(regressed), "needed": needed,
            "seconds": round(time.time() - start, 1)}


def show(record: dict) -> str:
    runs, c = record["runs"], record["counts"]

    def share(key: str) -> str:
        hits = c.get(key, 0)
        low, high = clopper_pearson(hits, runs)
        return f"{hits / runs:.3f} [{low:.3f}, {high:.3f}]"

    stops = record["stop_fractions"]
    lines = [f"== {record['attributes']}, base {record['world'][0]}, template sd {record['world'][1]}, "
             f"{record['kind']}: {runs} pairs ({record['seconds']} s) =="]
    if record["kind"] == "aa":
        for rule in ("fixed", "adaptive", "unpaired"):
            lines.append(f"  {rule:9s} certified all {share(f'{rule} certified all')}  any regression "
                         f"{share(f'{rule} any regression')}  any undecided {share(f'{rule} any undecided')}")
        lines.append(f"  lm-eval z-test flags any metric {share('lm_eval any flagged')}; fixed/adaptive flips "
                     f"{c.get('flips', 0)}")
    else:
        for rule in ("fixed", "adaptive", "unpaired"):
            lines.append(f"  {rule:9s} planted metric: certified {share(f'{rule} planted certified')}  regression "
                         f"{share(f'{rule} planted regression')}  undecided {share(f'{rule} planted undecided')}")
        lines.append(f"  lm-eval z-test flags the planted metric {share('lm_eval planted flagged')}")
    lines.append(f"  adaptive completions / fixed: median {np.median(stops):.3f}, mean {np.mean(stops):.3f}")
    metrics = sorted({m for run in record["first_certified"] for m in run} | {m for run in record["needed"] for m in run})
    for metric in metrics:
        # A run that never certified the metric counts as beyond the budget (inf) in the median.
        shares = [run.get(metric, math.inf) for run in record["first_certified"]]
        wanted = [run[metric] for run in record["needed"] if run.get(metric)]
        lines.append(f"  {metric}: first certified (adaptive) median {np.median(shares):.3f} of the budget, "
                     f"certified by the budget in {sum(map(math.isfinite, shares))}/{runs}"
                     + (f"; fixed run estimated a need in {len(wanted)} runs, median {np.median(wanted):.0f} completions"
                        if wanted else ""))
    if record["regressed"]:
        lines.append(f"  flagged as regressions (fixed or adaptive): {record['regressed']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--attributes", nargs="+", default=["gender"])
    parser.add_argument("--worlds", nargs="+", type=float, default=[0.005], help="base hurtful rates")
    parser.add_argument("--template-sd", nargs="+", type=float, default=[0.5])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--summary", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.summary:
        for path in args.summary:
            for line in path.read_text().splitlines():
                print(show(json.loads(line)))
        return
    for attributes in args.attributes:
        bench = Bench(attributes, args.resamples)
        for base in args.worlds:
            for sd in args.template_sd:
                world = HonestWorld(base, sd)
                for kind in args.kinds:
                    record = tally(bench, world, kind, args.runs, args.first)
                    print(show(record), flush=True)
                    if args.out:
                        with args.out.open("a") as out:
                            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
