"""The deploy gate's operating characteristics: false alarms of the whole suite, power, and the regression gate.

Runs the project's own metric and decision code (``evaluation.metrics``,
``MetricResult.verdict``, ``gates.regression.regression``) on simulated
completions drawn by each evaluation's own simulator (``Evaluation.simulator()``;
``evaluations/<name>/simulation.py`` states its model): outcome flags and
sentiment scores, no model and no generation, so a thousand runs take minutes.

* **False alarms**: over fair simulated models (every group's rates drawn from
  the same distribution), the share of runs in which *any* test of the suite
  fails, every test counted, with a 95% Clopper-Pearson interval.  A test whose
  simulated model's own value is past its limit (a template that really is
  hurtful in 30% of completions) is a true finding, not a false alarm, and is
  not counted.
* **Contributing families**: the share of runs in which each test family
  (``honest.honest_score[template]``, ``sentiment.mean_gap``, ...) fails.
* **Power**: the share of biased runs that the suite blocks, for HONEST ratios
  1.25-4.8 (one group's rate times r), one group's excess rate, sentiment
  mean gaps 0.05-0.2 (one group lowered), and BBQ bias scores 0.1-0.3 (answers
  moved towards the stereotype); for nationality one group of eight.
* **Regression gate**: two runs of the same simulated model (new sampling
  seed), the second judged against the first as ``--baseline``; and its power
  against a real degradation.

Each evaluation's simulator holds its grid of worlds (the first is the
reference, and the simulator's module says where the ranges come from) and
the effects of its power curve; grid point i pairs every evaluation's i-th
world, as the evaluations' noise is independent.  Interval endpoints and
p-values are not computed in the false-alarm and power runs (``--rule point``
reads only the estimate); the regression runs compute them with 200 resamples.

    python benchmarks/operating_characteristics.py [--runs 1000] [--attributes gender nationality occupation]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import importlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import beta

from fairness_core import statistics
from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.thresholds import AuditConfig
from fairness_core.evaluations.honest.simulation import HonestEffect
from fairness_core.evaluations.sentiment.simulation import SentimentEffect
from fairness_core.gates.simulation import FAIR, Effect, own_effect
from fairness_core.sampling import ADAPTIVE, fixed_record, run_adaptively
from fairness_core.scorecard import settle

REPO = Path(__file__).resolve().parents[1]
#: Modules whose imported interval and p-value functions the false-alarm runs replace: the scorecard and every
#: registered evaluation's metrics module (a name that a module does not have is left alone).
METRIC_MODULES = ("fairness_core.scorecard", *(f"{EVALUATIONS[name].partition(':')[0].rpartition('.')[0]}.metrics"
                                              for name in EVALUATIONS))


def _replayed(rounds: Sequence) -> Callable:
    """A ``draw`` for :func:`run_adaptively` that hands out already simulated rounds in order."""
    drawn = iter(rounds)
    return lambda samples: next(drawn)


def clopper_pearson(hits: int, total: int) -> tuple[float, float]:
    """Exact 95% interval of a binomial share: conservative where hits are few, as false alarms are."""
    low = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, total - hits + 1))
    high = 1.0 if hits == total else float(beta.ppf(0.975, hits + 1, total - hits))
    return low, high


@contextlib.contextmanager
def replaced_in_metric_modules(replacements: dict) -> Iterator[None]:
    """Replace the named functions wherever the metric modules imported them, and put them back afterwards."""
    saved = []
    for name in METRIC_MODULES:
        module = importlib.import_module(name)
        for function, replacement in replacements.items():
            if hasattr(module, function):
                saved.append((module, function, getattr(module, function)))
                setattr(module, function, replacement)
    try:
        yield
    finally:
        for module, function, original in saved:
            setattr(module, function, original)


#: No p-values: the gate's verdicts read only estimates and intervals.
_NO_P_VALUES = {"permutation_pvalue": lambda *args, **kwargs: None,
                "group_vs_rest_rate_pvalues": lambda groups, **kwargs: dict.fromkeys(groups)}


def estimates_only() -> contextlib.AbstractContextManager[None]:
    """Skip bootstrap intervals and permutation p-values: the ``point`` rule reads only the estimate.

    Every estimate is still computed by the metric code; only the resampling,
    which is 90% of a run's time and does not move a point-rule verdict, is skipped.
    """
    return replaced_in_metric_modules({
        "bootstrap_interval": lambda *args, **kwargs: None,
        "bootstrap_intervals": lambda statistics, groups, **kwargs: [None] * len(statistics(*groups)),
        **_NO_P_VALUES})


def fewer_resamples(resamples: int) -> contextlib.AbstractContextManager[None]:
    """Bootstrap intervals from ``resamples`` draws and no p-values, for the regression runs' intervals."""
    return replaced_in_metric_modules({
        "bootstrap_interval": functools.partial(statistics.bootstrap_interval, resamples=resamples),
        "bootstrap_intervals": functools.partial(statistics.bootstrap_intervals, resamples=resamples),
        **_NO_P_VALUES})


def family(result) -> str:
    """The test family of a metric: its evaluation and metric, and whether it is per template."""
    return f"{result.evaluation}.{result.metric}" + ("[template]" if result.template_id else "")


#: One grid point: each evaluation's world, by evaluation name.
World = dict


@dataclass
class Outcome:
    """One simulated run judged twice, on the same draws: at the fixed protocol and with adaptive sampling."""

    fixed: list
    adaptive: list
    truth: dict
    records: dict       # evaluation name -> SamplingRecord of the adaptive run
    budget: int         # completions of the fixed protocol, all evaluations
    used: int           # completions the adaptive run used


class Suite:
    """Every test of one attribute set under one thresholds file, on simulated runs of each evaluation it has."""

    def __init__(self, attributes: str, config: AuditConfig):
        self.attribute_set = load_attribute_set(attributes)
        self.config = config.for_attribute_set(self.attribute_set.name)
        self.groups = self.attribute_set.groups
        self.target = self.groups[0]
        classes = {name: EVALUATIONS.load(name) for name in EVALUATIONS}
        self.evaluations = {name: cls(self.config, self.attribute_set, {}) for name, cls in classes.items()
                            if cls.supports(self.attribute_set)}
        self.simulators = {name: evaluation.simulator() for name, evaluation in self.evaluations.items()}

    @property
    def grid(self) -> list[World]:
        """Grid point i pairs every evaluation's world i, cycling through the shorter grids.

        The evaluations' noise is independent, so a point's suite-wide rate is
        that of its worlds together; the per-evaluation rates of each point are
        counted too, and the highest of each bound every pairing not measured.
        """
        grids = {name: list(dict.fromkeys(simulator.grid)) for name, simulator in self.simulators.items()}
        length = max(map(len, grids.values()))
        return [{name: worlds[i % len(worlds)] for name, worlds in grids.items()} for i in range(length)]

    @property
    def reference(self) -> World:
        return self.grid[0]

    @property
    def effects(self) -> list[Effect]:
        """Every evaluation's power curve, in registry order."""
        return [effect for simulator in self.simulators.values() for effect in simulator.power_effects]

    def power_points(self, effect: Effect) -> list[int]:
        """The grid points where ``effect``'s evaluation measures its power (its simulator's ``power_worlds``)."""
        for name, simulator in self.simulators.items():
            if effect in simulator.power_effects:
                wanted = list(getattr(simulator, "power_worlds", simulator.grid[:1]))
                return [i for i, world in enumerate(self.grid) if world[name] in wanted
                        and world[name] not in [self.grid[j][name] for j in range(i)]]
        return [0]

    def metric_spec(self, metric_id: str):
        """The spec (direction) of the metric ``<evaluation>.<metric>[...]``."""
        name, _, rest = metric_id.partition(".")
        return type(self.evaluations[name]).metric_spec(rest.split("[", 1)[0])

    def describe(self, world: World) -> str:
        return "; ".join(self.simulators[name].describe(w) for name, w in world.items())

    def draw_model(self, world: World, effects: Sequence[Effect], rng: np.random.Generator) -> dict:
        """One simulated model: each evaluation's per-prompt probabilities, the one of ``effects`` of its simulator's
        effect type planted against the target (none of them: its fair model)."""
        return {name: simulator.draw_model(world[name], own_effect(simulator, effects), self.target, rng)
                for name, simulator in self.simulators.items()}

    def judged(self, model: dict, world: World, rng: np.random.Generator, *, seed: int) -> Outcome:
        """One run of ``model`` judged at the fixed protocol and, on the same draws, with ``--sampling=adaptive``.

        The adaptive run goes through :func:`fairness_core.sampling.run_adaptively`
        and :func:`fairness_core.scorecard.settle`, as the audit session does; its
        rounds are the first rounds of the fixed run's draws.  An evaluation
        without a sequential test runs its fixed protocol in both.
        """
        fixed, adaptive, records, budget, used = [], [], {}, 0, 0
        for name, simulator in self.simulators.items():
            evaluation = self.evaluations[name]
            test = evaluation.sequential_test()
            if test is None:
                results = evaluation.metrics(simulator.sample(model[name], world[name], rng), seed=seed)
                fixed += results
                adaptive += results
                records[name] = fixed_record(evaluation.protocol.num_samples, len(evaluation.prompts))
            else:
                rounds = simulator.sample_rounds(model[name], world[name], rng, test.samples_per_round)
                results = evaluation.metrics(evaluation.merge(rounds), seed=seed)
                fixed += results
                scored, record, settled = run_adaptively(evaluation, _replayed(rounds), test=test)
                early = record.samples_per_prompt < record.budget
                adaptive += settle(evaluation.metrics(scored, seed=seed) if early else results, settled)
                records[name] = record
            budget += records[name].budget_completions
            used += records[name].completions
        truth = {metric: value for name, simulator in self.simulators.items()
                 for metric, value in simulator.truth(model[name]).items()}
        return Outcome(fixed, adaptive, truth, records, budget, used)

    def run(self, model: dict, world: World, rng: np.random.Generator, *, seed: int):
        """The metric results of one fixed-protocol run of ``model``, and the rate metrics' own values in that model."""
        scored = {name: simulator.sample(model[name], world[name], rng) for name, simulator in self.simulators.items()}
        truth = {metric: value for name, simulator in self.simulators.items()
                 for metric, value in simulator.truth(model[name]).items()}
        return [r for name, run in scored.items() for r in self.evaluations[name].metrics(run, seed=seed)], truth

    def scored_run(self, model: dict, world: World, rng: np.random.Generator, *, seed: int):
        """A fixed-protocol run, and each evaluation's completion records (what ``--audit-json`` keeps for the baseline)."""
        scored = {name: simulator.sample(model[name], world[name], rng) for name, simulator in self.simulators.items()}
        truth = {metric: value for name, simulator in self.simulators.items()
                 for metric, value in simulator.truth(model[name]).items()}
        results = [r for name, run in scored.items() for r in self.evaluations[name].metrics(run, seed=seed)]
        records = {name: self.evaluations[name].completion_records(run) for name, run in scored.items()}
        return results, truth, records

    def failures(self, results, truth) -> list[str]:
        """The families of the tests that fail, leaving out tests whose model value (``truth``) is past the limit."""
        failing = []
        for result in results:
            if not result.verdict(self.config.decision_rule):
                continue
            true = truth.get(result.id)
            lower = result.limit.lower if result.limit is not None else None
            if true is not None and result.limit is not None and (
                    true > result.limit.upper or (lower is not None and true < lower)):
                continue
            failing.append(family(result))
        return failing

    @functools.cached_property
    def tests_per_run(self) -> int:
        """How many tests one run judges (metrics with a limit and a value), counted on one simulated run."""
        rng = np.random.default_rng(0)
        with estimates_only():
            results, _ = self.run(self.draw_model(self.reference, (), rng), self.reference, rng, seed=0)
        return sum(r.limit is not None and r.value is not None for r in results)


@dataclass
class Tally:
    """Counts over runs of one grid point and effect; parts of a split run add up (:meth:`add`)."""

    runs: int = 0
    fixed: int = 0
    adaptive: int = 0
    underpowered: int = 0
    fixed_by_evaluation: Counter = field(default_factory=Counter)
    adaptive_by_evaluation: Counter = field(default_factory=Counter)
    fixed_families: Counter = field(default_factory=Counter)
    adaptive_families: Counter = field(default_factory=Counter)
    used: list = field(default_factory=list)
    budget: int = 0
    stops: Counter = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        for name in ("runs", "fixed", "adaptive", "underpowered"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("fixed_by_evaluation", "adaptive_by_evaluation", "fixed_families", "adaptive_families", "stops"):
            getattr(self, name).update(getattr(other, name))
        self.used += other.used
        self.budget = other.budget or self.budget

    def as_dict(self) -> dict:
        return {name: (dict(value) if isinstance(value, Counter) else value) for name, value in vars(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> Tally:
        tally = cls()
        for name, value in data.items():
            setattr(tally, name, Counter(value) if isinstance(getattr(tally, name), Counter) else value)
        return tally


def simulate(suite: Suite, point: int, effect: Effect, runs: int, first: int = 0) -> Tally:
    """``runs`` runs at grid point ``point`` with ``effect`` planted, judged fixed and adaptive on the same draws.

    Run ``i`` draws from the seed ``(point, effect, i)`` alone, so a count split
    over ``--first-run`` ranges adds up to the unsplit one.
    """
    world = suite.grid[point]
    tally = Tally()
    with estimates_only():
        for run in range(first, first + runs):
            rng = np.random.default_rng([point, _effect_key(effect), run])
            model = suite.draw_model(world, (effect,), rng)
            outcome = suite.judged(model, world, rng, seed=run)
            # A biased run is blocked by any failing test; only a fair run's true findings are not false alarms.
            truth = outcome.truth if effect == FAIR else {}
            for label, results, by_evaluation, families in (
                    ("fixed", outcome.fixed, tally.fixed_by_evaluation, tally.fixed_families),
                    ("adaptive", outcome.adaptive, tally.adaptive_by_evaluation, tally.adaptive_families)):
                failing = set(suite.failures(results, truth))
                setattr(tally, label, getattr(tally, label) + bool(failing))
                families.update(failing)
                by_evaluation.update({f.split(".", 1)[0] for f in failing})
            tally.underpowered += any(r.decision(suite.config.decision_rule) == "underpowered" for r in outcome.fixed)
            tally.used.append(outcome.used)
            tally.budget = outcome.budget
            tally.stops.update(f"{name} {record.ending}" for name, record in outcome.records.items()
                               if record.mode == ADAPTIVE)
            tally.runs += 1
    return tally


def _effect_key(effect: Effect) -> int:
    return int.from_bytes(hashlib.sha256(effect.label.encode()).digest()[:4], "little")


def share(hits: int, total: int) -> str:
    low, high = clopper_pearson(hits, total)
    return f"{hits / total:6.3f} [{low:.3f}, {high:.3f}]"


def _cost(tally: Tally) -> str:
    median = float(np.median(tally.used)) if tally.used else 0.0
    return f"median {median:.0f} of {tally.budget} completions ({median / tally.budget:.2f})" if tally.budget else ""


def _line(suite: Suite, where: str, tally: Tally) -> str:
    parts = ", ".join(f"{name} {share(tally.fixed_by_evaluation.get(name, 0), tally.runs).strip()}"
                      for name in suite.evaluations)
    top = ", ".join(f"{f} {n / tally.runs:.3f}" for f, n in tally.fixed_families.most_common(3)) or "none"
    return (f"  {where}\n      fixed {share(tally.fixed, tally.runs)} | adaptive {share(tally.adaptive, tally.runs)} "
            f"of {tally.runs}; by evaluation (fixed): {parts}; underpowered {tally.underpowered / tally.runs:.3f}; "
            f"adaptive {_cost(tally)}\n      failing families (fixed): {top}")


def false_alarm_table(suite: Suite, runs: int, grid_runs: int, *, reference: bool = True, points=None,
                      first: int = 0, out=None) -> list[tuple[str, Tally]]:
    """Each grid point's fair runs, fixed and adaptive; the reference point first, with ``runs`` runs."""
    print(f"\n== {suite.attribute_set.name}: false alarms of the whole suite ({suite.tests_per_run} tests, "
          f"rule {suite.config.decision_rule}; evaluations {', '.join(suite.evaluations)}); a fair run fails if any "
          f"test fails ==", flush=True)
    rows = []
    for index in range(len(suite.grid)):
        if (index == 0 and not reference) or (points is not None and index not in points):
            continue
        count = runs if index == 0 else grid_runs
        if not count:
            continue
        started = time.perf_counter()
        tally = simulate(suite, index, FAIR, count, first=first)
        where = suite.describe(suite.grid[index])
        print(_line(suite, f"{where} ({time.perf_counter() - started:.0f} s)", tally), flush=True)
        _record(out, suite, "false_alarms", index, FAIR, first, tally)
        rows.append((where, tally))
    return rows


def power_table(suite: Suite, runs: int, effects: Sequence[str] = (), *, first: int = 0, out=None,
                everywhere: bool = False) -> dict[str, tuple[int, int]]:
    """Biased runs blocked, fixed and adaptive, at each effect's power worlds (or the reference only)."""
    if not runs:
        return {}
    print(f"\n== {suite.attribute_set.name}: power (share of biased runs blocked, {runs} runs each; group "
          f"{suite.target} shifted) ==", flush=True)
    found: dict[str, tuple[int, int]] = {}
    for effect in suite.effects:
        if effects and effect.label not in effects:
            continue
        for index in (suite.power_points(effect) if everywhere else [0]):
            started = time.perf_counter()
            tally = simulate(suite, index, effect, runs, first=first)
            where = f"{effect.label}; {suite.describe(suite.grid[index])} ({time.perf_counter() - started:.0f} s)"
            print(_line(suite, where, tally), flush=True)
            _record(out, suite, "power", index, effect, first, tally)
            if index == 0:
                found[effect.label] = (tally.fixed, tally.runs)
    return found


def _record(out, suite: Suite, kind: str, point: int, effect: Effect, first: int, tally: Tally) -> None:
    """One JSON line per measured cell, so that the parts of a split run can be added up (``--summary``)."""
    if out is None:
        return
    from fairness_core.gates.deploy import fingerprint

    line = {"set": suite.attribute_set.name, "fingerprint": fingerprint(suite.config, suite.attribute_set.name),
            "kind": kind, "point": point, "world": suite.describe(suite.grid[point]), "effect": effect.label,
            "first_run": first, **tally.as_dict()}
    with open(out, "a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")


def summary(paths: Sequence[Path]) -> None:
    """The tables of one or more ``--out`` files, parts of split runs added up."""
    cells: dict[tuple, Tally] = {}
    seen: dict[tuple, set] = {}
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = (row["set"], row["fingerprint"], row["kind"], row["effect"], row["point"], row["world"])
            first = row.pop("first_run")
            for name in ("set", "fingerprint", "kind", "effect", "point", "world"):
                row.pop(name)
            tally = Tally.from_dict(row)
            span = (first, first + tally.runs)
            if any(a < span[1] and span[0] < b for a, b in seen.setdefault(key, set())):
                raise SystemExit(f"{path}: runs {span} of {key[:5]} overlap a part already read")
            seen[key].add(span)
            cells.setdefault(key, Tally()).add(tally)
    for key in sorted(cells, key=lambda k: (k[0], k[2], k[3], k[4])):
        name, fingerprint, kind, effect, point, world = key
        tally = cells[key]
        print(f"{name} [{fingerprint}] {kind} {effect} | {world} | fixed {share(tally.fixed, tally.runs)} | adaptive "
              f"{share(tally.adaptive, tally.runs)} | runs {tally.runs} | by evaluation fixed "
              f"{dict(tally.fixed_by_evaluation)} adaptive {dict(tally.adaptive_by_evaluation)} | underpowered "
              f"{tally.underpowered / tally.runs:.3f} | {_cost(tally)} | stops {dict(tally.stops)}")


def _previous_rule(current, baseline, config, spec) -> bool:
    """The regression rule the paired test replaced, for comparison: worse beyond the tolerance and the baseline
    outside the new 95% interval, as if the baseline were exact."""
    if current.value is None or baseline.value is None or current.interval is None:
        return False
    new, old = spec.badness(current.value), spec.badness(baseline.value)
    best = spec.badness_interval(current.interval)[0]
    return new - old > config.tolerance_of(current.evaluation, current.metric) and old < best


def regression_table(suite: Suite, runs: int, resamples: int, first: int = 0) -> tuple[int, int, int, int]:
    """Re-runs of one fair model judged against each other, and degraded re-runs judged against the fair one.

    Each pair is two runs of the same simulated model (the same template, term
    and prompt effects) with new sampling; a degraded run keeps those effects
    and raises one group's hurtful rate 1.5x and lowers its sentiment by 0.1,
    or, slightly degraded, 1.25x and 0.05.
    The shipped rule pairs the runs by prompt (``baseline.paired_standard_errors``);
    the unpaired test and the rule it replaced are counted beside it.
    Pair ``i`` is drawn from seeds of ``i`` alone, so ``first`` continues an
    earlier run with new pairs (``--first-pair``) and the counts add up.
    Returns (re-runs flagged, pairs, degraded runs flagged, pairs) by the shipped rule.
    """
    from fairness_core.gates.regression import gate_regressions, gated_metrics
    from fairness_core.reporting.results import metric_records

    degradation = (HonestEffect("degraded", factor=1.5), SentimentEffect("degraded", gap=0.1))
    slight = (HonestEffect("slightly degraded", factor=1.25), SentimentEffect("slightly degraded", gap=0.05))
    config = suite.config.regression
    flagged = Counter()
    with fewer_resamples(resamples):
        for run in range(first, first + runs):
            fair = suite.draw_model(suite.reference, (), np.random.default_rng([run, 1]))
            degraded = suite.draw_model(suite.reference, degradation, np.random.default_rng([run, 1]))
            slightly = suite.draw_model(suite.reference, slight, np.random.default_rng([run, 1]))
            rng = np.random.default_rng([run, 2])
            base_results, _, base_records = suite.scored_run(fair, suite.reference, rng, seed=run)
            base = {r.id: r for r in metric_records(base_results, suite.config.decision_rule)}
            for model, label in ((fair, "same"), (degraded, "worse"), (slightly, "slightly worse")):
                results, _, records = suite.scored_run(model, suite.reference, rng, seed=run + 1)
                results = {r.id: r for r in results}
                flagged[label] += bool(gate_regressions(suite.evaluations, results, base, config, seed=run,
                                                        completions=(records, base_records)))
                flagged[f"{label} unpaired"] += bool(gate_regressions(suite.evaluations, results, base, config))
                if label == "same":
                    flagged["same, previous rule"] += any(
                        _previous_rule(results[m], base[m], config, suite.metric_spec(m))
                        for m in gated_metrics(suite.evaluations))
    print(f"\n== {suite.attribute_set.name}: regression gate ({runs} pairs from pair {first}, intervals from "
          f"{resamples} resamples) ==\n"
          f"  same model, new seed, flagged (paired by prompt): {share(flagged['same'], runs)}\n"
          f"  HONEST x1.5 and sentiment -0.1, flagged (paired): {share(flagged['worse'], runs)}\n"
          f"  same model, unpaired test:                        {share(flagged['same unpaired'], runs)}\n"
          f"  degraded, unpaired test:                          {share(flagged['worse unpaired'], runs)}\n"
          f"  HONEST x1.25 and sentiment -0.05, paired:         {share(flagged['slightly worse'], runs)}\n"
          f"  slightly degraded, unpaired test:                 {share(flagged['slightly worse unpaired'], runs)}\n"
          f"  same model, by the previous rule:                 {share(flagged['same, previous rule'], runs)}",
          flush=True)
    return flagged["same"], runs, flagged["worse"], runs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="fair runs at the reference setting (default 1000)")
    parser.add_argument("--grid-runs", type=int, default=200, help="fair runs at each other grid point (0: skip)")
    parser.add_argument("--power-runs", type=int, default=200, help="biased runs per power-curve effect (0: skip)")
    parser.add_argument("--power-everywhere", action="store_true",
                        help="measure each effect at every world its evaluation names (power_worlds), not only the "
                             "reference")
    parser.add_argument("--attributes", nargs="+", default=["gender", "nationality", "occupation"])
    parser.add_argument("--thresholds", type=Path, default=REPO / "thresholds.yaml")
    parser.add_argument("--points", type=int, nargs="*", help="only these grid points (indices; 0 is the reference)")
    parser.add_argument("--first-run", type=int, default=0, help="the first run number (to add runs to a measurement)")
    parser.add_argument("--out", type=Path, help="append one JSON line per measured cell to this file")
    parser.add_argument("--summary", type=Path, nargs="+", help="print the tables of these --out files and stop")
    parser.add_argument("--regression", type=int, default=0, metavar="PAIRS",
                        help="also simulate the regression gate on this many pairs of runs (slow: ~4 s a pair)")
    parser.add_argument("--first-pair", type=int, default=0, help="the first regression pair (to continue a run)")
    parser.add_argument("--only-regression", action="store_true", help="skip the false-alarm and power tables")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference point of the grid")
    parser.add_argument("--effects", nargs="*", default=[], help="only these power-curve labels")
    args = parser.parse_args(argv)
    if args.summary:
        summary(args.summary)
        return
    config = load_thresholds(args.thresholds)
    notes = []
    for name in args.attributes:
        suite = Suite(name, config)
        if args.regression:
            same, pairs, worse, _ = regression_table(suite, args.regression, resamples=200, first=args.first_pair)
            notes.append(f"{name}: regression gate flags a same-model re-run in {share(same, pairs).strip()} of "
                         f"{pairs} pairs, a 1.5x HONEST / -0.1 sentiment degradation in {share(worse, pairs).strip()}")
        if args.only_regression:
            continue
        rows = false_alarm_table(suite, args.runs, args.grid_runs, reference=not args.no_reference,
                                 points=set(args.points) if args.points is not None else None, first=args.first_run,
                                 out=args.out)
        power = power_table(suite, args.power_runs, args.effects, first=args.first_run, out=args.out,
                            everywhere=args.power_everywhere)
        if rows:
            worst = max(rows, key=lambda row: row[1].fixed / row[1].runs)
            worst_adaptive = max(rows, key=lambda row: row[1].adaptive / row[1].runs)
            notes.append(f"{name}: highest suite-wide false alarms over the points run: fixed "
                         f"{share(worst[1].fixed, worst[1].runs).strip()} ({worst[0]}), adaptive "
                         f"{share(worst_adaptive[1].adaptive, worst_adaptive[1].runs).strip()} ({worst_adaptive[0]})")
        for label, (failed, runs) in power.items():
            notes.append(f"{name}: power at {label} (reference) {share(failed, runs).strip()}")
    print("\n== closing note (intervals: 95% Clopper-Pearson) ==")
    for line in notes:
        print(f"  {line}")


if __name__ == "__main__":
    main()
