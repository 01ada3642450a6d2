"""The non-inferiority gate: each gated metric certified, a regression, or undecided against the baseline.

:mod:`.noninferiority` holds the statistics; this module feeds it an
evaluation's runs.  Both runs' completions are cut into prompt units
(:meth:`~fairness_core.api.evaluation.Evaluation.prompt_units`), the gated
values computed from them (:meth:`~fairness_core.api.evaluation.Evaluation.gated_values`),
and the change of each metric's badness (its :class:`~fairness_core.api.evaluation.MetricSpec`
direction: higher for a rate, further from 1 for a ratio as ``|log ratio|``,
further from 0 for a bias score) gets a standard error from a bootstrap over
prompts:

* **paired by prompt** where both runs asked the same prompts: each resampled
  prompt brings its completions from both runs, so what the prompt shares between
  them (its template's wording, its term) leaves the difference;
* **unpaired** otherwise (and as a comparison in ``benchmarks/certification.py``):
  each run resampled on its own.

The level ``alpha`` is divided among every gated metric of the run (Bonferroni),
so the whole gate falsely certifies, or falsely flags, with probability <= alpha.
The same function judges the audit's runs and the simulated ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fairness_core.config.thresholds import RegressionConfig
from fairness_core.gates.noninferiority import (
    BURN_IN,
    CERTIFIED,
    REGRESSION,
    UNDECIDED,
    Comparison,
    compare,
    needed_fraction,
    radius,
)
from fairness_core.gates.regression import metric_name
from fairness_core.statistics import group_resamples, standard_error_towards

if TYPE_CHECKING:
    from fairness_core.api.evaluation import Evaluation, MetricSpec
    from fairness_core.reporting.results import AuditResults, CompletionRecord, MetricRecord
    from fairness_core.sampling import SequentialTest
    from fairness_core.scorecard import MetricResult, Settlement

#: Bootstrap resamples for a standard error (the tails of an interval would need more).
RESAMPLES = 200
#: An adaptive certification's alpha is split: this share for the confidence sequence at the looks before the
#: budget, the rest for one look at the budget.  A run that reaches the budget is then judged by a bound nearly as
#: narrow as a fixed run's (z(1 - alpha/2m) standard errors against z(1 - alpha/m)) instead of the sequence's,
#: about 1.5 times as wide there (docs/gate.md: the ratio's power at twice its tolerance fell to 0.30 with it).
INTERIM_SHARE = 0.5


def tolerance_of(metric_id: str, config: RegressionConfig) -> float:
    """The tolerance of ``metric_id`` (``regression.tolerance``: ``<evaluation>.<metric>``, else the metric's name,
    else ``default_tolerance``)."""
    return config.tolerance_of(metric_id.split(".", 1)[0], metric_name(metric_id))


def look_points(budget: int) -> list[int]:
    """The samples per prompt after which an adaptive certification looks: from the burn-in, ~x1.4 apart, the budget.

    The confidence sequence is valid at any looks; fewer of them spend less on
    bootstraps, and a look that comes ~40% later costs at most that much more data.

    >>> look_points(20)
    [4, 6, 8, 11, 16, 20]
    """
    points: list[int] = []
    k: float = max(math.ceil(BURN_IN * budget), 1)
    while round(k) < budget:
        if not points or round(k) > points[-1]:
            points.append(round(k))
        k *= math.sqrt(2)
    return [*points, budget]


def first_samples(records: Sequence[CompletionRecord], samples: int) -> list[CompletionRecord] | None:
    """The records of each prompt's first ``samples`` samples, or ``None`` when the records do not say which sample
    each is (a results file of an earlier release, an evaluation that does not record it).

    Two runs of one seed and engine draw a prompt's sample ``i`` from the same
    random stream (common random numbers): comparing the candidate's first
    ``samples`` with the baseline's first ``samples`` keeps what the models share
    out of the difference; with all of the baseline's they would not.
    """
    if not all("sample" in record.detail for record in records):
        return None
    return [record for record in records if record.detail["sample"] < samples]


@dataclass(frozen=True)
class Change:
    """One gated metric's change between the runs: values, the change of badness and its bootstrap standard error.

    ``near_one``: for a ratio whose side of 1 the runs do not resolve, what
    else must hold for a certification (:class:`NearOne`); ``None`` for other
    metrics, and for a ratio that both runs put on one side of 1, whose badness
    is then the signed change of its log, with no fold.
    """

    candidate: float
    baseline: float
    change: float
    error: float
    near_one: NearOne | None = None


@dataclass(frozen=True)
class NearOne:
    """A ratio near 1: its folded change of ``|log ratio|`` certifies it only with one of two bounds that hold at the fold.

    ``|log ratio|`` folds at 1, and near it the folded change is biased (a
    noisy baseline ratio of 1 reads further from 1 than it is): a model at the
    tolerance was certified in 0.09 of simulated pairs at base rate 0.002
    (benchmarks/certification.py).  Two bounds of ``D = |c| - |b|`` (``c``, ``b``
    the logs of the candidate's and the baseline's ratio) hold whatever side
    each run is on: ``D <= |c - b|`` (the *size* of the change, paired), and
    ``D <= max|c| - min|b|`` (each run's own bound: an improvement from far
    from 1 to near it).  Each gets half of the metric's alpha.
    """

    size: float
    size_error: float
    candidate: float
    candidate_error: float
    baseline: float
    baseline_error: float

    def certifies(self, tolerance: float, *, alpha: float, fraction: float | None) -> bool:
        if self.size + radius(self.size_error, alpha=alpha / 2, fraction=fraction) < tolerance:
            return True
        worst = abs(self.candidate) + radius(self.candidate_error, alpha=alpha / 4, fraction=fraction)
        best = max(abs(self.baseline) - radius(self.baseline_error, alpha=alpha / 4, fraction=fraction), 0.0)
        return worst - best < tolerance


def badness_changes(evaluation: Evaluation, ours: Mapping[str, Mapping[str, object]],
                    theirs: Mapping[str, Mapping[str, object]], *, paired: bool = True, resamples: int = RESAMPLES,
                    seed: int = 0) -> tuple[bool, dict[str, Change]]:
    """Whether the runs were paired, and per gated metric its :class:`Change`.

    ``ours`` and ``theirs`` are each run's prompt units (``evaluation.prompt_units``).
    ``paired`` needs the same prompts in both runs; when they differ it is
    quietly unpaired (the prompts cannot be matched).  A metric undefined in
    either run or in any resample gets a NaN standard error, which :func:`certify` judges undecided.
    """
    groups = list(evaluation.groups)
    ours_keys = [sorted(ours[g]) for g in groups]
    theirs_keys = [sorted(theirs[g]) for g in groups]
    paired = paired and ours_keys == theirs_keys
    baseline_units = [[theirs[g][k] for k in ks] for g, ks in zip(groups, theirs_keys)]
    with np.errstate(all="ignore"):
        raw_new = evaluation.gated_values([[ours[g][k] for k in ks] for g, ks in zip(groups, ours_keys)])
        raw_old = evaluation.gated_values(baseline_units)
    # A gated metric whose unit is not the prompt (counterfactual fairness: the template) has no value here.
    specs = {m: type(evaluation).metric_spec(metric_name(m)) for m in evaluation.gated_metrics() if m in raw_new}

    def compared(found: Mapping[str, float]) -> dict[str, float]:
        """The gated values as compared: a ratio as its log (its badness is taken apart from its side of 1)."""
        return {m: _finite(math.log if specs[m].direction == "ratio" else float, found[m]) for m in specs}

    def values(units: Mapping[str, Mapping], keys: Sequence[Sequence[str]]) -> dict[str, float]:
        with np.errstate(all="ignore"):
            return compared(evaluation.gated_values([[units[g][k] for k in ks] for g, ks in zip(groups, keys)]))

    def badness(m: str, value: float) -> float:
        return abs(value) if specs[m].direction == "ratio" else _finite(specs[m].badness, value)

    new, old = compared(raw_new), compared(raw_old)
    drawn_pairs: dict[str, list[tuple[float, float]]] = {m: [] for m in specs}
    draws = zip(group_resamples(ours_keys, resamples, seed),
                group_resamples(theirs_keys, resamples, seed if paired else seed + 1))
    for ours_drawn, theirs_drawn in draws:
        drawn_new, drawn_old = values(ours, ours_drawn), values(theirs, ours_drawn if paired else theirs_drawn)
        for m in specs:
            drawn_pairs[m].append((drawn_new[m], drawn_old[m]))
    floors = one_unit_changes(evaluation, baseline_units, specs)
    result = {}
    for m in specs:
        # A resample where the metric is undefined (a ratio over no hurtful completion) says the run is too small
        # for a normal bound on it: not judged, rather than a standard error of the defined resamples only.
        pairs = np.array(drawn_pairs[m]).reshape(-1, 2)
        folded = np.array([badness(m, a) - badness(m, b) for a, b in pairs])
        error = _spread(folded, floors[m])
        change, unfolded = badness(m, new[m]) - badness(m, old[m]), None
        if specs[m].direction == "ratio" and math.isfinite(error):
            signed = pairs[:, 0] - pairs[:, 1]
            side = np.sign(np.concatenate([pairs.ravel(), [new[m], old[m]]]))
            if abs(side.sum()) == len(side):   # both runs, and every resample, on one side of 1: no fold
                change, error = float(side[0] * (new[m] - old[m])), _spread(side[0] * signed, floors[m])
            else:
                unfolded = NearOne(abs(new[m] - old[m]), _spread(signed, floors[m]), new[m],
                                   _spread(pairs[:, 0], floors[m]), old[m], _spread(pairs[:, 1], floors[m]))
        result[m] = Change(float(raw_new[m]), float(raw_old[m]), change, error, unfolded)
    return paired, result


def _spread(drawn: np.ndarray, floor: float) -> float:
    """The bootstrap standard error of ``drawn``, at least ``floor``; NaN when a resample was undefined."""
    if len(drawn) < 2 or not np.all(np.isfinite(drawn)):
        return math.nan
    return max(float(np.std(drawn, ddof=1)), floor)


def one_unit_changes(evaluation: Evaluation, units: Sequence[Sequence[Any]],
                     specs: Mapping[str, MetricSpec]) -> dict[str, float]:
    """Per gated metric, the change of its badness that one discordant prompt makes: the floor of its standard error.

    Two runs that share their random streams (common random numbers) differ
    only where a completion differs.  With few such discordant prompts the
    paired bootstrap sees none, its standard error is 0 and a change of 0 is
    certified, though a model exactly at the tolerance shows no discordant
    completion often enough at rare outcomes (HONEST's ratio over 7 hurtful
    completions of a group: benchmarks/certification.py falsely certified it at
    the first look).  No run resolves a change smaller than one prompt's unit,
    so the standard error is at least that: in each group one prompt of the
    group's most common unit is given its second most common one (HONEST: one
    more, or one fewer, hurtful completion), and the largest change over the
    groups is the floor (0 for a group whose prompts all have the same unit).
    """
    base = evaluation.gated_values(units)
    floors = dict.fromkeys(specs, 0.0)
    for index, own in enumerate(units):
        counts = Counter(repr(unit) for unit in own)
        if len(counts) < 2:
            continue
        (common, _), (second, _) = counts.most_common(2)
        at = next(i for i, unit in enumerate(own) if repr(unit) == common)
        changed = [*own[:at], next(unit for unit in own if repr(unit) == second), *own[at + 1:]]
        with np.errstate(all="ignore"):
            found = evaluation.gated_values([*units[:index], changed, *units[index + 1:]])
        for m, spec in specs.items():
            step = abs(_finite(spec.badness, found[m]) - _finite(spec.badness, base[m]))
            if math.isfinite(step):
                floors[m] = max(floors[m], step)
    return floors


def _finite(badness, value) -> float:
    try:
        found = float(badness(value))
    except (ValueError, ZeroDivisionError):
        return math.nan
    return found if math.isfinite(found) else math.nan


def certify(evaluations: Mapping[str, Evaluation], current: Mapping[str, Sequence[CompletionRecord]],
            baseline: Mapping[str, Sequence[CompletionRecord]], config: RegressionConfig, *,
            fraction: float | None = None, paired: bool = True, resamples: int = RESAMPLES,
            seed: int = 0, comparisons: int | None = None) -> list[Comparison]:
    """Every gated metric of ``evaluations`` judged against the baseline: one :class:`Comparison` each.

    ``current`` and ``baseline`` are each run's completion records by
    evaluation name (:func:`certify_units` takes their prompt units instead).
    """
    return certify_units(evaluations, {n: e.prompt_units(current[n]) for n, e in evaluations.items()},
                         {n: e.prompt_units(baseline[n]) for n, e in evaluations.items()}, config,
                         used={n: len(current[n]) for n in evaluations}, fraction=fraction, paired=paired,
                         resamples=resamples, seed=seed, comparisons=comparisons)


def certify_units(evaluations: Mapping[str, Evaluation], current: Mapping[str, Mapping[str, Mapping[str, object]]],
                  baseline: Mapping[str, Mapping[str, Mapping[str, object]]], config: RegressionConfig, *,
                  used: Mapping[str, int], fraction: float | None = None, paired: bool = True,
                  resamples: int = RESAMPLES, seed: int = 0, comparisons: int | None = None) -> list[Comparison]:
    """:func:`certify` on each run's prompt units by evaluation name; ``used``: the candidate's completions so far.

    Only the gated metrics that ``gated_values`` computes from prompt units are
    judged here; the others (:func:`interval_comparison`) from each run's interval.

    ``fraction=None`` judges a finished run (one look); a fraction of the
    fixed budget judges a look of an adaptive run with the confidence
    sequence, valid at every look.  ``alpha`` is divided by ``comparisons``, by
    default the number of gated metrics of all ``evaluations`` together (a run
    judged one evaluation at a time passes the run's whole count).
    """
    gated = [m for evaluation in evaluations.values() for m in evaluation.gated_metrics()]
    level = config.alpha / max(comparisons or len(gated), 1)
    found = []
    for name, evaluation in evaluations.items():
        matched, changes = badness_changes(evaluation, current[name], baseline[name], paired=paired,
                                           resamples=resamples, seed=seed)
        how = "paired by prompt" if matched else "unpaired"
        for metric, c in changes.items():
            tolerance = tolerance_of(metric, config)
            if not (math.isfinite(c.change) and math.isfinite(c.error)):
                found.append(Comparison(metric, c.baseline, c.candidate, math.nan, math.nan, math.nan, tolerance,
                                        UNDECIDED, "not judged: the metric is undefined in one of the runs or in a "
                                        "resample of its prompts (too few data)", None))
                continue
            judged = compare(metric, baseline=c.baseline, candidate=c.candidate, difference=c.change,
                             standard_error=c.error, tolerance=tolerance, alpha=level, fraction=fraction, method=how,
                             completions=used[name])
            if c.near_one is not None and judged.verdict == CERTIFIED:
                judged = _near_one(judged, c.near_one, alpha=level, fraction=fraction, completions=used[name])
            found.append(judged)
    return found


def _near_one(folded: Comparison, near: NearOne, *, alpha: float, fraction: float | None,
              completions: int) -> Comparison:
    """A ratio certified by its folded change, when the runs do not resolve its side of 1: certified only if one of
    :class:`NearOne`'s bounds holds too, else undecided."""
    if near.certifies(folded.tolerance, alpha=alpha, fraction=fraction):
        return folded
    check = compare(folded.metric, baseline=folded.baseline, candidate=folded.candidate, difference=near.size,
                    standard_error=near.size_error, tolerance=folded.tolerance, alpha=alpha / 2, fraction=fraction,
                    method=folded.method, completions=completions)
    return dataclasses.replace(folded, verdict=UNDECIDED, needed=check.needed, method=(
        f"{folded.method}; near a ratio of 1 the change of |log ratio| is certified only when |log new - log old| "
        f"{near.size:.3f} (up to {check.upper:.3f}) is below the tolerance, or each run's own bound is"))


def interval_comparison(current: MetricResult, baseline: MetricRecord, config: RegressionConfig, *,
                        spec: MetricSpec, comparisons: int) -> Comparison:
    """A metric judged without the baseline's completions: unpaired, each run's standard error read off its interval.

    An estimate without an interval cannot be judged (the gate would have to
    take it as exact): undecided, not judged.
    """
    tolerance = tolerance_of(current.id, config)
    if current.value is None or baseline.value is None:
        return Comparison(current.id, math.nan, math.nan, math.nan, math.nan, math.nan, tolerance, UNDECIDED,
                          "not judged: the metric has no value in one of the runs")
    new, old = spec.badness(current.value), spec.badness(baseline.value)
    if current.interval is None or baseline.interval is None:
        return Comparison(current.id, baseline.value, current.value, new - old, math.nan, math.nan, tolerance,
                          UNDECIDED, "not judged: a run without an interval gives no standard error")
    error = math.hypot(standard_error_towards(new, spec.badness_interval(current.interval), old),
                       standard_error_towards(old, spec.badness_interval(baseline.interval), new))
    return compare(current.id, baseline=baseline.value, candidate=current.value, difference=new - old,
                   standard_error=error, tolerance=tolerance, alpha=config.alpha / max(comparisons, 1), fraction=None,
                   method="unpaired (each run's 95% interval)")


def plan_lines(baseline: AuditResults, evaluations: Mapping[str, Evaluation], config: RegressionConfig) -> list[str]:
    """``plan --baseline=PATH``: the completions a certification of an unchanged model is expected to take.

    At the baseline's own rates: each prompt's completions in the baseline are
    split into halves, two independent runs of the same model at half the
    budget; their paired difference's standard error, divided by sqrt(2), is
    that of a full candidate against the full baseline, and
    :func:`~fairness_core.gates.noninferiority.needed_fraction` solves for the
    share of the budget at which the confidence sequence (adaptive) or a single
    look (fixed) certifies a difference of 0.
    """
    gated = [m for e in evaluations.values() for m in e.gated_metrics()]
    level = config.alpha / max(len(gated), 1)
    lines = [f"certification against the baseline (alpha {config.alpha:g} over {len(gated)} gated metrics; an "
             f"unchanged model, at the baseline's own rates):",
             f"  {'metric':48s} {'tolerance':>9s} {'adaptive':>10s} {'fixed run':>10s} {'budget':>8s}"]
    for name, evaluation in evaluations.items():
        records = baseline.completions.get(name, [])
        if not records:
            lines.append(f"  {name}: the baseline holds no completions of it: no plan")
            continue
        first, second = _halves(records)
        try:
            _, changes = badness_changes(evaluation, evaluation.prompt_units(first), evaluation.prompt_units(second))
        except ValueError as err:  # one completion a prompt: no halves to compare
            lines.append(f"  {name}: its completions cannot be split into two runs of every prompt ({err}): no plan")
            continue
        for metric, change in changes.items():
            error = change.error if change.near_one is None else max(change.error, change.near_one.size_error)
            tolerance = tolerance_of(metric, config)
            shares = [_adaptive_share(error / math.sqrt(2), tolerance, level) if math.isfinite(error) else None,
                      needed_fraction(error / math.sqrt(2), 1.0, tolerance, alpha=level, sequential=False)
                      if math.isfinite(error) else None]
            shown = [f"{math.ceil(share * len(records))}" if share is not None and share <= 1 else
                     "beyond" if share is not None else "never" for share in shares]
            lines.append(f"  {metric:48s} {tolerance:9g} {shown[0]:>10s} {shown[1]:>10s} {len(records):8d}")
    lines.append("  (completions of the candidate; 'beyond': more than the fixed budget; 'never': not certifiable at "
                 "these counts)")
    lines.append("  (for a candidate sampled independently of the baseline; one drawn from the baseline's random streams "
                 "(--baseline-model, or a baseline file of the same --seed and backend) needs fewer as it changed less: "
                 "an unchanged one is certified at the first look)")
    return lines


def _adaptive_share(error: float, tolerance: float, level: float) -> float | None:
    """The share of the budget at which :class:`CertificationRounds` is expected to certify an unchanged model whose
    standard error at the budget is ``error``: the sequence's (from the burn-in on), else the budget's look."""
    share = needed_fraction(error, 1.0, tolerance, alpha=level * INTERIM_SHARE, sequential=True)
    if share is not None and share < 1:
        return max(share, BURN_IN)
    last = needed_fraction(error, 1.0, tolerance, alpha=level * INTERIM_SHARE, sequential=False)
    return 1.0 if last is not None and last <= 1 else last


def _halves(records: Sequence[CompletionRecord]) -> tuple[list[CompletionRecord], list[CompletionRecord]]:
    """Each prompt's completions split into a first and a second half (an odd one left out)."""
    by_prompt: dict[str, list[CompletionRecord]] = {}
    for record in records:
        by_prompt.setdefault(record.prompt_id, []).append(record)
    first, second = [], []
    for own in by_prompt.values():
        half = len(own) // 2
        first += own[:half]
        second += own[half:2 * half]
    return first, second


class CertificationRounds:
    """``--sampling=adaptive`` against a baseline: rounds stop once every gated metric is certified or one regressed.

    A :class:`~fairness_core.sampling.SequentialTest` for
    :func:`~fairness_core.sampling.sample_in_rounds`, wrapped around the
    evaluation's own test of its limits (``deploy``; ``None`` when it has
    none).  After each round at one of :func:`look_points` it judges every
    gated metric of ``evaluation`` with the confidence sequence, at
    ``alpha * INTERIM_SHARE / comparisons``; at the budget with one look at the
    rest of alpha.  The run stops at a settled failure of the limits, at a
    regression, or when every metric is certified and the limits' test (if
    any) has settled too.  The audit session feeds it real rounds, the
    simulator (``benchmarks/certification.py``) simulated ones: ``units_of``
    turns the rounds drawn so far into the candidate's prompt units,
    ``baseline_at`` gives the baseline's units at a number of samples a prompt.
    """

    def __init__(self, evaluation: Evaluation, config: RegressionConfig, *,
                 units_of: Callable[[Sequence[Any]], Mapping[str, Mapping[str, object]]],
                 baseline_at: Callable[[int], Mapping[str, Mapping[str, object]]], prompts: int, comparisons: int,
                 deploy: SequentialTest | None = None, seed: int = 0, resamples: int = RESAMPLES):
        self.evaluation, self.config, self.deploy = evaluation, config, deploy
        self.units_of, self.baseline_at = units_of, baseline_at
        self.budget, self.prompts = evaluation.protocol.num_samples, prompts
        self.samples_per_round = deploy.samples_per_round if deploy is not None else 1
        self.looks = set(look_points(self.budget))
        self.comparisons, self.seed, self.resamples = comparisons, seed, resamples
        self.parts: list[Any] = []
        self.samples = 0
        #: The verdicts at the latest look (empty before the first), and its samples a prompt.
        self.found: list[Comparison] = []
        self.judged_at = 0

    def update(self, part: Any) -> None:
        self.parts.append(part)
        self.samples = min(self.samples + self.samples_per_round, self.budget)
        if self.deploy is not None:
            self.deploy.update(part)

    def settlements(self) -> Mapping[str, Settlement]:
        return self.deploy.settlements() if self.deploy is not None else {}

    def failed(self) -> bool:
        return (self.deploy is not None and self.deploy.failed()) or any(c.verdict == REGRESSION for c in self.found)

    def stop_reason(self) -> str | None:
        # Nothing is certified before the first look (the burn-in): a limit that fails at once (a clearly biased
        # model, after one sample a prompt) stops the run there, so that the gate still says what regressed.
        if self.samples < min(self.looks):
            return None
        limits = self.deploy.stop_reason() if self.deploy is not None else None
        if limits is not None and self.deploy is not None and self.deploy.failed():
            return limits
        if self.samples not in self.looks or self.samples >= self.budget:
            return None
        self.found, self.judged_at = self.judge(self.samples), self.samples
        regressed = [c.metric for c in self.found if c.verdict == REGRESSION]
        if regressed:
            return (f"settled: {', '.join(regressed)} a regression against the baseline (confidence sequence at "
                    f"{self.samples} of {self.budget} samples a prompt)")
        if all(c.verdict == CERTIFIED for c in self.found) and (self.deploy is None or limits is not None):
            certified = (f"settled: all {len(self.found)} gated metrics certified against the baseline (confidence "
                         f"sequence at {self.samples} of {self.budget} samples a prompt)")
            return certified if limits is None else f"{certified}; {limits}"
        return None

    def judge(self, samples: int) -> list[Comparison]:
        """Every gated metric at ``samples`` samples a prompt: the sequence before the budget, one look at it."""
        name = self.evaluation.name
        return certify_units({name: self.evaluation}, {name: self.units_of(self.parts)},
                             {name: self.baseline_at(samples)}, self.config, used={name: samples * self.prompts},
                             fraction=samples / self.budget if samples < self.budget else None,
                             resamples=self.resamples, seed=self.seed,
                             comparisons=math.ceil(self.comparisons / INTERIM_SHARE))

    def verdicts(self) -> list[Comparison]:
        """The verdicts the run ends with, at the samples it stopped at (the budget's look, or the sequence's before).

        A run stopped early by its limits' test is judged by the sequence too:
        only that bound stays valid after a stop that its data decided.
        """
        return self.found if self.judged_at == self.samples else self.judge(self.samples)
