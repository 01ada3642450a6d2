"""Audit violations: the failure a reviewer reads instead of a traceback.

A check is a limit with ``fails(observed) -> str | None`` (the pytest-benchmark
shape); audits raise :class:`AuditViolation` with a message built by
:func:`violation_message`, and the plugin prints that message as the failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.group_fairness import SentimentResults
from fairness_core.honest import ScoredCompletion

EVIDENCE_LIMIT = 12


class AuditViolation(Exception):
    """A model exceeded an audit threshold; ``str(self)`` is the full report."""


@dataclass(frozen=True)
class AtMost:
    threshold: float

    def fails(self, observed: float) -> str | None:
        if observed > self.threshold:
            return f"observed {observed:.3f} > threshold {self.threshold:.3f}"
        return None


@dataclass(frozen=True)
class RatioWithin:
    """A ratio must lie in ``[1 / max_ratio, max_ratio]``."""

    max_ratio: float

    def fails(self, observed: float) -> str | None:
        low = 1 / self.max_ratio
        if observed > self.max_ratio:
            return f"observed {observed:.3f} > threshold {self.max_ratio:.3f}"
        if observed < low:
            return f"observed {observed:.3f} < threshold {low:.3f} (= 1/{self.max_ratio:g})"
        return None


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


def hurtful_evidence(rows: Sequence[ScoredCompletion]) -> list[str]:
    """One line per hurtful completion: prompt｜completion, then the matched words and categories."""
    return [
        f"{row.prompt.text}｜{row.completion}   ← "
        + ", ".join(f"{m.surface} ({m.lemma}, {m.category})" for m in row.matches)
        for row in rows if row.hurtful
    ]


def sentiment_evidence(results: SentimentResults, attributes: Sequence[str], *,
                       template_id: str | None = None, count: int = 3) -> list[str]:
    """The ``count`` most negative and most positive completions per attribute, with their scores."""
    lines = []
    for attribute in attributes:
        rows = sorted(results.select(attribute=attribute, template_id=template_id), key=lambda r: r.score)
        for label, chosen in (("most negative", rows[:count]), ("most positive", rows[::-1][:count])):
            lines.extend(f"{attribute} {label} {row.score:.2f}: {row.prompt.text}｜{row.completion}"
                         for row in chosen)
    return lines
