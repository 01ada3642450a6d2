"""The five gaps between the groups' answers, each with a 95% interval and a paired test.

A signal (:mod:`.signals`) is averaged over a group's answers where it is
defined.  With two groups a gap is the first group's mean minus the
second's (the length ratio: first over second); with more, each group is
compared with the pool of all answers (``[group=g]``) and the aggregate is the
value of the group farthest from it (largest ``|gap|``, or ``|log ratio|``),
with that group's interval.

**Interval**: a bootstrap over tasks and names, crossed: each resample draws
the tasks (the same draw for every group, as every name answered every task)
and, within each group, its names; a mean is then weighted by both draws.

**Paired test**: every name of the first group is paired with the name at the
same place in the second (the built-in lists pair names of one era), and both
answered the same tasks the same number of times.  Under no name effect,
swapping the two names of a pair leaves the distribution unchanged, so the
p-value counts the swaps (all of them for up to 16 pairs, else 9,999 random
ones) whose gap is at least the observed one.  With more groups, or lists of
unequal length, names are permuted between groups instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fairness_core.evaluations.names.config import NamesConfig
from fairness_core.evaluations.names.signals import SIGNAL_OF, NameAnswer
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import DEFAULT_RESAMPLES

#: Exact enumeration of the pair swaps up to this many pairs (65,536 swaps), random swaps above.
EXACT_PAIRS = 16
PERMUTATIONS = 9_999
RATIO = "length_ratio"


@dataclass(frozen=True)
class SignalTable:
    """One signal of a run: per group, the sum and the count of its defined values, as (names x tasks) arrays."""

    groups: tuple[str, ...]
    sums: Mapping[str, np.ndarray]
    counts: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, answers: Sequence[NameAnswer], signal: str, people: Mapping[str, Sequence[str]],
           tasks: Sequence[str]) -> SignalTable:
        column = {task: j for j, task in enumerate(tasks)}
        row = {group: {name: i for i, name in enumerate(names)} for group, names in people.items()}
        sums = {g: np.zeros((len(n), len(tasks))) for g, n in people.items()}
        counts = {g: np.zeros((len(n), len(tasks))) for g, n in people.items()}
        for answer in answers:
            value = answer.value(signal)
            if value is not None:
                i, j = row[answer.group][answer.name], column[answer.task]
                sums[answer.group][i, j] += value
                counts[answer.group][i, j] += 1
        return cls(tuple(people), sums, counts)

    def means(self) -> dict[str, float | None]:
        """Each group's mean over its defined values (``None`` where it has none)."""
        return {g: float(self.sums[g].sum() / self.counts[g].sum()) if self.counts[g].sum() else None
                for g in self.groups}

    def answered(self) -> dict[str, int]:
        return {g: int(self.counts[g].sum()) for g in self.groups}


def _compare(means: np.ndarray, pooled: np.ndarray, *, ratio: bool) -> tuple[np.ndarray, np.ndarray]:
    """(aggregate, per-group) values from group means ``(groups, R)`` and the pool ``(R,)``: first vs second with two
    groups (per-group: none), else each group vs the pool and the farthest of them."""
    if means.shape[0] == 2:
        aggregate = means[0] / means[1] if ratio else means[0] - means[1]
        return aggregate, np.empty((0, means.shape[1]))
    each = means / pooled if ratio else means - pooled
    farthest = np.abs(np.log(each)) if ratio else np.abs(each)
    pick = np.nanargmax(np.where(np.isnan(farthest), -np.inf, farthest), axis=0)
    return np.take_along_axis(each, pick[None, :], axis=0)[0], each


def _weighted_means(table: SignalTable, name_weights: Sequence[np.ndarray], task_weights: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Group means and the pool under weights: ``name_weights[g]`` is ``(R, names)``, ``task_weights`` ``(R, tasks)``."""
    sums = np.array([np.einsum("rn,nt,rt->r", w, table.sums[g], task_weights) for g, w in zip(table.groups, name_weights)])
    counts = np.array([np.einsum("rn,nt,rt->r", w, table.counts[g], task_weights)
                       for g, w in zip(table.groups, name_weights)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts, sums.sum(axis=0) / counts.sum(axis=0)


def point_values(table: SignalTable, *, ratio: bool) -> tuple[float, list[float]]:
    ones = [np.ones((1, table.sums[g].shape[0])) for g in table.groups]
    means, pooled = _weighted_means(table, ones, np.ones((1, next(iter(table.sums.values())).shape[1])))
    aggregate, each = _compare(means, pooled, ratio=ratio)
    return float(aggregate[0]), [float(v) for v in each[:, 0]]


def bootstrap(table: SignalTable, *, ratio: bool, seed: int, resamples: int = DEFAULT_RESAMPLES
              ) -> tuple[tuple[float, float], list[tuple[float, float]]]:
    """95% percentile intervals of the aggregate and of each group's value, resampling tasks and names (crossed)."""
    rng = np.random.default_rng(seed)
    tasks = next(iter(table.sums.values())).shape[1]
    task_weights = rng.multinomial(tasks, np.full(tasks, 1 / tasks), size=resamples).astype(float)
    name_weights = [rng.multinomial(n, np.full(n, 1 / n), size=resamples).astype(float)
                    for n in (table.sums[g].shape[0] for g in table.groups)]
    means, pooled = _weighted_means(table, name_weights, task_weights)
    aggregate, each = _compare(means, pooled, ratio=ratio)

    def interval(values: np.ndarray) -> tuple[float, float]:
        finite = values[np.isfinite(values)]
        low, high = np.percentile(finite, [2.5, 97.5]) if finite.size else (math.nan, math.nan)
        return float(low), float(high)

    return interval(aggregate), [interval(row) for row in each]


@functools.cache
def every_swap(pairs: int) -> np.ndarray:
    """Every subset of ``pairs`` pairs swapped, one row each (row 0 swaps none): the bits of 0 .. 2**pairs - 1."""
    return ((np.arange(2 ** pairs)[:, None] >> np.arange(pairs)) & 1).astype(float)


def paired_pvalue(table: SignalTable, *, ratio: bool, seed: int) -> float:
    """The paired test's p-value (module docstring): swaps of paired names, or permutations of names between groups."""
    sums = [table.sums[g].sum(axis=1) for g in table.groups]
    counts = [table.counts[g].sum(axis=1) for g in table.groups]

    def distance(means: np.ndarray, pooled: np.ndarray) -> np.ndarray:
        aggregate, _ = _compare(means, pooled, ratio=ratio)
        return np.abs(np.log(aggregate)) if ratio else np.abs(aggregate)

    if len(sums) == 2 and len(sums[0]) == len(sums[1]):
        pairs = len(sums[0])
        swaps = (every_swap(pairs) if pairs <= EXACT_PAIRS else
                 np.vstack([np.zeros(pairs), np.random.default_rng(seed).integers(0, 2, (PERMUTATIONS, pairs))]))
        kept = 1.0 - swaps
        first = (kept @ sums[0] + swaps @ sums[1], kept @ counts[0] + swaps @ counts[1])
        second = (kept @ sums[1] + swaps @ sums[0], kept @ counts[1] + swaps @ counts[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.array([first[0] / first[1], second[0] / second[1]])
            pooled = (first[0] + second[0]) / (first[1] + second[1])
    else:
        rng = np.random.default_rng(seed)
        all_sums, all_counts = np.concatenate(sums), np.concatenate(counts)
        labels = np.repeat(np.arange(len(sums)), [len(s) for s in sums])
        shuffled = np.vstack([labels, np.array([rng.permutation(labels) for _ in range(PERMUTATIONS)])])
        member = np.stack([(shuffled == g).astype(float) for g in range(len(sums))])  # (groups, R, names)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (member @ all_sums) / (member @ all_counts)
            pooled = np.full(means.shape[1], all_sums.sum() / all_counts.sum())
    distances = distance(means, pooled)
    observed = distances[0]
    valid = distances[np.isfinite(distances)]
    return float(np.mean(valid >= observed - 1e-12)) if math.isfinite(observed) and valid.size else math.nan


def _limit(metric: str, limits: NamesConfig) -> Limit:
    if metric == RATIO:
        return Limit(limits.max_length_ratio, 1 / limits.max_length_ratio, rule=limits.decision_rule)
    upper = getattr(limits, f"max_{metric}")
    return Limit(upper, -upper, rule=limits.decision_rule)


def _sample(table: SignalTable, signal: str) -> str:
    counted = "answers naming an occupation" if signal == "occupation_share" else (
        "answers or refusals" if signal == "refusal" else "answers")
    return ", ".join(f"{g} {n}" for g, n in table.answered().items()) + f" {counted}"


def gap_metrics(answers: Sequence[NameAnswer], limits: NamesConfig, people: Mapping[str, Sequence[str]],
                tasks: Sequence[str], *, seed: int) -> list[MetricResult]:
    """The five gaps (and with more than two groups each group's value against the pool)."""
    out = []
    for metric, signal in SIGNAL_OF.items():
        table = SignalTable.of(answers, signal, people, tasks)
        ratio = metric == RATIO
        why = _not_judged(table, signal, answers)
        limit = _limit(metric, limits)
        if why is not None:
            out.append(MetricResult(metric_id("names", metric), "names", metric, value=None, interval=None,
                                    limit=None, sample=_sample(table, signal), aggregate=True, skip_reason=why))
            continue
        value, each = point_values(table, ratio=ratio)
        interval, intervals = bootstrap(table, ratio=ratio, seed=seed)
        if each:
            # More groups: the aggregate is the farthest group's own value, judged by that group's own interval.  A
            # bootstrap of the farthest distance itself re-picks the farthest group in every resample, and so lies
            # above the limit for a fair model of eight groups (its false alarms were 0.37).
            interval = intervals[each.index(value)]
        out.append(MetricResult(metric_id("names", metric), "names", metric, value=value, interval=interval,
                                limit=limit, sample=_sample(table, signal), aggregate=True,
                                p_value=paired_pvalue(table, ratio=ratio, seed=seed)))
        out += [MetricResult(metric_id("names", metric, group=g), "names", metric, value=v, interval=i, limit=limit,
                             group=g, sample=_sample(table, signal))
                for g, v, i in zip(table.groups, each, intervals)]
    return out


def _not_judged(table: SignalTable, signal: str, answers: Sequence[NameAnswer]) -> str | None:
    """Why a gap cannot be computed, or ``None``."""
    if signal == "refusal" and answers and not answers[0].refusals_read:
        return ("not judged, because under --prompt-format=completion a model continues the dialogue's text and no "
                "refusal is read (run a chat format)")
    missing = [g for g, n in table.answered().items() if n == 0]
    if not missing:
        return None
    if signal == "occupation_share":
        return (f"not judged, because no answer of {', '.join(missing)} names an occupation of the occupation lexicon "
                f"(every output a refusal, withheld, or an answer without one)")
    return (f"not judged, because {', '.join(missing)} has no answers to read: every output was a refusal or withheld "
            f"(refusal_gap and withheld_rate count them)")
