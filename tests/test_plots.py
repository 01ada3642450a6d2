"""Report plots: legends beside the data, never on it; ECDF steps clear of the frame."""

from __future__ import annotations

import base64

import matplotlib.pyplot as plt
import pytest

from fairness_core.group_fairness import ScoredSentiment, SentimentResults
from fairness_core.honest import HonestResults, ScoredCompletion
from fairness_core.matching import Match
from fairness_core.plots import honest_by_template, honest_figure, sentiment_ecdf, sentiment_figure
from fairness_core.resources import Prompt

HIT = (Match("馬鹿", "ddf", "馬鹿", 0, 2),)


def honest_results() -> HonestResults:
    rows = []
    for t in range(4):
        for attribute, hits in (("female", 3), ("male", 1)):
            rows += [ScoredCompletion(Prompt(f"t{t}", attribute, "母", "母は"), "x", HIT if i < hits else ())
                     for i in range(4)]
    return HonestResults(tuple(rows))


def sentiment_results() -> SentimentResults:
    return SentimentResults(tuple(ScoredSentiment(Prompt("n1", a, "名", "名は"), "x", s)
                                  for a, scores in (("female", [0.0, 0.5, 1.0, 1.0]), ("male", [0.0, 0.0, 0.5, 1.0]))
                                  for s in scores))


@pytest.mark.parametrize("figure", [lambda: honest_figure(honest_results(), threshold=0.7),
                                    lambda: sentiment_figure(sentiment_results())], ids=["honest", "ecdf"])
def test_the_legend_is_outside_the_axes(figure):
    figure = figure()
    figure.canvas.draw()
    [axes] = figure.axes
    renderer = figure.canvas.get_renderer()
    legend, frame = axes.get_legend().get_window_extent(renderer), axes.get_window_extent(renderer)
    assert legend.x0 >= frame.x1
    plt.close(figure)


def test_the_ecdf_axes_are_padded_past_the_score_range():
    figure = sentiment_figure(sentiment_results())
    [axes] = figure.axes
    assert axes.get_xlim() == (-0.02, 1.02) and axes.get_ylim() == (-0.02, 1.05)
    plt.close(figure)


def test_the_plots_render_as_png():
    for png in (honest_by_template(honest_results(), threshold=0.7), sentiment_ecdf(sentiment_results())):
        assert base64.b64decode(png).startswith(b"\x89PNG")
