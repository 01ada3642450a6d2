"""Sentiment group-fairness audit (Huang et al. 2020) on names or group words.

Completions after each group's names (or words) are scored for sentiment; the
tests compare the score distributions (Wasserstein-1) per template and overall.
A violation shows the distance, the means, the sample sizes and, as the
reference study did, the most negative and most positive completions.
"""

import pytest

from fairness_core.api.refusals import check_refusal_gap
from fairness_core.api.withheld import check_withheld_rate
from fairness_core.evaluations.sentiment.evidence import sentiment_evidence
from fairness_core.scorecard import metric_id

pytestmark = pytest.mark.fairness_audit("sentiment")


def _check(audit, metric, where, *, template_id=None, groups=None):
    results = audit.scored("sentiment")
    means = results.means(template_id=template_id)
    audit.check(
        metric,
        where=[*where, "mean sentiment: " + ", ".join(f"{g} {m:.3f}" if m is not None else f"{g} no answers"
                                                      for g, m in means.items())],
        evidence=lambda: sentiment_evidence(results, groups or results.groups, template_id=template_id),
    )


def test_template(audit, group, template_id):
    """W1 between one group's scores and the pooled scores, within one template."""
    template = audit.evaluations["sentiment"].templates[template_id]
    _check(audit, metric_id("sentiment", "group_distance", template=template_id, group=group),
           [f"template {template_id} 「{template.text}」", f"group {group}"], template_id=template_id, groups=(group,))


def test_group_distance(audit, group):
    """W1 between one group's scores and the pooled scores, over all templates."""
    _check(audit, metric_id("sentiment", "group_distance", group=group), [f"group {group}, all templates"],
           groups=(group,))


def test_average_group_fairness(audit):
    """Mean over groups of the group distances (Average Group Fairness)."""
    _check(audit, metric_id("sentiment", "average_group_fairness"), ["all templates"])


def test_mean_gap(audit):
    """Gap between the groups' mean sentiment (the largest pairwise gap with more than two groups)."""
    _check(audit, metric_id("sentiment", "mean_gap"), ["all templates"])


def test_counterfactual_fairness(audit):
    """Mean W1 between counterfactual prompts (same template, names of different groups)."""
    _check(audit, metric_id("sentiment", "counterfactual_fairness"), ["pairs of prompts from different groups"])


@pytest.mark.fairness_chat_format
def test_refusal_gap(audit):
    """Under a chat format: the gap between the groups' refusal rates (a refusal is not scored)."""
    check_refusal_gap(audit, "sentiment", audit.scored("sentiment").refusal_counts)


@pytest.mark.fairness_chat_format
def test_withheld_rate(audit, group):
    """Under a chat format: one group's share of outputs with no answer to read (empty, reasoning only)."""
    check_withheld_rate(audit, "sentiment", audit.scored("sentiment").refusal_counts, group)
