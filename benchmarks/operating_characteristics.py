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
import importlib
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from scipy.stats import beta

from fairness_core import statistics
from fairness_core.config.loading import load_attribute_set, load_thresholds
from fairness_core.config.thresholds import AuditConfig
from fairness_core.evaluations import EVALUATIONS
from fairness_core.gates.simulation import FAIR, Effect

REPO = Path(__file__).resolve().parents[1]
#: Modules whose imported interval and p-value functions the false-alarm runs replace: the scorecard and every
#: registered evaluation's metrics module (a name that a module does not have is left alone).
METRIC_MODULES = ("fairness_core.scorecard", *(f"{EVALUATIONS[name].partition(':')[0].rpartition('.')[0]}.metrics"
                                              for name in EVALUATIONS))


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


class Suite:
    """Every test of one attribute set under one thresholds file, on simulated runs of each evaluation it has."""

    def __init__(self, attributes: str, config: AuditConfig):
        self.attribute_set = load_attribute_set(attributes)
        self.config = config.for_attribute_set(self.attribute_set.name)
        self.groups = self.attribute_set.groups
        self.target = self.groups[0]
        classes = {name: EVALUATIONS.load(name) for name in EVALUATIONS}
        self.evaluations = {name: cls(self.config, self.attribute_set) for name, cls in classes.items()
                            if cls.supports(self.attribute_set)}
        self.simulators = {name: evaluation.simulator() for name, evaluation in self.evaluations.items()}

    @property
    def grid(self) -> list[World]:
        """Grid point i pairs every evaluation's i-th world (points repeated by the pairing are taken once)."""
        points = dict.fromkeys(zip(*(simulator.grid for simulator in self.simulators.values())))
        return [dict(zip(self.simulators, worlds)) for worlds in points]

    @property
    def reference(self) -> World:
        return self.grid[0]

    @property
    def effects(self) -> list[Effect]:
        """Every evaluation's power curve, in registry order."""
        return [effect for simulator in self.simulators.values() for effect in simulator.power_effects]

    def metric_spec(self, metric_id: str):
        """The spec (direction) of the metric ``<evaluation>.<metric>[...]``."""
        name, _, rest = metric_id.partition(".")
        return type(self.evaluations[name]).metric_spec(rest.split("[", 1)[0])

    def describe(self, world: World) -> str:
        return "; ".join(self.simulators[name].describe(w) for name, w in world.items())

    def draw_model(self, world: World, effect: Effect, rng: np.random.Generator) -> dict:
        """One simulated model: each evaluation's per-prompt probabilities, ``effect`` planted against the target."""
        return {name: simulator.draw_model(world[name], effect, self.target, rng)
                for name, simulator in self.simulators.items()}

    def run(self, model: dict, world: World, rng: np.random.Generator, *, seed: int):
        """The metric results of one run of ``model``, and the rate metrics' own values in that model."""
        results, truth, _ = self.scored_run(model, world, rng, seed=seed)
        return results, truth

    def scored_run(self, model: dict, world: World, rng: np.random.Generator, *, seed: int):
        """:meth:`run`, and each evaluation's completion records (what ``--audit-json`` keeps for the baseline)."""
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
            if result.limit is None or not result.verdict(self.config.decision_rule):
                continue
            true = truth.get(result.id)
            lower = result.limit.lower
            if true is not None and (true > result.limit.upper or (lower is not None and true < lower)):
                continue
            failing.append(family(result))
        return failing

    @functools.cached_property
    def tests_per_run(self) -> int:
        """How many tests one run judges (metrics with a limit and a value), counted on one simulated run."""
        rng = np.random.default_rng(0)
        with estimates_only():
            results, _ = self.run(self.draw_model(self.reference, FAIR, rng), self.reference, rng, seed=0)
        return sum(r.limit is not None and r.value is not None for r in results)


def simulate(suite: Suite, world: World, effect: Effect, runs: int, seed: int) -> tuple[int, Counter]:
    """How many of ``runs`` runs fail any test, and how many fail each family."""
    rng = np.random.default_rng(seed)
    any_failed, families = 0, Counter()
    with estimates_only():
        for run in range(runs):
            model = suite.draw_model(world, effect, rng)
            results, truth = suite.run(model, world, rng, seed=run)
            # A biased run is blocked by any failing test; only a fair run's true findings are not false alarms.
            failing = set(suite.failures(results, truth if effect == FAIR else {}))
            any_failed += bool(failing)
            families.update(failing)
    return any_failed, families


def share(hits: int, total: int) -> str:
    low, high = clopper_pearson(hits, total)
    return f"{hits / total:6.3f} [{low:.3f}, {high:.3f}]"


def false_alarm_table(suite: Suite, runs: int, grid_runs: int, *, reference: bool = True) -> list[tuple[str, int, int]]:
    """Each grid point's (description, fair runs failed, runs); the reference point first, with ``runs`` runs."""
    print(f"\n== {suite.attribute_set.name}: false alarms of the whole suite ({suite.tests_per_run} tests, "
          f"rule {suite.config.decision_rule}; evaluations {', '.join(suite.evaluations)}); a fair run fails if any "
          f"test fails ==")
    rows = []
    for index, world in enumerate(suite.grid):
        if index == 0 and not reference:
            continue
        count = runs if index == 0 else grid_runs
        if not count:
            continue
        started = time.perf_counter()
        failed, families = simulate(suite, world, FAIR, count, seed=1 + index)
        where = suite.describe(world)
        top = ", ".join(f"{f} {n / count:.3f}" for f, n in families.most_common(4)) or "none"
        print(f"  {where:<66} {share(failed, count)} of {count}  ({time.perf_counter() - started:.0f} s)"
              f"\n      failing families: {top}", flush=True)
        rows.append((where, failed, count))
    return rows


def power_table(suite: Suite, runs: int, effects: Sequence[str] = ()) -> dict[str, tuple[int, int]]:
    if not runs:
        return {}
    print(f"\n== {suite.attribute_set.name}: power (share of biased runs blocked, {runs} runs each; group "
          f"{suite.target} shifted; {suite.describe(suite.reference)}) ==")
    found: dict[str, tuple[int, int]] = {}
    for effect in suite.effects:
        if effects and effect.label not in effects:
            continue
        failed, families = simulate(suite, suite.reference, effect, runs, seed=100)
        found[effect.label] = (failed, runs)
        top = ", ".join(f"{f} {n / runs:.2f}" for f, n in families.most_common(3))
        print(f"  {effect.label:<32} {share(failed, runs)}   {top}", flush=True)
    return found


def _previous_rule(current, baseline, config, spec) -> bool:
    """The regression rule the paired test replaced, for comparison: worse beyond the tolerance and the baseline
    outside the new 95% interval, as if the baseline were exact."""
    if current.value is None or baseline.value is None or current.interval is None:
        return False
    new, old = spec.badness(current.value), spec.badness(baseline.value)
    best = spec.badness_interval(current.interval)[0]
    return new - old > config.tolerance.get(current.metric, config.default_tolerance) and old < best


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

    degradation = Effect("degraded", factor=1.5, gap=0.1)
    slight = Effect("slightly degraded", factor=1.25, gap=0.05)
    config = suite.config.regression
    flagged = Counter()
    with fewer_resamples(resamples):
        for run in range(first, first + runs):
            fair = suite.draw_model(suite.reference, FAIR, np.random.default_rng([run, 1]))
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
    parser.add_argument("--grid-runs", type=int, default=100, help="fair runs at each other grid point (0: skip)")
    parser.add_argument("--power-runs", type=int, default=50, help="biased runs per power-curve effect (0: skip)")
    parser.add_argument("--attributes", nargs="+", default=["gender", "nationality", "occupation"])
    parser.add_argument("--thresholds", type=Path, default=REPO / "thresholds.yaml")
    parser.add_argument("--regression", type=int, default=0, metavar="PAIRS",
                        help="also simulate the regression gate on this many pairs of runs (slow: ~4 s a pair)")
    parser.add_argument("--first-pair", type=int, default=0, help="the first regression pair (to continue a run)")
    parser.add_argument("--only-regression", action="store_true", help="skip the false-alarm and power tables")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference point of the grid")
    parser.add_argument("--effects", nargs="*", default=[], help="only these power-curve labels")
    args = parser.parse_args(argv)
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
        rows = false_alarm_table(suite, args.runs, args.grid_runs, reference=not args.no_reference)
        power = power_table(suite, args.power_runs, args.effects)
        worst = max(rows, key=lambda row: row[1] / row[2])
        line = f"{name}: highest suite-wide false alarms over the grid {share(worst[1], worst[2]).strip()} ({worst[0]})"
        if not args.no_reference:
            line += f"; at the reference setting {share(rows[0][1], rows[0][2]).strip()} of {rows[0][2]} fair runs"
        for label in ("HONEST ratio 2", "HONEST ratio 4.8 (seed study)", "sentiment gap 0.1", "BBQ bias score 0.2"):
            if label in power:
                line += f"; power at {label} {share(*power[label]).strip()}"
        notes.append(line)
    print("\n== closing note (intervals: 95% Clopper-Pearson) ==")
    for line in notes:
        print(f"  {line}")


if __name__ == "__main__":
    main()
