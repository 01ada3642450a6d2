"""Sentiment group-fairness audit (Huang et al. 2020) on Japanese given names.

Completions after female and male names are scored for sentiment; the tests
compare the score distributions (Wasserstein-1) per template and overall.
A violation shows the distance, the means, the sample sizes and, as the
reference study did, the most negative and most positive completions.
"""

import pytest

from fairness_core.resources import ATTRIBUTES, name_templates
from fairness_core.violations import AtMost, AuditViolation, sentiment_evidence, violation_message

pytestmark = pytest.mark.fairness_audit

TEMPLATES = {t.id: t for t in name_templates()}


def _check(results, limit, observed, *, metric, where, template_id=None, attributes=ATTRIBUTES):
    verdict = limit.fails(observed)
    if verdict:
        means = results.means(template_id=template_id)
        sizes = {a: len(s) for a, s in results.scores(template_id=template_id).items()}
        raise AuditViolation(violation_message(
            metric=metric,
            where=[*where, "mean sentiment: " + ", ".join(f"{a} {means[a]:.3f}" for a in ATTRIBUTES)],
            verdict=verdict,
            sample=", ".join(f"{a} {n} completions" for a, n in sizes.items()),
            evidence=sentiment_evidence(results, attributes, template_id=template_id),
        ))


@pytest.mark.parametrize("attribute", ATTRIBUTES)
@pytest.mark.parametrize("template_id", TEMPLATES)
def test_template(audit_session, template_id, attribute):
    """W1 between one attribute's scores and the pooled scores, within one template."""
    results = audit_session.sentiment
    _check(
        results, AtMost(audit_session.config.sentiment.max_template_distance),
        results.distances(template_id=template_id)[attribute],
        metric="group_distance per template (W1 to pooled sentiment)",
        where=[f"template {template_id} 「{TEMPLATES[template_id].text}」", f"attribute {attribute}"],
        template_id=template_id, attributes=(attribute,),
    )


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_group_distance(audit_session, attribute):
    """W1 between one attribute's scores and the pooled scores, over all templates."""
    results = audit_session.sentiment
    _check(
        results, AtMost(audit_session.config.sentiment.max_group_distance), results.distances()[attribute],
        metric="group_distance (W1 to pooled sentiment)",
        where=[f"attribute {attribute}, all {len(TEMPLATES)} templates"], attributes=(attribute,),
    )


def test_average_group_fairness(audit_session):
    """Mean over attributes of the group distances (Average Group Fairness)."""
    results = audit_session.sentiment
    _check(
        results, AtMost(audit_session.config.sentiment.max_average_group_fairness),
        results.average_group_fairness(),
        metric="average_group_fairness", where=[f"all {len(TEMPLATES)} templates"],
    )


def test_mean_gap(audit_session):
    """Absolute difference between the attributes' mean sentiment."""
    results = audit_session.sentiment
    _check(
        results, AtMost(audit_session.config.sentiment.max_mean_gap), results.mean_gap(),
        metric="mean_sentiment_gap (|female - male|)", where=[f"all {len(TEMPLATES)} templates"],
    )


def test_counterfactual_fairness(audit_session):
    """Mean W1 between counterfactual prompts (same template, names of different attributes)."""
    protocol = audit_session.config.sentiment.protocol
    if protocol.num_samples < 2:
        pytest.skip(f"counterfactual fairness compares per-prompt score distributions and needs "
                    f"sentiment.protocol.num_samples >= 2 (got {protocol.num_samples})")
    results = audit_session.sentiment
    _check(
        results, AtMost(audit_session.config.sentiment.max_counterfactual_distance),
        results.counterfactual_fairness(),
        metric="counterfactual_fairness (mean W1 over templates and cross-attribute name pairs)",
        where=[f"{len(TEMPLATES)} templates, {protocol.num_samples} samples per prompt"],
    )
