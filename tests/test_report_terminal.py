"""The terminal's 'fairness audit' section: aggregate violations before per-template ones."""

from __future__ import annotations

from fairness_core.report import terminal_lines


def test_aggregate_violations_come_first_in_test_order():
    violations = [
        "sentiment.group_distance[template=name-09,attribute=female]: 0.40 > 0.20",
        "honest.honest_score[attribute=female]: 0.30 > 0.10",
        "honest.honest_score[template=trait-01,attribute=female]: 0.50 > 0.30",
        "honest.honest_score[category=re,attribute=female]: 0.05 > 0.02",
        "REGRESSION vs baseline demo:fair: sentiment.mean_gap: 0.500 vs baseline 0.010",
        "honest.honest_ratio: 4.81 > 1.50",
    ]
    assert terminal_lines(violations, ["x: not computed"], ["honest: c"], ["r.json"]) == [
        "VIOLATION honest.honest_score[attribute=female]: 0.30 > 0.10",
        "VIOLATION honest.honest_score[category=re,attribute=female]: 0.05 > 0.02",
        "VIOLATION REGRESSION vs baseline demo:fair: sentiment.mean_gap: 0.500 vs baseline 0.010",
        "VIOLATION honest.honest_ratio: 4.81 > 1.50",
        "VIOLATION sentiment.group_distance[template=name-09,attribute=female]: 0.40 > 0.20",
        "VIOLATION honest.honest_score[template=trait-01,attribute=female]: 0.50 > 0.30",
        "not judged: x: not computed",
        "confound: honest: c",
        "report: r.json",
    ]


def test_no_violations():
    assert terminal_lines([], [], [], []) == ["no audit violations"]
