"""The terminal's 'fairness audit' section: aggregate violations before per-template ones."""

from __future__ import annotations

from audit_support import minimal_results

from fairness_core.reporting.report import terminal_lines
from fairness_core.reporting.results import AuditResults
from fairness_core.run.reporter import evaluation_lines


def metric(metric_id: str, value: float, limit: float, *, aggregate: bool) -> dict:
    evaluation, _, rest = metric_id.partition(".")
    return {"id": metric_id, "evaluation": evaluation, "metric": rest.split("[")[0], "group": None, "template_id": None,
            "category": None, "value": value, "interval": None, "p_value": None, "limit_upper": limit,
            "limit_lower": None, "decision": "fail" if value > limit else "pass", "skip_reason": None,
            "aggregate": aggregate, "sample": ""}


def test_aggregate_violations_come_first_in_test_order_and_the_counts_are_those_of_the_tables():
    violations = [
        {"summary": "sentiment.group_distance[template=name-09,group=female]: 0.40 > 0.20", "aggregate": False},
        {"summary": "honest.honest_score[group=female]: 0.30 > 0.10", "aggregate": True},
        {"summary": "honest.honest_score[template=trait-01,group=female]: 0.50 > 0.30", "aggregate": False},
        {"summary": "REGRESSION vs baseline demo: sentiment.mean_gap: 0.500 vs baseline 0.010", "aggregate": True,
         "kind": "regression", "metric": "sentiment.mean_gap"},
        {"summary": "honest.honest_ratio: 4.81 > 1.50", "aggregate": True},
    ]
    metrics = [metric("honest.honest_score[group=female]", 0.3, 0.1, aggregate=True),
               metric("honest.honest_ratio", 4.81, 1.5, aggregate=True),
               metric("sentiment.mean_gap", 0.01, 0.2, aggregate=True),
               metric("honest.honest_score[template=trait-01,group=female]", 0.5, 0.3, aggregate=False),
               metric("sentiment.group_distance[template=name-09,group=female]", 0.4, 0.2, aggregate=False)]
    results = AuditResults.model_validate({**minimal_results(), "confounds": ["honest: c"], "metrics": metrics})
    results = results.model_copy(update={"provenance": results.provenance.model_copy(
        update={"not_run": {"sentiment": "not selected"}})})
    assert terminal_lines(violations, results, ["r.json"]) == [
        "FAILED: 2 limits failed, 2 per-template or per-category limits failed, 1 regression",
        "VIOLATION honest.honest_score[group=female]: 0.30 > 0.10",
        "VIOLATION REGRESSION vs baseline demo: sentiment.mean_gap: 0.500 vs baseline 0.010",
        "VIOLATION honest.honest_ratio: 4.81 > 1.50",
        "VIOLATION sentiment.group_distance[template=name-09,group=female]: 0.40 > 0.20",
        "VIOLATION honest.honest_score[template=trait-01,group=female]: 0.50 > 0.30",
        "not run: sentiment: not selected",
        "confound: honest: c",
        "report: r.json",
    ]


def test_no_violations():
    assert terminal_lines([], AuditResults.model_validate(minimal_results()), []) == ["PASSED: no audit violations"]


def test_the_terminal_names_the_groups_the_pool_comparison_flags_and_the_baseline():
    raw = minimal_results()
    raw["notes"] = ["baseline: compared with old.json (model demo, 2026-11-30T10:00:00+00:00)"]
    raw["metrics"] = [
        {"id": f"honest.pool_ratio[group={group}]", "evaluation": "honest", "metric": "pool_ratio",
         "group": group, "template_id": None, "category": None, "value": value, "interval": None, "p_value": p,
         "limit_upper": None, "limit_lower": None, "decision": "pass", "skip_reason": None, "aggregate": False,
         "sample": ""}
        for group, value, p in (("vietnamese", 2.1, 0.001), ("japanese", 0.9, 0.8))]
    results = AuditResults.model_validate(raw)
    lines = terminal_lines([], results, [], evaluation_lines(results))
    assert "pool comparison: vietnamese stands out: HONEST score 2.10x the pooled score, Holm-adjusted p 0.001" in lines
    assert not any("japanese" in line for line in lines)
    assert "baseline: compared with old.json (model demo, 2026-11-30T10:00:00+00:00)" in lines
