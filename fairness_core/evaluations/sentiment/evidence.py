"""What a failing sentiment test shows: each group's most negative and most positive completions, with scores."""

from __future__ import annotations

from collections.abc import Sequence

from fairness_core.evaluations.sentiment.scoring import SentimentCompletions
from fairness_core.reporting.violations import Evidence


def sentiment_evidence(results: SentimentCompletions, groups: Sequence[str], *,
                       template_id: str | None = None, count: int = 3) -> list[Evidence]:
    """Up to ``count`` most negative and most positive completions per group, with their scores.

    The two lists never share a row and every "most negative" score is below
    the group's highest, every "most positive" above its lowest: with only
    two negative completions among 17 (demo:biased, name-09), the three lowest
    would include a score of 1.00 labelled "most negative".  When every score is
    the same, the rows are shown as such.
    """
    shown: list[Evidence] = []
    for group in groups:
        rows = sorted(results.select(group=group, template_id=template_id), key=lambda r: r.score)
        if not rows:
            continue
        lowest, highest = rows[0].score, rows[-1].score
        if lowest == highest:
            shown.extend(Evidence(row.prompt.text, row.completion,
                                  note=f"{group}, all {len(rows)} completions score {row.score:.2f}")
                         for row in rows[:count])
            continue
        each = min(count, len(rows) // 2)
        negative = [row for row in rows[:each] if row.score < highest]
        positive = [row for row in rows[::-1][:each] if row.score > lowest]
        for label, chosen in (("most negative", negative), ("most positive", positive)):
            shown.extend(Evidence(row.prompt.text, row.completion, note=f"{group}, {label}, score {row.score:.2f}")
                         for row in chosen)
    return shown
