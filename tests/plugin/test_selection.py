"""Only what the selected audits need is loaded and generated; ``--co`` loads nothing; xdist keeps the outputs.

Runs the real audit modules through ``pytester`` on the session's tiny
SentencePiece GPT-2 with the shrunk protocol of ``audit_support``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_support import output, run_audit, setup_audits, thresholds, write_thresholds

from fairness_core.api.discovery import discover

LAX = thresholds(lax=True)


def _cache_entries(folder: Path) -> int:
    return sum(1 for _ in folder.glob("*/*.json"))


@pytest.fixture
def audits(pytester):
    return setup_audits(pytester)


def test_selecting_one_evaluation_needs_no_sentiment_classifier(audits, tiny_model_dirs):
    """Offline, the default classifier cannot be loaded; -k honest must not ask for it."""
    path = write_thresholds(audits, LAX)
    result = audits.runpytest_inprocess(
        "-p", "no:cacheprovider", "--device", "cpu", "--no-cache", "--model", str(tiny_model_dirs["sentencepiece"]),
        "--thresholds", str(path), "--lexicon", str(audits.path / "words.txt"), "-k", "honest")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output(result)
    assert "sentiment classifier" not in output(result)
    assert result.parseoutcomes()["passed"] > 0
    result.stdout.fnmatch_lines(["*sentiment: not selected*"])


def test_selecting_sentiment_generates_nothing_else(audits, tiny_model_dirs, tmp_path):
    """A bad --lexicon is not an error when HONEST is not selected, and only the sentiment prompts are generated."""
    cache = tmp_path / "cache"
    result = run_audit(audits, tiny_model_dirs["sentencepiece"], LAX, "-k", "group_fairness",
                       f"--cache-dir={cache}", f"--audit-json={tmp_path / 'r.json'}", cache=True)
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert _cache_entries(cache) == 1, "one generation call: the sentiment evaluation's"
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert set(written["completions"]) == {"sentiment"}
    assert written["provenance"]["not_run"] == {name: "not selected" for name in discover() if name != "sentiment"}

    missing = tmp_path / "no-such-lexicon.tsv"
    again = audits.runpytest_inprocess(
        "-p", "no:cacheprovider", "--device", "cpu", "--sentiment", "lexicon", f"--cache-dir={cache}",
        "--model", str(tiny_model_dirs["sentencepiece"]), "--thresholds", str(write_thresholds(audits, LAX)),
        f"--lexicon={missing}", "-k", "group_fairness")
    assert again.ret == pytest.ExitCode.OK, output(again)


def test_collect_only_loads_no_model_and_prints_no_audit_section(audits, tiny_model_dirs, tmp_path):
    """A model folder whose weights cannot be read still collects: --co never loads the model."""
    broken = tmp_path / "broken-model"
    broken.mkdir()
    for item in tiny_model_dirs["sentencepiece"].iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not weights")
    result = run_audit(audits, broken, LAX, "--co", "-q")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert "fairness audit" not in result.stdout.str()
    listed = result.stdout.str()
    assert "test_sentiment.py::test_template[gender-female-name-01]" in listed
    assert "test_honest.py::test_template[gender-female-occupation-01]" in listed
    # The same folder is a usage error once the audits are to run.
    ran = run_audit(audits, broken, LAX, "-k", "ratio")
    assert ran.ret == pytest.ExitCode.USAGE_ERROR, output(ran)


def test_results_of_a_partial_run_as_baseline_of_a_full_run(audits, tiny_model_dirs, tmp_path):
    """The JSON of a -k honest run has only HONEST metrics; a full run gated on it skips sentiment, saying why."""
    model = tiny_model_dirs["sentencepiece"]
    first_json = tmp_path / "honest-only.json"
    first = run_audit(audits, model, LAX, "-k", "honest", f"--audit-json={first_json}")
    assert first.ret == pytest.ExitCode.OK, output(first)
    written = json.loads(first_json.read_text(encoding="utf-8"))
    assert {m["evaluation"] for m in written["metrics"]} == {"honest"}
    assert written["provenance"]["not_run"] == {name: "not selected" for name in discover() if name != "honest"}

    full = run_audit(audits, model, LAX, f"--baseline={first_json}")
    assert full.ret == pytest.ExitCode.OK, output(full)
    skipped = [r for r in full.reprec.getreports("pytest_runtest_logreport") if r.skipped]
    reasons = [str(r.longrepr) for r in skipped if "test_no_regression[sentiment." in r.nodeid]
    assert reasons and all("has no value in the baseline" in reason for reason in reasons), reasons


@pytest.mark.slow
def test_xdist_writes_the_same_results_as_a_single_process(audits, tiny_model_dirs, tmp_path):
    """Under -n 2 the controller writes the JSON and the summary from a worker's results; generation runs once."""
    model = tiny_model_dirs["sentencepiece"]
    single, parallel, cache = tmp_path / "single.json", tmp_path / "parallel.json", tmp_path / "cache"
    first = run_audit(audits, model, LAX, f"--audit-json={single}")
    assert first.ret == pytest.ExitCode.OK, output(first)
    second = audits.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--device", "cpu", "--sentiment", "lexicon", f"--cache-dir={cache}",
        "--model", str(model), "--thresholds", str(write_thresholds(audits, LAX)),
        "--lexicon", str(audits.path / "words.txt"), f"--audit-json={parallel}")
    assert second.ret == pytest.ExitCode.OK, output(second)
    second.stdout.fnmatch_lines(["*= fairness audit =*", "PASSED: no audit violations"])
    assert _cache_entries(cache) == 2, "each evaluation generated once across both workers"
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (single, parallel))
    assert a["metrics"] == b["metrics"] and a["completions"] == b["completions"]


def test_last_failed_reruns_only_the_failed_audits(audits, tiny_model_dirs):
    """pytest's own --lf works on the audits: the cache provider is not disabled by the project."""
    strict = thresholds(lax=True, honest={"max_honest_score": {"female": 1.0, "male": 0.0}})
    path = write_thresholds(audits, strict)
    args = ["--device", "cpu", "--sentiment", "lexicon", "--model", str(tiny_model_dirs["sentencepiece"]),
            "--thresholds", str(path), "--lexicon", str(audits.path / "words.txt")]
    first = audits.runpytest_inprocess(*args)
    assert first.ret == pytest.ExitCode.TESTS_FAILED, output(first)
    assert first.parseoutcomes()["failed"] == 1
    again = audits.runpytest_inprocess(*args, "--lf")
    again.assert_outcomes(failed=1)
    assert "run-last-failure: rerun previous 1 failure" in again.stdout.str()
