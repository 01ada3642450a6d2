"""The chat demo models audited as a user would, in their chat template: the planted bias fails, the fair model passes.

``demo:chat-biased`` plants an HONEST disparity (female 0.30, male 0.06 among
the answers) and a refusal disparity (female 0.30, male 0.05); ``demo:chat``
plants neither.  Under ``--prompt-format=chat-prefill`` the audit must fail the
first naming the HONEST ratio and the refusal gap, pass the second, and keep
the refusal metrics in ``--audit-json`` and the HTML report.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from audit_support import REFUSAL_UNDERFIT

from fairness_core.demo.corpus import PLANTED_RATES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _audit(pytester, model: str):
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    return pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", f"--model={model}",
                                        "--prompt-format=chat-prefill", "--audit-json=audit.json",
                                        "--html=report.html", "-p", "no:cacheprovider", "-k", "not bbq")


def test_the_biased_chat_model_fails_on_its_planted_hurtful_and_refusal_disparities(pytester):
    result = _audit(pytester, "demo:chat-biased")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    result.stdout.fnmatch_lines(["*AUDIT VIOLATION: honest_ratio*", "*AUDIT VIOLATION: refusal_gap*"])
    assert "Traceback" not in text
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    metrics = {m["id"]: m for m in written["metrics"]}
    planted = PLANTED_RATES["chat-biased"]
    for group in ("female", "male"):
        # within 0.01 of the planted rate: the whole audit's intervals (+-0.003) are finer than the training's calibration
        assert abs(metrics[f"honest.honest_score[group={group}]"]["value"] - planted.hurtful[group]) <= 0.01, group
        # the tiny model refuses a little less often than its corpus (tests/demo/test_demo_chat_known_answers.py)
        low, high = metrics[f"honest.refusal_rate[group={group}]"]["interval"]
        assert low <= planted.refusal[group] and high >= planted.refusal[group] - REFUSAL_UNDERFIT, (group, low, high)
    gap = metrics["honest.refusal_gap"]
    assert gap["decision"] == "fail" and gap["interval"][0] > 0.10
    refused = [r for r in written["completions"]["honest"] if "refusal" in r["detail"]]
    assert refused and all(r["detail"]["matches"] == [] for r in refused)
    assert written["provenance"]["evaluations"]["honest"]["protocol"]["prompt_format"] == "chat-prefill"
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "honest.refusal_gap" in html and "refusal_rate" in html


def test_the_fair_chat_model_passes(pytester):
    result = _audit(pytester, "demo:chat")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    metrics = {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))["metrics"]}
    assert metrics["honest.refusal_gap"]["decision"] == "pass"
    assert metrics["sentiment.refusal_gap"]["decision"] == "pass"
    withheld = [m for m in metrics.values() if m["metric"] == "withheld_rate"]
    assert len(withheld) == 4 and all(m["value"] == 0.0 and m["decision"] == "pass" for m in withheld)


def test_the_biased_chat_model_instructed_on_nationality_ends_with_a_verdict_not_an_internal_error(pytester):
    """Instructed, the model refuses whole templates of some nationalities: those cells are not judged, the
    comparisons are between the groups that answered, and the refusal gap fails; the run never crashes."""
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", "--model=demo:chat-biased",
                                          "--attributes=nationality", "--prompt-format=chat-instruction",
                                          "-k", "sentiment", "--audit-json=audit.json", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    assert "INTERNALERROR" not in text and "Traceback" not in text
    metrics = {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))["metrics"]}
    skipped = [m for m in metrics.values() if m["metric"] == "group_distance" and m["decision"] == "skipped"]
    assert skipped and all(m["skip_reason"].startswith("not judged, because") for m in skipped)
    assert metrics["sentiment.refusal_gap"]["decision"] == "fail"
