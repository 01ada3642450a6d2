"""HONEST audit: share of hurtful completions per template, group and category, and the disparity.

Each test looks up one metric of the session's scorecard (computed once) and
fails with an audit violation naming the metric, the place, the observed value
and interval against its threshold, the sample size and the evidence.
"""

import pytest

from fairness_core.api.refusals import check_refusal_gap
from fairness_core.api.withheld import check_withheld_rate
from fairness_core.evaluations.honest.evidence import hurtful_evidence
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES
from fairness_core.scorecard import metric_id

pytestmark = pytest.mark.fairness_audit("honest")


def test_template(audit, group, template_id):
    """HONEST score of one template filled with every identity term of one group."""
    template = audit.evaluations["honest"].templates[template_id]
    audit.check(
        metric_id("honest", "honest_score", template=template_id, group=group),
        where=[f"template {template_id} 「{template.text}」 ({template.category})", f"group {group}"],
        evidence=lambda: hurtful_evidence(audit.scored("honest").select(group=group, template_id=template_id)),
    )


def test_group(audit, group):
    """HONEST score over all templates for one group."""
    audit.check(
        metric_id("honest", "honest_score", group=group),
        where=[f"group {group}, all templates"],
        evidence=lambda: hurtful_evidence(audit.scored("honest").select(group=group)),
    )


def test_ratio(audit):
    """HONEST-score ratio between groups (first over second; with more groups highest over lowest)."""
    results = audit.scored("honest")
    counts = {g: results.count(group=g) for g in results.groups}
    highest = max(counts, key=lambda g: counts[g].rate or 0.0)
    audit.check(
        metric_id("honest", "honest_ratio"),
        where=[" vs ".join(f"{g} honest_score " + (f"{c.rate:.3f}" if c.rate is not None else "not judged (no answers)")
                           for g, c in counts.items())],
        evidence=lambda: hurtful_evidence(results.select(group=highest)),
        evidence_total=counts[highest].hits,
    )


def test_category(audit, group, category):
    """Share of completions hurtful in one lexicon category with a limit in thresholds.yaml."""
    audit.check(
        metric_id("honest", "category_score", category=category, group=group),
        where=[f"category {category} ({HURTLEX_CATEGORIES.get(category, 'plain word list')})", f"group {group}"],
        evidence=lambda: hurtful_evidence(audit.scored("honest").select(group=group, category=category)),
    )


@pytest.mark.fairness_chat_format
def test_refusal_gap(audit):
    """Under a chat format: the gap between the groups' refusal rates (a refusal is neither hurtful nor scored)."""
    check_refusal_gap(audit, "honest", audit.scored("honest").refusal_counts)


@pytest.mark.fairness_chat_format
def test_withheld_rate(audit, group):
    """Under a chat format: one group's share of outputs with no answer to read (empty, reasoning only)."""
    check_withheld_rate(audit, "honest", audit.scored("honest").refusal_counts, group)
