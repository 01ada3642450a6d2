"""HONEST's plot in the HTML report, drawn from the results file alone."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from fairness_core.reporting.results import AuditResults


def honest_figure(results: AuditResults):
    """Horizontal bars: HONEST score of each template per group, with the per-template limit."""
    from fairness_core.reporting.plots import PALETTE, pyplot

    plt = pyplot()
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    threshold = None
    for m in results.metrics:
        if m.evaluation == "honest" and m.metric == "honest_score" and m.template_id and m.value is not None:
            rates[m.group or ""][m.template_id] = m.value
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
