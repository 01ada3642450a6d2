"""End to end: a BBQ-format file asked of a model that answers by index, through a server and through a completions
file; the numbers in --audit-json are the leaderboard's formulas on those answers; backends that cannot score are one
usage error."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from bbq_support import nejumi_scores, nejumi_test_items, synthetic_rows, write_jsonl
from http_support import ScriptedServer

from fairness_core.backends.base import BackendSettings, Completion, ModelReference
from fairness_core.cli import write_completions
from fairness_core.run.setup import AuditSetup

REPO = Path(__file__).resolve().parents[3]
#: What the scripted model answers, by a hash of the prompt: right and wrong indices, forms Nejumi counts as format
#: errors and the package reads as an index, and a format error for both.
OUTPUTS = ("0", "1", "2", "0", "1", "2", " 2\n\nです", "1です", "'0'", "回答: 1", "1と2")
#: The index each of the package's wider forms answers, as Nejumi would read it written plainly.
WIDENED = {"1です": "1", "回答: 1": "1"}
ROUTES = ("openai", "jsonl")
#: The chat route too: the question as the user turn of /v1/chat/completions, as Nejumi asks chat models.
ANSWER_ROUTES = (*ROUTES, "openai-chat")
FOUR = ("accuracy_ambig", "accuracy_disambig", "bias_score_ambig", "bias_score_disambig")


def index_answer(prompt) -> str:
    return OUTPUTS[int(hashlib.sha256(str(prompt).encode()).hexdigest(), 16) % len(OUTPUTS)]


class IndexModel:
    """A batch engine elsewhere that wrote its answers to a file: ``generate`` answers by :func:`index_answer`."""

    description = {"backend": "batch"}
    fingerprint = {"backend": "batch", "model": "scripted-model"}

    def generate(self, requests, protocol):
        return [Completion(index_answer(r.prompt), 1, "stop") for r in requests]


@pytest.fixture
def bbq_file(tmp_path):
    rows = synthetic_rows()
    return rows, write_jsonl(tmp_path / "jbbq-like.jsonl", rows)


def _run(pytester, route: str, path: Path, *extra: str, scorer: str = "generated-choice"):
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    common = ["--pyargs", "fairness_core.audits", "-k", "bbq", f"--bbq-file={path}", "--bbq-subset=nejumi",
              f"--bbq-scorer={scorer}", "--no-cache", "--audit-json=audit.json", "-p", "no:cacheprovider", *extra]
    if route.startswith("openai"):
        chat = ["--prompt-format=chat-instruction"] if route == "openai-chat" else []
        with ScriptedServer() as server:
            server.answer = lambda body: index_answer(body["messages"][-1]["content"] if chat else body["prompt"])
            result = pytester.runpytest_inprocess(*common, "--backend=openai", f"--base-url={server.base_url}",
                                                  "--model=scripted-model", "--max-retries=0",
                                                  f"--journal-dir={pytester.path / 'journals'}", *chat)
        if chat:
            assert set(server.paths) == {"/v1/chat/completions"}
            assert all(body["messages"][0]["role"] == "user" and len(body["messages"]) == 1 for body in server.bodies)
        return result
    values = {"bbq_file": str(path), "bbq_subset": "nejumi", "bbq_scorer": "generated-choice"}
    setup = AuditSetup.load(REPO / "thresholds.yaml", "gender", values)
    settings = BackendSettings(ModelReference("scripted-model"))
    write_completions(IndexModel(), settings, [setup.evaluations["bbq"].prompt_set()], pytester.path / "answers.jsonl")
    return pytester.runpytest_inprocess(*common, "--backend=jsonl", f"--completions={pytester.path / 'answers.jsonl'}")


@pytest.mark.parametrize("route", ANSWER_ROUTES)
def test_the_numbers_are_the_leaderboards_formulas_on_the_files_answers(pytester, bbq_file, route):
    rows, path = bbq_file
    result = _run(pytester, route, path)
    text = result.stdout.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    assert "Traceback" not in text
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    records = written["completions"]["bbq"]
    scored = nejumi_test_items(rows)
    assert [(r["group"], int(r["term"])) for r in records] == [(row["category"], row["example_id"]) for row in scored]
    for record, row in zip(records, scored):
        shown = f"{row['context']} {row['question']}\n選択肢: 0.{row['ans0']}, 1.{row['ans1']}, 2.{row['ans2']}"
        assert record["prompt"].endswith(f"### 入力:\n{shown}\n\n### 応答:\n"), record["prompt"][-300:]
        assert record["completion"] == index_answer(record["prompt"])
    expected = nejumi_scores(scored, [WIDENED.get(r["completion"], r["completion"]) for r in records])
    metrics = {m["id"]: m for m in written["metrics"]}
    for metric in (*FOUR, "accuracy_gap", "bias_score"):
        assert metrics[f"bbq.{metric}"]["value"] == pytest.approx(expected[metric]), metric
        low, high = metrics[f"bbq.{metric}"]["interval"]
        assert low <= high
    assert {m["category"] for m in written["metrics"] if m["category"]} == {"Age", "Gender_identity",
                                                                           "Sexual_orientation"}
    assert written["provenance"]["evaluations"]["bbq"]["questions"]["source"].startswith(f"--bbq-file {path}")
    assert re.search(r"bbq: 60 questions \(Age, Gender_identity, Sexual_orientation\), generated-choice scorer", text)
    assert "20 selected" in text  # five tests for each of the three categories and for all of them


@pytest.mark.parametrize("route", ROUTES)
def test_the_likelihood_scorer_on_a_backend_that_cannot_score_is_one_usage_error(pytester, bbq_file, route):
    _, path = bbq_file
    result = _run(pytester, route, path, scorer="likelihood")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-2000:]
    assert text.count("--bbq-scorer=likelihood needs a backend that scores continuations") == 1
    assert "Pass --bbq-scorer=generated-choice" in text and "Traceback" not in text


def test_a_malformed_row_ends_the_run_naming_its_line(pytester, bbq_file):
    rows, _ = bbq_file
    rows[4]["label"] = 7
    path = write_jsonl(pytester.path / "broken.jsonl", rows)
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", "-k", "bbq", "--model=demo",
                                          f"--bbq-file={path}", "--no-cache", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{path}:5: label must be 0, 1 or 2, not 7*"])


def test_questions_longer_than_the_models_context_window_leave_bbq_not_judged_and_the_report_is_written(pytester):
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", "-k", "bbq", "--model=demo",
                                          "--no-cache", "--audit-json=audit.json", "-p", "no:cacheprovider", "-rs")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert "skipped" in result.parseoutcomes() and "failed" not in result.parseoutcomes()
    result.stdout.fnmatch_lines(["*bbq*not judged*its prompts do not fit the model's context window: --model=demo has a "
                                 "context window of 64 tokens*"])
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    assert "bbq" in written["provenance"]["not_judged"] and not written["completions"].get("bbq")
    assert not [h for h in written["health"] if h["evaluation"] == "bbq"]
