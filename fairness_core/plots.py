"""Report plots as base64 PNG, drawn from the results file alone: HONEST per template and group, sentiment ECDFs.

Labels are ASCII only (template ids, group ids), so the plots render the same
on any machine without a Japanese font; the Japanese text lives in the HTML
around them, which the browser renders.  Drawing from
:class:`~fairness_core.results.AuditResults` rather than from a live session
lets a pytest-xdist controller, which never generated anything, draw them.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend first)
import numpy as np  # noqa: E402

from fairness_core.results import AuditResults  # noqa: E402

#: One colour per group, in the attribute set's order (ten distinct hues, then they repeat).
PALETTE = [plt.get_cmap("tab10")(i) for i in range(10)]
#: The sentiment ECDF's x axis: the scores' [0, 1] with a margin, so that no step lies on the frame.
X_RANGE = (-0.02, 1.02)


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def honest_by_template(results: AuditResults) -> str:
    """Horizontal bars: HONEST score of each template per group, with the per-template limit (base64 PNG)."""
    return _png(honest_figure(results))


def sentiment_ecdf(results: AuditResults) -> str:
    """Empirical CDF of the sentiment scores of each group (base64 PNG)."""
    return _png(sentiment_figure(results))


def honest_figure(results: AuditResults):
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    threshold = None
    for m in results.metrics:
        if m.evaluation == "honest" and m.metric == "honest_score" and m.template_id and m.value is not None:
            rates[m.attribute or ""][m.template_id] = m.value
            threshold = m.limit_upper
    groups = list(rates)
    template_ids = list(dict.fromkeys(t for per_group in rates.values() for t in per_group))
    positions = np.arange(len(template_ids))
    height = 0.8 / max(len(groups), 1)
    figure, axes = plt.subplots(figsize=(7, (0.14 + 0.07 * len(groups)) * len(template_ids) + 1.4))
    for index, group in enumerate(groups):
        offset = (index - (len(groups) - 1) / 2) * height
        axes.barh(positions + offset, [rates[group].get(t, 0.0) for t in template_ids], height=height,
                  label=group, color=PALETTE[index % len(PALETTE)])
    if threshold is not None:
        axes.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"max_template_score {threshold:g}")
    axes.set_yticks(positions, template_ids, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("HONEST score (share of completions with a hurtful word)")
    # Beside the axes, so that the legend never hides the bars that cross the threshold.
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure


def sentiment_figure(results: AuditResults):
    """Empirical CDF of the sentiment scores of each group (a gap between curves is the W1 distance)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in results.completions.get("sentiment", []):
        if record.score is not None:
            scores[record.attribute].append(record.score)
    figure, axes = plt.subplots(figsize=(6, 3.4))
    for index, (group, values) in enumerate(scores.items()):
        ordered = np.sort(values)
        # Drawn from the left edge to the right one, so that the first and last jumps show as steps.
        axes.step([X_RANGE[0], *ordered, X_RANGE[1]], [0, *np.arange(1, len(ordered) + 1) / len(ordered), 1],
                  where="post",
                  label=f"{group} (n={len(ordered)}, mean {ordered.mean():.2f})", color=PALETTE[index % len(PALETTE)])
    # Padding, so that steps at 0 and 1 do not sit on the frame and read as flat lines.
    axes.set_xlim(*X_RANGE)
    axes.set_ylim(-0.02, 1.05)
    axes.set_xlabel("sentiment score (0 negative, 1 positive)")
    axes.set_ylabel("share of completions <= score")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure
