"""Every audited number as one value type: value, 95% interval, p-value, limit and decision.

Each evaluation computes its own metrics (:mod:`fairness_core.evaluations`);
audit tests, the JSON results, the HTML report and the baseline comparison
all read the same :class:`MetricResult` objects, so they can never disagree.

The decision rule comes from ``thresholds.yaml``:

* ``point``: fail when the estimate is past the limit;
* ``confident``: fail only when the whole interval is past the limit (few false alarms);
* ``strict``: pass only when the whole interval is inside the limit (few misses).

Two more outcomes than pass and fail: a metric whose evaluation found too few
data to detect the effect it is meant to detect is ``underpowered`` (it says
what it would need), and under ``--sampling=adaptive`` a metric may be
``settled`` by a sequential test before the protocol's budget is spent.

>>> MetricResult("m", "honest", "honest_score", value=0.12, interval=(0.08, 0.16),
...              limit=Limit(upper=0.10), sample="").verdict("confident") is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fairness_core.config.thresholds import DecisionRule

#: Every outcome of a metric: the test passes or fails, was not computed, or could not tell (too few data).
Decision = Literal["pass", "fail", "skipped", "underpowered"]


@dataclass(frozen=True)
class Limit:
    """``value <= upper`` and, for two-sided limits such as ratios, ``value >= lower``.

    ``rule``, when given, is the decision rule of this limit in place of the
    run's: an absolute level (a group's HONEST score <= 0.10) can sit right at
    a fair model's own value, where the point rule fails it half the time, so
    the evaluation may judge such limits by ``confident`` while its disparity
    limits (where a fair model sits at no disparity, far inside) keep the run's rule.
    """

    upper: float
    lower: float | None = None
    rule: DecisionRule | None = None
    #: Why the limit in force is not the configured one (a limit raised to what chance reaches at these counts).
    why: str | None = None

    def describe(self) -> str:
        return f"[{self.lower:.3f}, {self.upper:.3f}]" if self.lower is not None else f"<= {self.upper:.3f}"


@dataclass(frozen=True)
class Settlement:
    """A verdict that a sequential (anytime-valid) test reached before the protocol's budget was spent."""

    outcome: Literal["pass", "fail"]
    evidence: str


@dataclass(frozen=True)
class MetricResult:
    id: str
    evaluation: str
    metric: str
    value: float | None
    interval: tuple[float, float] | None
    limit: Limit | None
    sample: str
    group: str | None = None
    template_id: str | None = None
    category: str | None = None
    p_value: float | None = None
    aggregate: bool = False
    skip_reason: str | None = None
    #: Why a passing value cannot be trusted (too few data to detect what the limit is for), and what would do.
    underpowered: str | None = None
    #: The verdict of a sequential test, which stands in place of the limit's rule.
    settled: Settlement | None = None

    def verdict(self, rule: DecisionRule) -> str | None:
        """Why this metric fails under ``rule`` (or its limit's own), or ``None`` when it passes (or was not computed)."""
        if self.settled is not None:
            return f"settled as a failure: {self.settled.evidence}" if self.settled.outcome == "fail" else None
        if self.value is None or self.limit is None:
            return None
        rule = self.limit.rule or rule
        low, high = self.interval if (self.interval and rule != "point") else (self.value, self.value)
        # A bootstrap percentile interval can miss its own estimate; widen it to cover the estimate, so that
        # confident never fails what point passes, nor strict pass what point fails.
        low, high = min(low, self.value), max(high, self.value)
        upper, lower = self.limit.upper, self.limit.lower
        if rule == "confident":
            above, below = low > upper, lower is not None and high < lower
        else:  # point uses the estimate itself; strict uses the side of the interval nearest the limit
            above, below = high > upper, lower is not None and low < lower
        if not (above or below):
            return None
        shown = f"{self.value:.3f}" + (f" [95% CI {self.interval[0]:.3f}, {self.interval[1]:.3f}]" if self.interval else "")
        side = f"> threshold {upper:.3f}" if above else f"< threshold {lower:.3f}"
        why = f"; {self.limit.why}" if self.limit.why else ""
        return f"observed {shown} {side} (decision rule: {rule}{why})"

    def decision(self, rule: DecisionRule) -> Decision:
        if self.verdict(rule):
            return "fail"
        if self.settled is not None:
            return "pass"
        if self.value is None:
            return "skipped"
        return "underpowered" if self.underpowered else "pass"


def settle(results: Sequence[MetricResult], settlements: Mapping[str, Settlement]) -> list[MetricResult]:
    """``results`` with the sequential tests' verdicts attached, by metric id."""
    return [replace(r, settled=settlements[r.id]) if r.id in settlements else r for r in results]


class Scorecard:
    """The metric results of one audit run, looked up by id."""

    def __init__(self, metrics: Sequence[MetricResult]):
        self.metrics = list(metrics)
        self._by_id = {m.id: m for m in self.metrics}

    def __getitem__(self, metric_id: str) -> MetricResult:
        return self._by_id[metric_id]

    def aggregates(self) -> list[MetricResult]:
        return [m for m in self.metrics if m.aggregate]


def metric_id(evaluation: str, metric: str, **where: str | None) -> str:
    """``honest.honest_score[template=occupation-01,group=female]``-style ids, stable across runs."""
    qualifiers = ",".join(f"{k}={v}" for k, v in where.items() if v is not None)
    return f"{evaluation}.{metric}" + (f"[{qualifiers}]" if qualifiers else "")
