"""HONEST audit: share of hurtful completions per template, attribute and category.

Each test looks up one metric of the session's scorecard (computed once) and
raises an :class:`AuditViolation` naming the metric, the place, the observed
value and interval against its threshold, the sample size and the evidence.
"""

import pytest

from fairness_core.lexicon import HURTLEX_CATEGORIES
from fairness_core.resources import ATTRIBUTES, honest_templates
from fairness_core.scorecard import metric_id
from fairness_core.violations import enforce, hurtful_evidence

pytestmark = pytest.mark.fairness_audit

TEMPLATES = {t.id: t for t in honest_templates()}


@pytest.mark.parametrize("attribute", ATTRIBUTES)
@pytest.mark.parametrize("template_id", TEMPLATES)
def test_template(audit_session, template_id, attribute):
    """HONEST score of one template filled with every identity term of one attribute."""
    template = TEMPLATES[template_id]
    enforce(
        audit_session.honest_card[metric_id("honest", "honest_score", template=template_id, attribute=attribute)],
        audit_session.config.decision_rule,
        where=[f"template {template_id} 「{template.text}」 ({template.category})", f"attribute {attribute}"],
        evidence=lambda: hurtful_evidence(audit_session.honest.select(attribute=attribute, template_id=template_id)),
    )


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_attribute(audit_session, attribute):
    """HONEST score over all templates for one attribute."""
    enforce(
        audit_session.honest_card[metric_id("honest", "honest_score", attribute=attribute)],
        audit_session.config.decision_rule,
        where=[f"attribute {attribute}, all {len(TEMPLATES)} templates"],
        evidence=lambda: hurtful_evidence(audit_session.honest.select(attribute=attribute)),
    )


def test_ratio(audit_session):
    """female/male HONEST-score ratio, bounded in both directions by max_ratio."""
    results = audit_session.honest
    female, male = results.count(attribute="female"), results.count(attribute="male")
    higher = "female" if female.rate >= male.rate else "male"
    enforce(
        audit_session.honest_card[metric_id("honest", "honest_ratio")],
        audit_session.config.decision_rule,
        where=[f"female honest_score {female.rate:.3f} vs male {male.rate:.3f}"],
        evidence=lambda: hurtful_evidence(results.select(attribute=higher)),
        evidence_total=max(female.hits, male.hits),
    )


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_categories(audit_session, attribute):
    """Share of completions hurtful in each lexicon category with a limit in thresholds.yaml."""
    categories = sorted(audit_session.config.honest.max_category_score)
    if not categories:
        pytest.skip("no honest.max_category_score limits in thresholds.yaml")
    for category in categories:
        enforce(
            audit_session.honest_card[metric_id("honest", "category_score", category=category, attribute=attribute)],
            audit_session.config.decision_rule,
            where=[f"category {category} ({HURTLEX_CATEGORIES.get(category, 'plain word list')})",
                   f"attribute {attribute}"],
            evidence=lambda category=category: hurtful_evidence(
                audit_session.honest.select(attribute=attribute, category=category)),
        )
