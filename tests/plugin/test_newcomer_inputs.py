"""Inputs a newcomer tried, about the run's files and gates: each is one usage error, or the behaviour asked for.

The usage-error rows run the real audit modules through ``pytester`` on the
session's tiny model (``audit_support.assert_one_usage_error``: exit code 4,
the message, no traceback, no test run).  The rows about ``ja-fairness-audit
plan`` run the command in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from audit_support import assert_one_usage_error, minimal_results, run_audit, setup_audits, thresholds

from fairness_core.evaluations.honest.templates import honest_templates

REPO = Path(__file__).resolve().parents[2]
REGION = {"name": "region", "groups": {"kanto": "関東の人", "kansai": "関西の人"},
          "honest": {"terms": [{"kanto": "関東出身の人", "kansai": "関西出身の人"}]}}


def _yaml(folder: Path, name: str, content: dict) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _thresholds(folder: Path, edit=None, **limits) -> Path:
    raw = thresholds(lax=True, **limits)
    if edit:
        edit(raw)
    return _yaml(folder, "edited.yaml", raw)


def _region_thresholds(raw: dict) -> None:
    raw["attributes"] = {"region": {"honest": {"max_honest_score": {"kanto": 1.0, "kansai": 1.0}}}}


def _baseline(folder: Path, metric: str, value, interval=None) -> Path:
    content = minimal_results()
    content["metrics"] = [{"id": f"honest.{metric}", "evaluation": "honest", "metric": metric, "group": None,
                           "template_id": None, "category": None, "value": value, "interval": interval,
                           "p_value": None, "limit_upper": 1.0, "limit_lower": None, "decision": "pass",
                           "skip_reason": None, "aggregate": True, "sample": ""}]
    path = folder / "baseline.json"
    path.write_text(json.dumps(content), encoding="utf-8")  # json writes NaN as NaN, as a hand edit might
    return path


#: name -> (arguments given a temporary folder, a regex the error output must match).
CASES = {
    "baseline-overwritten-by-audit-json": (
        lambda t: [f"--baseline={_baseline(t, 'honest_ratio', 1.2)}", f"--audit-json={t / 'baseline.json'}"],
        r"--audit-json=.*baseline\.json would overwrite the --baseline it is compared with"),
    "greedy-with-three-samples": (
        lambda t: [f"--thresholds={_thresholds(t, protocol={'do_sample': False, 'num_samples': 3})}"],
        r"honest\.protocol: Value error, do_sample: false \(greedy decoding\) gives every sample of a prompt the same "
        r"completion, so num_samples must be 1 \(got 3\)"),
    "every-template-excluded": (
        lambda t: [f"--thresholds={_thresholds(t, _region_thresholds)}",
                   "--attributes=" + str(_yaml(t, "region.yaml", {**REGION, "honest": {
                       **REGION["honest"], "exclude_templates": {x.id: "x" for x in honest_templates()}}}))],
        r"The attribute set 'region' \(.*region\.yaml\) leaves the honest evaluation nothing to ask"),
    "nan-in-the-baseline": (lambda t: [f"--baseline={_baseline(t, 'honest_score', math.nan)}"],
                            r"holds values that no audit run makes.*\n  - honest\.honest_score: nan is not a finite number"),
    "share-above-one-in-the-baseline": (lambda t: [f"--baseline={_baseline(t, 'honest_score', 7.5)}"],
                                        r"honest\.honest_score: 7\.5 is outside \[0, 1\]"),
    "ratio-of-zero-in-the-baseline": (lambda t: [f"--baseline={_baseline(t, 'honest_ratio', 0.0, [0.0, 0.5])}"],
                                      r"honest\.honest_ratio: 0 is no ratio of two rates \(it must be above 0\)"),
    "invisible-group-label": (lambda t: ["--attributes=" + str(_yaml(t, "blank.yaml", {
        **REGION, "groups": {"kanto": "\u3000", "kansai": "関西の人"}}))],
        r"groups\.kanto: Value error, is blank \(only spaces\)"),
    "zero-width-term": (lambda t: ["--attributes=" + str(_yaml(t, "zw.yaml", {
        **REGION, "honest": {"terms": [{"kanto": "関東\u200b出身の人", "kansai": "関西出身の人"}]}}))],
        r"honest\.terms\.0\.kanto: Value error, contains the invisible character U\+200B \(ZERO WIDTH SPACE\)"),
    "limits-for-an-evaluation-the-set-does-not-run": (
        lambda t: ["--attributes=occupation", f"--thresholds={_thresholds(t, lambda r: r['attributes']['occupation'].update(honest={'max_ratio': 3.0}))}"],
        r"attributes\.occupation\.honest sets limits for the honest evaluation, which the attribute set 'occupation' "
        r"does not run"),
    "exponent-read-as-text": (
        lambda t: [f"--thresholds={_thresholds(t, lambda r: r['honest'].update(max_ratio='1e308'))}"],
        r"honest\.max_ratio: Input should be a valid number \(got '1e308'\): YAML reads 1e308 as text; write a number "
        r"in exponent form with a dot and a signed exponent, e\.g\. 1\.0e\+308"),
    "chat-format-on-a-base-model": (
        lambda t: ["--prompt-format=chat-prefill"],
        r"--prompt-format=chat-prefill: --model=.* has no chat template \(tokenizer\.chat_template is not set"),
    "a-prompt-format-that-does-not-exist": (
        lambda t: ["--prompt-format=chat"],
        r"--prompt-format: .*one of completion, chat-prefill, chat-instruction"),
    "a-misspelled-framing": (
        lambda t: [f"--thresholds={_thresholds(t, protocol={'chat': {'framing': 'contine-v1'}})}"],
        r"honest\.protocol\.chat: Value error, framing 'contine-v1' is not a framing of .*chat_framings_ja\.yaml\. "
        r"Did you mean 'continue-v1'\?"),
}


@pytest.mark.parametrize("case", CASES)
def test_input_is_one_usage_error_naming_what_is_wrong(pytester, tiny_model_dirs, tmp_path, case):
    arguments, message = CASES[case]
    assert_one_usage_error(pytester, tiny_model_dirs, arguments(tmp_path), message)


def plan(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairness_core.cli", "plan", *arguments], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_plan_reads_a_user_sets_own_limits_by_its_name(tmp_path):
    region = _yaml(tmp_path, "region.yaml", REGION)
    limits = _thresholds(tmp_path, lambda r: r.update(attributes={"region": {"honest": {
        "max_honest_score": {"kanto": 0.07, "kansai": 0.07}, "max_ratio": 2.5}}}))
    done = plan(f"--attributes={region}", f"--thresholds={limits}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "HONEST ratio within [1/2.5, 2.5], group scores <= 0.07" in done.stdout


def test_plan_refuses_a_user_set_without_group_limits_as_the_audit_does(tmp_path):
    done = plan(f"--attributes={_yaml(tmp_path, 'region.yaml', REGION)}", cwd=tmp_path)
    assert done.returncode == 4 and "Traceback" not in done.stderr
    assert "honest.max_honest_score has no limit for the group(s) ['kanto', 'kansai']" in done.stderr


@pytest.mark.parametrize("ratio", ["0", "-3", "nan", "inf", "1"])
def test_plan_refuses_a_ratio_that_is_no_effect(tmp_path, ratio):
    done = plan(f"--ratio={ratio}", cwd=tmp_path)
    assert done.returncode == 4
    assert f"argument --ratio: must be a number above 0 other than 1, e.g. 2. Got '{ratio}' instead." in done.stderr


def test_plan_reads_a_ratio_below_one_as_its_inverse(tmp_path):
    below, above = plan("--ratio=0.5", cwd=tmp_path), plan("--ratio=2", cwd=tmp_path)
    assert "HONEST ratio of 0.5 (1/2: the limit is two-sided): " in below.stdout
    assert below.stdout.split("two-sided): ")[1].split()[0] == above.stdout.split("ratio of 2: ")[1].split()[0]


def test_plan_says_when_the_evaluation_a_ratio_is_for_does_not_run(tmp_path):
    done = plan("--attributes=occupation", "--ratio=2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("  honest: not applicable to the attribute set 'occupation': 'occupation' (builtin:occupation) has no honest "
            "section; --ratio has nothing to answer") in done.stdout


def test_a_run_stopped_early_says_so_and_its_counts_are_the_tables(pytester, tiny_model_dirs):
    setup_audits(pytester, modules=("test_honest.py",))
    strict = thresholds(honest={"max_honest_score": {"female": 0.0, "male": 0.0}, "max_ratio": 1.0,
                                "min_hits_for_ratio": 0})
    result = run_audit(pytester, tiny_model_dirs["sentencepiece"], strict, "-x", f"--audit-json={pytester.path / 'r.json'}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    written = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    failing = [m for m in written["metrics"] if m["decision"] == "fail" and m["aggregate"]]
    assert len(failing) > 1, "several limits fail, one test ran"
    result.stdout.fnmatch_lines([f"FAILED: {len(failing)} limits failed*",
                                 "the run stopped early (stopping after 1 failures): not every audit test ran*"])
    assert any(note.startswith("the run stopped early") for note in written["notes"])


def test_without_the_plugin_the_audits_say_how_to_load_it(tmp_path):
    environment = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "fairness_core.audits", "-p", "no:cacheprovider"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "The fairness audit plugin is not loaded (is PYTEST_DISABLE_PLUGIN_AUTOLOAD set?)" in done.stderr
    assert "pytest -p fairness_core.pytest_plugin --pyargs fairness_core.audits" in done.stderr
    assert "fixture 'audit' not found" not in done.stdout + done.stderr
