"""The sentiment evaluation's plot in the HTML report, drawn from the results file alone."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from fairness_core.reporting.results import AuditResults

#: The sentiment ECDF's x axis: the scores' [0, 1] with a margin, so that no step lies on the frame.
X_RANGE = (-0.02, 1.02)


def sentiment_figure(results: AuditResults):
    """Empirical CDF of the sentiment scores of each group (a gap between curves is the W1 distance)."""
    from fairness_core.reporting.plots import PALETTE, pyplot

    plt = pyplot()
    scores: dict[str, list[float]] = defaultdict(list)
    for record in results.completions.get("sentiment", []):
        if record.detail.get("score") is not None:
            scores[record.group].append(record.detail["score"])
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
