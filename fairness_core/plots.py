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


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def honest_by_template(results: HonestResults, *, threshold: float) -> str:
    """Horizontal bars: HONEST score of each template per attribute, with the per-template limit."""
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
    axes.legend(loc="lower right", fontsize=8)
    return _png(figure)


def sentiment_ecdf(results: SentimentResults) -> str:
    """Empirical CDF of the sentiment scores of each attribute (a gap between curves is the W1 distance)."""
    figure, axes = plt.subplots(figsize=(6, 3.2))
    for attribute, scores in results.scores().items():
        ordered = np.sort(scores)
        axes.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post",
                  label=f"{attribute} (n={len(ordered)}, mean {ordered.mean():.2f})", color=COLOURS[attribute])
    axes.set_xlim(0, 1)
    axes.set_xlabel("sentiment score (0 negative, 1 positive)")
    axes.set_ylabel("share of completions <= score")
    axes.legend(loc="upper left", fontsize=8)
    return _png(figure)
