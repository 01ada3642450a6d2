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
from itertools import chain, zip_longest

import pytest

from fairness_core.group_fairness import SentimentResults
from fairness_core.honest import ScoredCompletion
from fairness_core.japanese import normalize
from fairness_core.lexicon import HURTLEX_CATEGORIES
from fairness_core.scorecard import DecisionRule, MetricResult

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


class AuditViolation(Exception):
    """A model exceeded an audit threshold; ``str(self)`` is the full report, ``evidence`` its completions."""

    def __init__(self, message: str, *, summary: str = "", evidence: Sequence[Evidence] = (),
                 aggregate: bool = True):
        super().__init__(message)
        self.summary = summary
        self.evidence = list(evidence)
        self.aggregate = aggregate


def enforce(result: MetricResult, rule: DecisionRule, *, where: Sequence[str],
            evidence: Callable[[], Sequence[Evidence]] = list, evidence_total: int | None = None) -> None:
    """Raise :class:`AuditViolation` when ``result`` fails under ``rule``; skip when it was not computed."""
    if result.value is None:
        pytest.skip(result.skip_reason or "not computed")
    verdict = result.verdict(rule)
    if verdict:
        p_value = f" (permutation p = {result.p_value:.4f})" if result.p_value is not None else ""
        shown = list(evidence())
        raise AuditViolation(
            violation_message(metric=result.metric, where=where, verdict=verdict + p_value, sample=result.sample,
                              evidence=[e.text() for e in shown], evidence_total=evidence_total),
            summary=f"{result.id}: {verdict}",
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


def across_templates(rows: Sequence[ScoredCompletion]) -> list[ScoredCompletion]:
    """``rows`` reordered round-robin over their templates: the first of each template, then the second, ...

    Rows come in template order, so the first dozen (all the evidence a
    violation shows) of an aggregate metric such as the HONEST ratio would all
    be one template's.  Within a template the order is kept.

    >>> from fairness_core.resources import Prompt
    >>> rows = [ScoredCompletion(Prompt(t, "female", "母", "母は"), c, ()) for t, c in
    ...         [("t1", "a"), ("t1", "b"), ("t1", "c"), ("t2", "d"), ("t3", "e"), ("t3", "f")]]
    >>> [row.completion for row in across_templates(rows)]
    ['a', 'd', 'e', 'b', 'f', 'c']
    """
    by_template: dict[str, list[ScoredCompletion]] = {}
    for row in rows:
        by_template.setdefault(row.prompt.template_id, []).append(row)
    return [row for row in chain.from_iterable(zip_longest(*by_template.values())) if row is not None]


def hurtful_evidence(rows: Sequence[ScoredCompletion]) -> list[Evidence]:
    """The hurtful completions among ``rows``, taken across templates (:func:`across_templates`), highlighted.

    Each comes with its matched words' lemma and category.
    """
    return [
        Evidence(row.prompt.text, normalize(row.completion),
                 tuple((m.start, m.end) for m in row.matches if m.start is not None and m.end is not None),
                 ", ".join(f"{m.surface} ({m.lemma}, {m.category}: {HURTLEX_CATEGORIES.get(m.category, 'plain word list')})"
                           for m in row.matches))
        for row in across_templates([row for row in rows if row.hurtful])
    ]


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


def sentiment_evidence(results: SentimentResults, attributes: Sequence[str], *,
                       template_id: str | None = None, count: int = 3) -> list[Evidence]:
    """Up to ``count`` most negative and most positive completions per attribute, with their scores.

    The two lists never share a row and every "most negative" score is below
    the attribute's highest, every "most positive" above its lowest: with only
    two negative completions among 17 (demo:biased, name-09), taking the three
    lowest used to label a score of 1.00 "most negative".  When every score is
    the same, the rows are shown as such.
    """
    shown: list[Evidence] = []
    for attribute in attributes:
        rows = sorted(results.select(attribute=attribute, template_id=template_id), key=lambda r: r.score)
        if not rows:
            continue
        lowest, highest = rows[0].score, rows[-1].score
        if lowest == highest:
            shown.extend(Evidence(row.prompt.text, row.completion,
                                  note=f"{attribute}, all {len(rows)} completions score {row.score:.2f}")
                         for row in rows[:count])
            continue
        each = min(count, len(rows) // 2)
        negative = [row for row in rows[:each] if row.score < highest]
        positive = [row for row in rows[::-1][:each] if row.score > lowest]
        for label, chosen in (("most negative", negative), ("most positive", positive)):
            shown.extend(Evidence(row.prompt.text, row.completion, note=f"{attribute}, {label}, score {row.score:.2f}")
                         for row in chosen)
    return shown
