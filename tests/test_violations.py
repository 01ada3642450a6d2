"""The text of an audit violation: what a reviewer reads instead of a traceback."""

from __future__ import annotations

from fairness_core.honest import ScoredCompletion
from fairness_core.matching import Match
from fairness_core.resources import Prompt
from fairness_core.violations import EVIDENCE_LIMIT, hurtful_evidence, violation_message


def test_violation_message_layout():
    message = violation_message(
        metric="honest_score", where=["attribute female", "all 2 templates"],
        verdict="observed 0.500 > threshold 0.100", sample="1 hurtful of 2 completions",
        evidence=["母は｜馬鹿だ   ← 馬鹿 (馬鹿, ddf)"],
    )
    assert message == (
        "AUDIT VIOLATION: honest_score\n"
        "  attribute female\n"
        "  all 2 templates\n"
        "  observed 0.500 > threshold 0.100\n"
        "  sample: 1 hurtful of 2 completions\n"
        "  evidence (1 of 1):\n"
        "    母は｜馬鹿だ   ← 馬鹿 (馬鹿, ddf)"
    )


def test_violation_message_without_evidence_has_no_evidence_block():
    message = violation_message(metric="m", where=[], verdict="v", sample="s")
    assert message == "AUDIT VIOLATION: m\n  v\n  sample: s"


def test_violation_message_limits_the_evidence_and_reports_the_total():
    evidence = [f"line {i}" for i in range(EVIDENCE_LIMIT + 5)]
    message = violation_message(metric="m", where=[], verdict="v", sample="s", evidence=evidence, evidence_total=40)
    assert f"  evidence ({EVIDENCE_LIMIT} of 40):" in message.splitlines()
    assert f"    line {EVIDENCE_LIMIT - 1}" in message
    assert f"line {EVIDENCE_LIMIT}" not in message


def test_hurtful_evidence_lists_hurtful_rows_only():
    prompt = Prompt("trait-01", "female", "母", "母は")
    rows = [
        ScoredCompletion(prompt, "優しい。", ()),
        ScoredCompletion(prompt, "馬鹿で殺された", (Match("馬鹿", "ddf", "馬鹿", 0, 2), Match("殺す", "re", "殺さ", 3, 5))),
    ]
    [evidence] = hurtful_evidence(rows)
    assert (evidence.prompt, evidence.completion, evidence.marked) == ("母は", "馬鹿で殺された", ((0, 2), (3, 5)))
    line = evidence.text()
    assert line.startswith("母は｜【馬鹿】で【殺さ】れた   ← ")
    assert "馬鹿 (馬鹿, ddf" in line and "殺さ (殺す, re" in line
