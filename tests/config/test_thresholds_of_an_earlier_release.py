"""A thresholds file of the previous release (no ``bbq`` section) still runs the whole audit, ``plan`` and ``generate``.

Issue 39: installing an evaluation must never break a user's file.  The file
here is what a user kept from before BBQ existed: the shipped file without its
``bbq`` section.  BBQ then runs with the package's limits, and every place that
shows the run's setup says so; the user's own sections still decide the verdict.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SHIPPED = Path(__file__).resolve().parents[2] / "fairness_core" / "data" / "thresholds.yaml"
NOTE = "bbq: the package's limits; your thresholds file has no bbq section"


def previous_release(folder: Path, *, protocol: dict | None = None) -> Path:
    """``old.yaml``: the shipped file minus ``bbq`` (its HONEST and sentiment protocols updated by ``protocol``)."""
    raw = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))
    del raw["bbq"]
    for section in ("honest", "sentiment"):
        raw[section]["protocol"] = {**raw[section]["protocol"], **(protocol or {})}
    path = folder / "old.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairness_core.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def audit(pytester: pytest.Pytester, model: str) -> tuple[str, dict, int]:
    """The audit of ``model`` on ``old.yaml``: its output, its ``--audit-json`` and its exit code."""
    previous_release(pytester.path)
    result = pytester.runpytest_subprocess("--pyargs", "fairness_core.audits", f"--model={model}",
                                           "--thresholds=old.yaml", "--no-cache", "--audit-json=audit.json",
                                           "--html=report.html", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "Traceback" not in text and "Field required" not in text, text[-3000:]
    return text, json.loads((pytester.path / "audit.json").read_text(encoding="utf-8")), result.ret


@pytest.mark.slow
def test_the_biased_demo_fails_on_the_users_limits(pytester: pytest.Pytester):
    text, written, code = audit(pytester, "demo:biased")
    assert code == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    # The demo's 64-token window leaves BBQ not judged (its questions are longer): no BBQ limit applies, so no
    # origin of BBQ's limits is named.
    assert re.search(r"^  bbq: not judged: its prompts do not fit the model's context window", text, flags=re.M)
    assert "honest_ratio" in text and "AUDIT VIOLATION: mean_gap" in text
    assert NOTE not in text and "honest: the package's" not in text and "sentiment: the package's" not in text
    assert written["provenance"]["limits"] == {"honest": "file", "sentiment": "file"}
    assert "bbq" in written["provenance"]["not_judged"]
    failed = {m["id"] for m in written["metrics"] if m["aggregate"] and m["decision"] == "fail"}
    assert {"honest.honest_ratio", "honest.honest_score[group=female]", "sentiment.mean_gap",
            "sentiment.average_group_fairness"} <= failed
    ratio = next(m for m in written["metrics"] if m["id"] == "honest.honest_ratio")
    assert ratio["limit_upper"] == 1.6 and ratio["value"] > 3  # the user's limit; the planted ratio is about 5


@pytest.mark.slow
def test_bbq_takes_the_packages_limits_and_says_so(pytester: pytest.Pytester):
    text, written, code = audit(pytester, "demo:qa-biased")
    assert code == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert re.search(r"^  bbq: 352 questions", text, flags=re.M) and text.count(f"  {NOTE}\n") == 1, text[-3000:]
    assert "honest: the package's" not in text and "sentiment: the package's" not in text
    assert written["provenance"]["limits"] == {"bbq": "package", "honest": "file", "sentiment": "file"}
    shipped_bbq = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))["bbq"]
    assert {k: written["thresholds"]["bbq"][k] for k in shipped_bbq if k != "protocol"} == \
        {k: v for k, v in shipped_bbq.items() if k != "protocol"}
    failed = {m["id"] for m in written["metrics"] if m["aggregate"] and m["decision"] == "fail"}
    assert "bbq.bias_score_ambig[category=gender]" in failed, failed  # the package's limit finds the planted bias
    report = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "bbq limits" in report and "the package&#x27;s limits; your thresholds file has no bbq section" in report


def test_plan_reads_it_and_says_where_bbqs_limits_come_from(tmp_path: Path):
    done = cli("plan", f"--thresholds={previous_release(tmp_path)}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"thresholds {tmp_path / 'old.yaml'}", f"  {NOTE}"]
    assert any(line.startswith("  bbq: 352 questions (gender)") for line in lines)
    assert any(line.startswith("  honest: 1920 prompts x 20 samples; HONEST ratio within [1/1.6, 1.6]") for line in lines)


@pytest.mark.slow
def test_generate_reads_it_and_writes_bbqs_prompts_at_the_packages_protocol(tmp_path: Path):
    path = previous_release(tmp_path, protocol={"num_samples": 1, "max_new_tokens": 4})
    done = cli("generate", "--model=demo", "--device=cpu", "--no-cache", f"--thresholds={path}", "--output=out.jsonl",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])["manifest"]
    assert set(manifest["evaluations"]) == {"bbq", "honest", "sentiment"}
    shipped = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))["bbq"]["protocol"]
    assert {k: manifest["evaluations"]["bbq"]["protocol"][k] for k in shipped if k != "chat"} == \
        {k: v for k, v in shipped.items() if k != "chat"}
    assert manifest["evaluations"]["honest"]["protocol"]["num_samples"] == 1


def _attributes(raw: dict, name: str, limits: dict) -> None:
    raw["attributes"][name] = limits


#: Checks that come after the thresholds file is read: while a file without ``bbq`` was invalid, each ended on
#: "bbq: Field required" instead.  (edit of old.yaml, more arguments given the folder, the message written for it)
AFTER_READING = {
    "a misspelled attribute set under attributes": (
        lambda raw: _attributes(raw, "occupaton", {"honest": {"max_ratio": 9.0}}), lambda folder: [],
        "attributes.occupaton names no attribute set. Did you mean 'occupation'?"),
    "limits for an evaluation the set does not run": (
        lambda raw: raw["attributes"]["occupation"].update(honest={"max_ratio": 3.0}),
        lambda folder: ["--attributes=occupation"],
        "attributes.occupation.honest sets limits for the honest evaluation, which the attribute set 'occupation' "
        "does not run"),
    "a user's set without its group limits": (
        lambda raw: None,
        lambda folder: [f"--attributes={_region(folder)}"],
        "honest.max_honest_score has no limit for the group(s) ['kansai', 'kanto']"),
}


def _region(folder: Path) -> Path:
    path = folder / "region.yaml"
    path.write_text(yaml.safe_dump({"name": "region", "groups": {"kanto": "関東の人", "kansai": "関西の人"},
                                    "honest": {"terms": [{"kanto": "関東出身の人", "kansai": "関西出身の人"}]}},
                                   allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", AFTER_READING)
def test_a_check_after_reading_the_file_reaches_its_own_message(tmp_path: Path, case):
    edit, arguments, message = AFTER_READING[case]
    path = previous_release(tmp_path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(raw)
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    done = cli("plan", f"--thresholds={path}", *arguments(tmp_path), cwd=tmp_path)
    assert done.returncode == 4, done.stdout
    assert message in done.stderr
    assert "bbq" not in done.stderr and "Traceback" not in done.stderr
