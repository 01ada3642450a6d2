"""HONEST audit: share of hurtful completions per template, attribute and category.

Each test looks up results computed once per session (``audit_session.honest``)
and raises an :class:`AuditViolation` naming the metric, the place, the
observed value against its threshold, the sample size and the evidence.
"""

import pytest

from fairness_core.lexicon import HURTLEX_CATEGORIES
from fairness_core.resources import ATTRIBUTES, honest_templates
from fairness_core.violations import AtMost, AuditViolation, RatioWithin, hurtful_evidence, violation_message

pytestmark = pytest.mark.fairness_audit

TEMPLATES = {t.id: t for t in honest_templates()}


def _check_rate(limit, *, metric, where, count, rows):
    verdict = limit.fails(count.rate)
    if verdict:
        raise AuditViolation(violation_message(
            metric=metric, where=where, verdict=verdict,
            sample=f"{count.hits} hurtful of {count.total} completions",
            evidence=hurtful_evidence(rows),
        ))


@pytest.mark.parametrize("attribute", ATTRIBUTES)
@pytest.mark.parametrize("template_id", TEMPLATES)
def test_template(audit_session, template_id, attribute):
    """HONEST score of one template filled with every identity term of one attribute."""
    results = audit_session.honest
    template = TEMPLATES[template_id]
    _check_rate(
        AtMost(audit_session.config.honest.max_template_score),
        metric="honest_score per template",
        where=[f"template {template_id} 「{template.text}」 ({template.category})", f"attribute {attribute}"],
        count=results.count(attribute=attribute, template_id=template_id),
        rows=results.select(attribute=attribute, template_id=template_id),
    )


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_attribute(audit_session, attribute):
    """HONEST score over all templates for one attribute."""
    results = audit_session.honest
    _check_rate(
        AtMost(audit_session.config.honest.max_honest_score[attribute]),
        metric="honest_score", where=[f"attribute {attribute}, all {len(TEMPLATES)} templates"],
        count=results.count(attribute=attribute), rows=results.select(attribute=attribute),
    )


def test_ratio(audit_session):
    """female/male HONEST-score ratio, bounded in both directions by max_ratio."""
    results = audit_session.honest
    config = audit_session.config.honest
    female, male = results.count(attribute="female"), results.count(attribute="male")
    if female.hits + male.hits < config.min_hits_for_ratio:
        pytest.skip(f"only {female.hits + male.hits} hurtful completions in all (< min_hits_for_ratio="
                    f"{config.min_hits_for_ratio}): too few for a ratio; the per-attribute limits still apply")
    verdict = RatioWithin(config.max_ratio).fails(results.ratio("female", "male"))
    if verdict:
        raise AuditViolation(violation_message(
            metric="honest_ratio (female / male)",
            where=[f"female honest_score {female.rate:.3f} vs male {male.rate:.3f}"],
            verdict=verdict,
            sample=f"female {female.hits}/{female.total}, male {male.hits}/{male.total} hurtful completions",
            evidence=hurtful_evidence(results.select(attribute="female" if female.rate > male.rate else "male")),
            evidence_total=max(female.hits, male.hits),
        ))


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_categories(audit_session, attribute):
    """Share of completions hurtful in each lexicon category with a limit in thresholds.yaml."""
    results = audit_session.honest
    for category, threshold in sorted(audit_session.config.honest.max_category_score.items()):
        _check_rate(
            AtMost(threshold),
            metric=f"honest_score in category {category} ({HURTLEX_CATEGORIES.get(category, category)})",
            where=[f"attribute {attribute}, all {len(TEMPLATES)} templates"],
            count=results.count(attribute=attribute, category=category),
            rows=results.select(attribute=attribute, category=category),
        )
