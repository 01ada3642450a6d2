"""The non-inferiority gate on simulated HONEST runs: A/A flips, cost, false certification, power, undecided rate.

Each pair is a baseline run and a candidate run of simulated models from
``HonestSimulator`` (the gate simulation's worlds), coupled in one of two ways
(``--coupling``):

* ``independent``: the candidate drawn with new randomness (a baseline file of
  another seed or engine);
* ``crn``: common random numbers, as ``--baseline-model`` generates both models
  with one seed: one uniform ``U`` per (sample, prompt) shared by both runs, the
  baseline's completion hurtful when ``U < p_base``, the candidate's when
  ``U < p_cand``; the adaptive arm compares the candidate's first ``k`` samples
  with the baseline's first ``k``, as the audit does.

The candidate is the baseline's model itself (``aa``), a realistic unchanged
release (``retrained``: every prompt's logit moved by independent
``N(0, --retrain-sd)`` noise, no group effect), the model with one group's HONEST
score raised by the tolerance (``score at tol``) or twice it (``score 2x tol``),
or one group's rate scaled so that the true ``|log ratio|`` grows by exactly
the tolerance (``ratio at tol``) or twice it (``ratio 2x tol``).

Every pair is judged by the audit's code: at the fixed protocol (one look,
``certify_units`` at alpha over the m gated metrics), adaptively
(``sample_in_rounds`` driving ``CertificationRounds`` over simulated rounds,
exactly as the audit session drives it over real ones), and, on the same
draws, by two tests without the gate's design: lm-eval's comparison (an
unpaired two-sided z-test per metric at 0.05, no correction, no tolerance: a
"regression" is a significantly worse metric) and an unpaired fixed-n
non-inferiority test (the same bounds without the pairing).  The adaptive arm
leaves out HONEST's deploy test (``deploy=None``): the audit's run also waits
for its limits' test to settle before it stops as certified, so it stops no
earlier than the shares measured here.

    python benchmarks/certification.py --attributes gender --runs 100 --worlds 0.005 --kinds aa
    python benchmarks/certification.py --coupling crn --kinds aa retrained --retrain-sd 0.1 0.3
    python benchmarks/certification.py --summary cert.jsonl
"""

from __future__ import annotations

import argparse
import itertools
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
from fairness_core.gates.certification import CertificationRounds, certify_units, tolerance_of
from fairness_core.gates.noninferiority import CERTIFIED, REGRESSION, UNDECIDED, Comparison
from fairness_core.sampling import sample_in_rounds

KINDS = ("aa", "retrained", "score at tol", "score 2x tol", "ratio at tol", "ratio 2x tol")
#: The candidates whose gated metrics did not change (in expectation): judged as A/A pairs.
UNCHANGED = ("aa", "retrained")
COUPLINGS = ("independent", "crn")


def clopper_pearson(hits: int, total: int) -> tuple[float, float]:
    low = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, total - hits + 1))
    high = 1.0 if hits == total else float(beta.ppf(0.975, hits + 1, total - hits))
    return low, high


class Bench:
    def __init__(self, attributes: str, resamples: int):
        config = load_thresholds(default_thresholds_path())
        self.attribute_set = load_attribute_set(attributes)
        self.config = config.for_attribute_set(self.attribute_set.name)
        self.evaluation = HonestEvaluation(self.config, self.attribute_set, {})
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

    def candidate(self, model: np.ndarray, kind: str, rng: np.random.Generator,
                  retrain_sd: float) -> tuple[np.ndarray, str | None]:
        """The candidate's per-prompt rates and the metric whose true change is planted (``None``: unchanged)."""
        if kind == "aa":
            return model, None
        if kind == "retrained":
            logits = np.log(model) - np.log1p(-model) + rng.normal(0.0, retrain_sd, len(model))
            return 1.0 / (1.0 + np.exp(-logits)), None
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

    def pair(self, world: HonestWorld, kind: str, run: int, *, coupling: str, retrain_sd: float) -> dict:
        model = self.simulator.draw_model(world, HonestEffect("fair"), self.target, np.random.default_rng([run, 1]))
        new_model, planted = self.candidate(model, kind, np.random.default_rng([run, 4]), retrain_sd)
        budget, prompts = self.simulator.samples, len(model)
        shared = np.random.default_rng([run, 2]).random((budget, prompts))
        old_hits = shared < model
        # The same uniforms for both runs (common random numbers) or new ones for the candidate.
        new_hits = (shared if coupling == "crn" else np.random.default_rng([run, 3]).random((budget, prompts))) < new_model
        base_units = self.units(old_hits.sum(axis=0), budget)
        ev = {"honest": self.evaluation}

        def judged(paired: bool) -> list[Comparison]:
            return certify_units(ev, {"honest": self.units(new_hits.sum(axis=0), budget)}, {"honest": base_units},
                                 self.regression, used={"honest": budget * prompts}, paired=paired,
                                 resamples=self.resamples, seed=run)

        fixed, unpaired = judged(True), judged(False)
        # Without a deploy test a round is one sample of every prompt: ``len(parts)`` samples a prompt so far.
        rounds = _TracedRounds(
            self.evaluation, self.regression, prompts=prompts, comparisons=len(fixed), seed=run,
            resamples=self.resamples, units_of=lambda parts: self.units(np.concatenate(parts).sum(axis=0), len(parts)),
            # The audit compares prefix to prefix where both runs share their streams, else the whole baseline.
            baseline_at=(lambda k: self.units(old_hits[:k].sum(axis=0), k)) if coupling == "crn" else
            (lambda k: base_units))
        _, record = sample_in_rounds(lambda samples: new_hits[samples.start:samples.stop], rounds, budget=budget,
                                     prompts=prompts)
        adaptive = rounds.verdicts()
        return {"fixed": {c.metric: c.verdict for c in fixed}, "adaptive": {c.metric: c.verdict for c in adaptive},
                "unpaired": {c.metric: c.verdict for c in unpaired}, "lm_eval": lm_eval_flags(unpaired, self.regression.alpha),
                "stopped": record.samples_per_prompt, "budget": budget, "planted": planted,
                "needed": {c.metric: c.needed for c in fixed}, "first_certified": rounds.first_certified}


class _TracedRounds(CertificationRounds):
    """The audit's :class:`CertificationRounds`, noting the share of the budget at which each metric was first certified."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.first_certified: dict[str, float] = {}

    def judge(self, samples: int) -> list[Comparison]:
        found = super().judge(samples)
        for c in found:
            if c.verdict == CERTIFIED:
                self.first_certified.setdefault(c.metric, samples / self.budget)
        return found


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


def tally(bench: Bench, world: HonestWorld, kind: str, runs: int, first: int, *, coupling: str,
          retrain_sd: float = 0.0) -> dict:
    counts: Counter = Counter()
    stops, firsts, needed = [], [], []
    regressed: Counter = Counter()
    start = time.time()
    for run in range(first, first + runs):
        r = bench.pair(world, kind, run, coupling=coupling, retrain_sd=retrain_sd)
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
        counts["adaptive stopped certified all"] += all(v == CERTIFIED for v in r["adaptive"].values()) and (
            r["stopped"] < r["budget"])
    return {"attributes": bench.attribute_set.name, "world": [world.base_rate, world.template_sd], "kind": kind,
            "coupling": coupling, "retrain_sd": retrain_sd if kind == "retrained" else None, "runs": runs,
            "first": first, "counts": dict(counts), "stop_fractions": stops, "first_certified": firsts,
            "regressed": dict(regressed), "needed": needed, "seconds": round(time.time() - start, 1)}


def show(record: dict) -> str:
    runs, c = record["runs"], record["counts"]

    def share(key: str) -> str:
        hits = c.get(key, 0)
        low, high = clopper_pearson(hits, runs)
        return f"{hits / runs:.3f} [{low:.3f}, {high:.3f}]"

    stops = record["stop_fractions"]
    kind = record["kind"] + (f" sd {record['retrain_sd']}" if record.get("retrain_sd") is not None else "")
    lines = [f"== {record['attributes']}, base {record['world'][0]}, template sd {record['world'][1]}, {kind}, "
             f"{record.get('coupling', 'independent')} coupling: {runs} pairs ({record['seconds']} s) =="]
    if record["kind"] in UNCHANGED:
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
    lines.append(f"  adaptive completions / fixed: median {np.median(stops):.3f}, mean {np.mean(stops):.3f}; stopped "
                 f"early with all certified {share('adaptive stopped certified all')}")
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
    parser.add_argument("--coupling", nargs="+", default=["independent"], choices=COUPLINGS,
                        help="new randomness for the candidate, or common random numbers (--baseline-model)")
    parser.add_argument("--retrain-sd", nargs="+", type=float, default=[0.1],
                        help="sd of the per-prompt logit noise of the 'retrained' candidate")
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
    cases = [(coupling, kind, sd) for coupling in args.coupling for kind in args.kinds
             for sd in (args.retrain_sd if kind == "retrained" else [0.0])]
    for attributes in args.attributes:
        bench = Bench(attributes, args.resamples)
        for base, template_sd, (coupling, kind, retrain_sd) in itertools.product(args.worlds, args.template_sd, cases):
            record = tally(bench, HonestWorld(base, template_sd), kind, args.runs, args.first, coupling=coupling,
                           retrain_sd=retrain_sd)
            print(show(record), flush=True)
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps(record) + "\n")

if __name__ == "__main__":
    main()
