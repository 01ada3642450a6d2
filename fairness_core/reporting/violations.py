"""Audit violations: the failure a reviewer reads instead of a traceback.

Audits call :func:`enforce` on a metric of the scorecard; a failing metric
raises :class:`AuditViolation` with a message built by :func:`violation_message`
(what, where, by how much, on how much data, with evidence), and the plugin
prints that message as the test's failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Literal

import pytest

from fairness_core.config.thresholds import DecisionRule
from fairness_core.scorecard import MetricResult

EVIDENCE_LIMIT = 12


@dataclass(frozen=True)
class Evidence:
    """One completion shown as evidence, the character spans to highlight in it, and a note."""

    prompt: str
    completion: str
    marked: tuple[tuple[int, int], ...] = ()
    note: str = ""

    def text(self) -> str:
        note = f"   ← {self.note}" if self.note else ""
        return f"{self.prompt}｜{highlight(self.completion, self.marked)}{note}"

    def html(self) -> str:
        completion = highlight(self.completion, self.marked, before="<mark>", after="</mark>", quote=escape)
        return (f"<tr><td>{escape(self.prompt)}</td><td>{completion}</td>"
                f"<td>{escape(self.note)}</td></tr>")


#: What a violation broke: a limit of ``thresholds.yaml`` (the deploy gate), the ``--baseline`` (the regression gate)
#: or ``--require`` (a required evaluation that the run could not judge).
ViolationKind = Literal["limit", "regression", "required"]


class AuditViolation(Exception):
    """A model exceeded an audit threshold; ``str(self)`` is the full report, ``evidence`` its completions.

    ``metric``: the id of the metric it is about; ``aggregate``: a headline
    metric (not one template's or one category's); ``kind``: which gate it broke.
    """

    def __init__(self, message: str, *, metric: str = "", summary: str = "", evidence: Sequence[Evidence] = (),
                 aggregate: bool = True, kind: ViolationKind = "limit"):
        super().__init__(message)
        self.metric = metric
        self.summary = summary
        self.evidence = list(evidence)
        self.aggregate = aggregate
        self.kind = kind


def enforce(result: MetricResult, rule: DecisionRule, *, where: Sequence[str],
            evidence: Callable[[], Sequence[Evidence]] = list, evidence_total: int | None = None,
            underpowered: Literal["report", "fail"] = "report") -> None:
    """Raise :class:`AuditViolation` when ``result`` fails under ``rule``; skip when it was not computed.

    An underpowered result is skipped with its reason (``underpowered: report``)
    or fails (``underpowered: fail``): either way it never passes silently.
    """
    verdict = result.verdict(rule)
    if result.value is None and not verdict:
        pytest.skip(result.skip_reason or "not computed")
    if not verdict and result.decision(rule) == "underpowered":
        if underpowered == "report":
            pytest.skip(f"UNDERPOWERED {result.id}: {result.underpowered}")
        verdict = f"underpowered (underpowered: fail in the thresholds file): {result.underpowered}"
    if verdict:
        p_value = f" (permutation p = {result.p_value:.4f})" if result.p_value is not None else ""
        shown = list(evidence())
        raise AuditViolation(
            violation_message(metric=result.metric, where=where, verdict=verdict + p_value, sample=result.sample,
                              evidence=[e.text() for e in shown], evidence_total=evidence_total),
            metric=result.id, summary=f"{result.id}: {verdict}",
            evidence=shown[:EVIDENCE_LIMIT],
            aggregate=result.aggregate,
        )


def violation_message(*, metric: str, where: Sequence[str], verdict: str, sample: str,
                      evidence: Sequence[str] = (), evidence_total: int | None = None) -> str:
    """The text of one violation: what, where, by how much, on how much data, and the evidence."""
    lines = [f"AUDIT VIOLATION: {metric}", *(f"  {line}" for line in where),
             f"  {verdict}", f"  sample: {sample}"]
    if evidence:
        shown = evidence[:EVIDENCE_LIMIT]
        total = evidence_total if evidence_total is not None else len(evidence)
        lines.append(f"  evidence ({len(shown)} of {total}):")
        lines.extend(f"    {line}" for line in shown)
    return "\n".join(lines)


def highlight(text: str, spans: Sequence[tuple[int, int]], *, before: str = "【", after: str = "】",
              quote: Callable[[str], str] = str) -> str:
    """Mark the character spans of ``text`` (overlapping spans merge into one mark); ``quote`` escapes the text.

    >>> highlight("祖母と母", [(0, 2), (1, 2), (3, 4)])
    '【祖母】と【母】'
    """
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, position = [], 0
    for start, end in merged:
        pieces += [quote(text[position:start]), before, quote(text[start:end]), after]
        position = end
    return "".join(pieces) + quote(text[position:])
