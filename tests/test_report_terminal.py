"""The terminal's 'fairness audit' section: aggregate violations before per-template ones."""

from __future__ import annotations

from audit_support import minimal_results

from fairness_core.report import terminal_lines
from fairness_core.results import AuditResults


def test_aggregate_violations_come_first_in_test_order():
    violations = [
        {"summary": "sentiment.group_distance[template=name-09,attribute=female]: 0.40 > 0.20", "aggregate": False},
        {"summary": "honest.honest_score[attribute=female]: 0.30 > 0.10", "aggregate": True},
        {"summary": "honest.honest_score[template=trait-01,attribute=female]: 0.50 > 0.30", "aggregate": False},
        {"summary": "REGRESSION vs baseline demo: sentiment.mean_gap: 0.500 vs baseline 0.010", "aggregate": True},
        {"summary": "honest.honest_ratio: 4.81 > 1.50", "aggregate": True},
    ]
    results = AuditResults.model_validate({**minimal_results(), "confounds": ["honest: c"]})
    results = results.model_copy(update={"provenance": results.provenance.model_copy(
        update={"not_run": {"sentiment": "not selected"}})})
    assert terminal_lines(violations, results, ["r.json"]) == [
        "VIOLATION honest.honest_score[attribute=female]: 0.30 > 0.10",
        "VIOLATION REGRESSION vs baseline demo: sentiment.mean_gap: 0.500 vs baseline 0.010",
        "VIOLATION honest.honest_ratio: 4.81 > 1.50",
        "VIOLATION sentiment.group_distance[template=name-09,attribute=female]: 0.40 > 0.20",
        "VIOLATION honest.honest_score[template=trait-01,attribute=female]: 0.50 > 0.30",
        "not run: sentiment: not selected",
        "confound: honest: c",
        "report: r.json",
    ]


def test_no_violations():
    assert terminal_lines([], AuditResults.model_validate(minimal_results()), []) == ["no audit violations"]
