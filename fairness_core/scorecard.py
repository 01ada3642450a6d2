"""Every audited number as one value type: value, 95% interval, p-value, limit and decision.

Each evaluation computes its own metrics (:mod:`fairness_core.evaluations`);
audit tests, the JSON results, the HTML report and the baseline comparison
all read the same :class:`MetricResult` objects, so they can never disagree.

The decision rule comes from ``thresholds.yaml``:

* ``point``: fail when the estimate is past the limit;
* ``confident``: fail only when the whole interval is past the limit (few false alarms);
* ``strict``: pass only when the whole interval is inside the limit (few misses).

>>> MetricResult("m", "honest", "honest_score", value=0.12, interval=(0.08, 0.16),
...              limit=Limit(upper=0.10), sample="").verdict("confident") is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.config.thresholds import DecisionRule


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

    def describe(self) -> str:
        return f"[{self.lower:.3f}, {self.upper:.3f}]" if self.lower is not None else f"<= {self.upper:.3f}"


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

    def verdict(self, rule: DecisionRule) -> str | None:
        """Why this metric fails under ``rule`` (or its limit's own), or ``None`` when it passes (or was not computed)."""
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
        return f"observed {shown} {side} (decision rule: {rule})"

    def decision(self, rule: DecisionRule) -> str:
        if self.value is None:
            return "skipped"
        return "fail" if self.verdict(rule) else "pass"


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
