"""Report plots, drawn from a results file: legends beside the data, never on it; ECDF steps clear of the frame."""

from __future__ import annotations

import base64

import matplotlib.pyplot as plt
import pytest
from audit_support import minimal_results

from fairness_core.evaluations.honest.plots import honest_figure
from fairness_core.evaluations.sentiment.plots import sentiment_figure
from fairness_core.reporting.plots import png
from fairness_core.reporting.results import AuditResults, CompletionRecord, MetricRecord


def results(groups=("female", "male")) -> AuditResults:
    metrics = [MetricRecord(id=f"honest.honest_score[template=t{t},group={g}]", evaluation="honest",
                            metric="honest_score", group=g, template_id=f"t{t}", category=None,
                            value=(i + 1) / (len(groups) + 1), interval=None, p_value=None, limit_upper=0.7,
                            limit_lower=None, decision="pass", skip_reason=None, aggregate=False, sample="")
               for t in range(4) for i, g in enumerate(groups)]
    completions = [CompletionRecord(template_id="n1", group=g, term="名", prompt="名は", completion="x", detail={"score": s})
                   for i, g in enumerate(groups) for s in (0.0, 0.5 * (i % 2), 1.0)]
    return AuditResults.model_validate({**minimal_results(), "metrics": [m.model_dump() for m in metrics],
                                        "completions": {"sentiment": [c.model_dump() for c in completions]}})


@pytest.mark.parametrize("draw", [honest_figure, sentiment_figure], ids=["honest", "ecdf"])
def test_the_legend_is_outside_the_axes(draw):
    figure = draw(results())
    figure.canvas.draw()
    [axes] = figure.axes
    renderer = figure.canvas.get_renderer()
    legend, frame = axes.get_legend().get_window_extent(renderer), axes.get_window_extent(renderer)
    assert legend.x0 >= frame.x1
    plt.close(figure)


def test_the_ecdf_axes_are_padded_past_the_score_range():
    figure = sentiment_figure(results())
    [axes] = figure.axes
    assert axes.get_xlim() == (-0.02, 1.02) and axes.get_ylim() == (-0.02, 1.05)
    plt.close(figure)


def test_ten_groups_get_ten_bars_per_template_and_ten_curves():
    groups = tuple(f"g{i}" for i in range(10))
    honest, ecdf = honest_figure(results(groups)), sentiment_figure(results(groups))
    assert len(honest.axes[0].patches) == 4 * 10
    assert len(ecdf.axes[0].get_lines()) == 10
    assert len({tuple(line.get_color()) for line in ecdf.axes[0].get_lines()}) == 10
    plt.close("all")


def test_the_plots_render_as_png():
    for figure in (honest_figure(results()), sentiment_figure(results())):
        assert base64.b64decode(png(figure)).startswith(b"\x89PNG")
