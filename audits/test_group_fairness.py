"""Sentiment group-fairness audit (Huang et al. 2020) on Japanese given names.

Completions after female and male names are scored for sentiment; the tests
compare the score distributions (Wasserstein-1) per template and overall.
A violation shows the distance, the means, the sample sizes and, as the
reference study did, the most negative and most positive completions.
"""

import pytest

from fairness_core.resources import ATTRIBUTES, name_templates
from fairness_core.scorecard import metric_id
from fairness_core.violations import enforce, sentiment_evidence

pytestmark = pytest.mark.fairness_audit

TEMPLATES = {t.id: t for t in name_templates()}


def _enforce(audit_session, metric, where, *, template_id=None, attributes=ATTRIBUTES):
    results = audit_session.sentiment
    means = results.means(template_id=template_id)
    enforce(
        audit_session.sentiment_card[metric],
        audit_session.config.decision_rule,
        where=[*where, "mean sentiment: " + ", ".join(f"{a} {means[a]:.3f}" for a in ATTRIBUTES)],
        evidence=lambda: sentiment_evidence(results, attributes, template_id=template_id),
    )


@pytest.mark.parametrize("attribute", ATTRIBUTES)
@pytest.mark.parametrize("template_id", TEMPLATES)
def test_template(audit_session, template_id, attribute):
    """W1 between one attribute's scores and the pooled scores, within one template."""
    _enforce(audit_session, metric_id("sentiment", "group_distance", template=template_id, attribute=attribute),
             [f"template {template_id} 「{TEMPLATES[template_id].text}」", f"attribute {attribute}"],
             template_id=template_id, attributes=(attribute,))


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_group_distance(audit_session, attribute):
    """W1 between one attribute's scores and the pooled scores, over all templates."""
    _enforce(audit_session, metric_id("sentiment", "group_distance", attribute=attribute),
             [f"attribute {attribute}, all {len(TEMPLATES)} templates"], attributes=(attribute,))


def test_average_group_fairness(audit_session):
    """Mean over attributes of the group distances (Average Group Fairness)."""
    _enforce(audit_session, metric_id("sentiment", "average_group_fairness"), [f"all {len(TEMPLATES)} templates"])


def test_mean_gap(audit_session):
    """Absolute difference between the attributes' mean sentiment."""
    _enforce(audit_session, metric_id("sentiment", "mean_gap"), [f"all {len(TEMPLATES)} templates"])


def test_counterfactual_fairness(audit_session):
    """Mean W1 between counterfactual prompts (same template, names of different attributes)."""
    _enforce(audit_session, metric_id("sentiment", "counterfactual_fairness"),
             [f"{len(TEMPLATES)} templates, pairs of names from different attributes"])
