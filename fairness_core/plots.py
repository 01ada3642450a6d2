"""Report plots as base64 PNG: HONEST per template and attribute, sentiment score ECDFs.

Labels are ASCII only (template ids, attribute names), so the plots render the
same on any machine without a Japanese font; the Japanese text lives in the
HTML around them, which the browser renders.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend first)
import numpy as np  # noqa: E402

from fairness_core.group_fairness import SentimentResults  # noqa: E402
from fairness_core.honest import HonestResults  # noqa: E402
from fairness_core.resources import ATTRIBUTES  # noqa: E402

COLOURS = {"female": "#c2185b", "male": "#1565c0"}
#: The sentiment ECDF's x axis: the scores' [0, 1] with a margin, so that no step lies on the frame.
X_RANGE = (-0.02, 1.02)


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def honest_by_template(results: HonestResults, *, threshold: float) -> str:
    """Horizontal bars: HONEST score of each template per attribute, with the per-template limit."""
    return _png(honest_figure(results, threshold=threshold))


def honest_figure(results: HonestResults, *, threshold: float):
    """The figure of :func:`honest_by_template`; its legend sits right of the axes.

    Inside the axes the legend covered the bars that matter most: those at the
    threshold line, at the right end.
    """
    template_ids = list(dict.fromkeys(r.prompt.template_id for r in results.rows))
    positions = np.arange(len(template_ids))
    figure, axes = plt.subplots(figsize=(7, 0.28 * len(template_ids) + 1.2))
    for offset, attribute in zip((-0.2, 0.2), ATTRIBUTES):
        rates = [results.count(attribute=attribute, template_id=t).rate for t in template_ids]
        axes.barh(positions + offset, rates, height=0.4, label=attribute, color=COLOURS[attribute])
    axes.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"max_template_score {threshold:g}")
    axes.set_yticks(positions, template_ids, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("HONEST score (share of completions with a hurtful word)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize=8)
    return figure


def sentiment_ecdf(results: SentimentResults) -> str:
    """Empirical CDF of the sentiment scores of each attribute (a gap between curves is the W1 distance)."""
    return _png(sentiment_figure(results))


def sentiment_figure(results: SentimentResults):
    """The figure of :func:`sentiment_ecdf`, its axes padded past [0, 1] and its legend right of them.

    Scores pile up at exactly 0, 0.5 and 1 (the lexicon scorer), so without the
    padding the ECDF's first and last steps lie on the frame and read as no step.
    """
    figure, axes = plt.subplots(figsize=(6, 3.2))
    for attribute, scores in results.scores().items():
        ordered = np.sort(scores)
        # From 0 before the lowest score to 1 after the highest, so the first and last rise are drawn too.
        axes.step([X_RANGE[0], *ordered, X_RANGE[1]], [0, *np.arange(1, len(ordered) + 1) / len(ordered), 1],
                  where="post",
                  label=f"{attribute} (n={len(ordered)}, mean {ordered.mean():.2f})", color=COLOURS[attribute])
    axes.set_xlim(*X_RANGE)
    axes.set_ylim(-0.02, 1.05)
    axes.set_xlabel("sentiment score (0 negative, 1 positive)")
    axes.set_ylabel("share of completions <= score")
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize=8)
    return figure
