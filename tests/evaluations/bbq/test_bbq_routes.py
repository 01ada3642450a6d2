"""Issue 40's BBQ cases: answers the audit cannot read, the scorer each documented route gets (``--bbq-scorer=auto``),
what a completions file records, and where a route cannot judge BBQ, the reason instead of a run-ending error.

Each test ends as one usage error naming what to do, or as the behaviour asked for; the servers are scripted servers
on 127.0.0.1 (``http_support``), the files synthetic rows in BBQ's format (``bbq_support``), never JBBQ.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bbq_support import synthetic_rows, write_jsonl
from http_support import ScriptedServer, ServerStartError, transformers_serve

from fairness_core.backends.base import BackendSettings, Completion, ContextWindowError, ModelReference
from fairness_core.backends.hf.engine import HFBackend
from fairness_core.backends.hf.model_checks import check_context
from fairness_core.cli import write_completions
from fairness_core.demo.models import tiny_gpt2
from fairness_core.evaluations.bbq.scorer_choice import ScorerChoiceError, choose_scorer
from fairness_core.evaluations.bbq.scoring import by_choice
from fairness_core.run.demo_names import resolve_demo
from fairness_core.run.setup import AuditSetup, AuditSetupError

REPO = Path(__file__).resolve().parents[3]
THRESHOLDS = REPO / "thresholds.yaml"
BIAS = ("bias_score_ambig", "bias_score_disambig", "bias_score")


@pytest.fixture
def bbq_file(tmp_path):
    return write_jsonl(tmp_path / "jbbq-like.jsonl", synthetic_rows())


def _audit(pytester, *options: str, answer=None, echo_status: int = 200, chat: bool = False):
    """``pytest --pyargs fairness_core.audits -k bbq`` against a scripted server that answers ``answer(prompt)``."""
    shutil.copy(THRESHOLDS, pytester.path / "thresholds.yaml")
    with ScriptedServer() as server:
        server.echo_status = echo_status
        server.answer = lambda body: answer(body["messages"][-1]["content"] if chat else body["prompt"])
        result = pytester.runpytest_inprocess(
            "--pyargs", "fairness_core.audits", "-k", "bbq", "--no-cache", "--audit-json=audit.json", "-rs",
            "-p", "no:cacheprovider", "--backend=openai", f"--base-url={server.base_url}", "--model=scripted-model",
            "--max-retries=0", f"--journal-dir={pytester.path / 'journals'}",
            *(["--prompt-format=chat-instruction"] if chat else []), *options)
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text, text[-3000:]
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8")) \
        if (pytester.path / "audit.json").exists() else None
    return result, text, written, server


def _metric(written, metric):
    return next(m for m in written["metrics"] if m["id"] == f"bbq.{metric}")


# --- case 4: answers the audit cannot read --------------------------------------------------------------------


@pytest.mark.parametrize("unreadable", ["1と2", "unknown", "3"])
def test_unreadable_answers_fail_the_format_error_limit_and_leave_the_bias_scores_not_judged(pytester, bbq_file,
                                                                                             unreadable):
    result, text, written, _ = _audit(pytester, f"--bbq-file={bbq_file}", "--bbq-subset=nejumi",
                                      "--bbq-scorer=generated-choice", answer=lambda prompt: unreadable)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert "VIOLATION bbq.format_error_rate" in text and "observed 1.000" in text
    for metric in BIAS:
        found = _metric(written, metric)
        assert found["value"] is None and found["interval"] is None, found
        assert found["skip_reason"].startswith("not judged:"), found
    assert "named a person, each was unknown or unreadable (60 format errors among the 60 items" in \
        _metric(written, "bias_score_disambig")["skip_reason"]
    outcomes = result.parseoutcomes()  # per category and pooled: format_error_rate fails, the three scores skip
    assert outcomes["failed"] == 4 and outcomes["skipped"] == 12, outcomes


def test_a_full_width_index_is_read_as_that_index(pytester, bbq_file):
    result, text, written, _ = _audit(pytester, f"--bbq-file={bbq_file}", "--bbq-subset=nejumi",
                                      "--bbq-scorer=generated-choice", answer=lambda prompt: "答え：２")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    assert _metric(written, "format_error_rate")["value"] == 0.0
    assert {r["detail"]["answer"] for r in written["completions"]["bbq"]} == {2}


# --- section 2: the documented routes, each with --bbq-scorer=auto ----------------------------------------------


def test_a_chat_server_gets_generated_choice_without_the_option(pytester, bbq_file):
    """``--prompt-format=chat-instruction --bbq-file=F`` against /v1/chat/completions: judged, rc 0 or 1."""
    result, text, written, server = _audit(pytester, f"--bbq-file={bbq_file}", "--bbq-subset=nejumi",
                                           answer=lambda prompt: "2", chat=True)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    assert set(server.paths) == {"/v1/chat/completions"}
    assert written["provenance"]["evaluations"]["bbq"]["scorer"] == "generated-choice"
    assert "auto: --prompt-format=chat-instruction" in written["provenance"]["evaluations"]["bbq"]["scorer_choice"]
    assert _metric(written, "bias_score_ambig")["value"] is not None


def test_a_server_that_cannot_score_falls_back_to_generated_choice_and_says_why(pytester):
    """transformers serve answers echo with logprobs with HTTP 500: the run answers by generated choice, rc 0 or 1."""
    result, text, written, server = _audit(pytester, answer=lambda prompt: "2", echo_status=500)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    bbq = written["provenance"]["evaluations"]["bbq"]
    assert bbq["scorer"] == "generated-choice"
    assert bbq["scorer_choice"].startswith("--bbq-scorer=auto took generated choice: the backend could not score")
    assert "HTTP 500" in bbq["scorer_choice"]
    assert "bbq: answered by the generated-choice scorer: --bbq-scorer=auto took generated choice" in text
    assert any(body.get("echo") for body in server.bodies) and any(not body.get("echo") for body in server.bodies)
    assert _metric(written, "bias_score_ambig")["value"] is not None


def test_a_server_that_cannot_score_is_still_one_usage_error_when_the_likelihood_scorer_was_asked_for(pytester):
    result, text, _, _ = _audit(pytester, "--bbq-scorer=likelihood", answer=lambda prompt: "2", echo_status=500)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-3000:]


@pytest.mark.slow
def test_the_transformers_serve_route_ends_with_bbq_judged_or_not_judged_and_why(pytester, tmp_path):
    """The issue's route: ``--backend=openai --base-url=<transformers serve>/v1 --model=<folder of demo:biased>``.
    The server answers echo with logprobs with HTTP 500 and, past the demo model's 64 positions, the questions too:
    rc 0, the BBQ tests skipped with both reasons (about 30 s of BBQ, plus the server's start)."""
    model = str(resolve_demo("demo:biased"))
    shutil.copy(THRESHOLDS, pytester.path / "thresholds.yaml")
    try:
        with transformers_serve(model, tmp_path / "serve.log") as base_url:
            result = pytester.runpytest_inprocess(
                "--pyargs", "fairness_core.audits", "-k", "bbq", "--backend=openai", f"--base-url={base_url}",
                f"--model={model}", "--sentiment=lexicon", "--no-cache", "--audit-json=audit.json", "-rs",
                "-p", "no:cacheprovider", f"--journal-dir={tmp_path / 'journals'}")
    except ServerStartError as err:
        pytest.fail(str(err))
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, text[-3000:]
    result.assert_outcomes(skipped=5)
    assert "bbq: answered by the generated-choice scorer: --bbq-scorer=auto took generated choice: the backend " \
           "could not score the options (failed after 6 attempts" in text
    assert "and the questions failed too (failed after 6 attempts" in text and "Traceback" not in text


class _Indices:
    """A batch engine elsewhere: answers every prompt with 1."""

    description = {"backend": "batch"}
    fingerprint = {"backend": "batch", "model": "scripted-model"}

    def generate(self, requests, protocol):
        return [Completion("1", 1, "stop") for _ in requests]


def _generate(path: Path, values: dict) -> dict:
    setup = AuditSetup.load(THRESHOLDS, "gender", values)
    write_completions(_Indices(), BackendSettings(ModelReference("scripted-model")), setup.prompt_sets(), path)
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])["manifest"]


def _audit_files(pytester, path: Path, *options: str):
    shutil.copy(THRESHOLDS, pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", "-k", "bbq", "--backend=jsonl",
                                          f"--completions={path}", "--no-cache", "--audit-json=audit.json", "-rs",
                                          "-p", "no:cacheprovider", *options)
    return result, result.stdout.str() + result.stderr.str()


def test_a_file_generated_under_the_default_scorer_is_audited_with_bbq_not_judged_and_why(pytester):
    """``generate`` (the likelihood scorer on a backend that scores: no BBQ text to write), then the audit of its
    file: rc 0, every BBQ test skipped with the reason, and the manifest names the scorer."""
    manifest = _generate(pytester.path / "demo.jsonl", {"backend": "hf"})
    assert manifest["evaluations"]["bbq"]["prompts"] == 0
    assert manifest["evaluations"]["bbq"]["provenance"]["scorer"] == "likelihood"
    result, text = _audit_files(pytester, pytester.path / "demo.jsonl")
    assert result.ret == pytest.ExitCode.OK, text[-3000:]
    result.assert_outcomes(skipped=5)
    assert "hold no BBQ answers (they were generated with --bbq-scorer=likelihood" in text
    assert "generate them with --bbq-scorer=generated-choice" in text
    for given in ("--bbq-scorer=generated-choice", "--bbq-scorer=likelihood"):
        named, named_text = _audit_files(pytester, pytester.path / "demo.jsonl", given)
        assert named.ret == pytest.ExitCode.USAGE_ERROR, named_text[-2000:]


def test_a_file_generated_with_a_bbq_file_and_audited_without_it_names_the_bbq_file(pytester, bbq_file):
    values = {"bbq_file": str(bbq_file), "bbq_subset": "nejumi", "bbq_scorer": "generated-choice"}
    manifest = _generate(pytester.path / "answers.jsonl", values)
    assert manifest["evaluations"]["bbq"]["provenance"]["questions"]["data"].startswith(
        "--bbq-file jbbq-like.jsonl (sha256 ")
    result, text = _audit_files(pytester, pytester.path / "answers.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-2000:]
    assert "the files answer the questions of --bbq-file jbbq-like.jsonl" in text
    assert "this audit asks those of the project's reviewed templates for gender" in text
    assert "other templates or identity terms" not in text
    judged, judged_text = _audit_files(pytester, pytester.path / "answers.jsonl", f"--bbq-file={bbq_file}",
                                       "--bbq-subset=nejumi")
    assert judged.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), judged_text[-3000:]


# --- case 11: generated choice under chat-prefill -------------------------------------------------------------


def test_chat_prefill_would_prefill_the_whole_question_so_bbq_is_not_judged_or_the_named_scorer_is_refused():
    evaluation = AuditSetup.load(THRESHOLDS, "gender", {"prompt_format": "chat-prefill"}).evaluations["bbq"]
    assert evaluation.prompts == () and evaluation.cannot_run(None).startswith("--prompt-format=chat-")
    answers = evaluation.run(backend=None)
    assert answers.answers == () and "chat-prefill prefills the assistant's turn" in answers.skip_reason
    assert "--prompt-format=chat-instruction" in answers.skip_reason
    with pytest.raises(AuditSetupError, match=r"--bbq-scorer=generated-choice: --prompt-format=chat-prefill"):
        AuditSetup.load(THRESHOLDS, "gender", {"prompt_format": "chat-prefill", "bbq_scorer": "generated-choice"})
    with pytest.raises(ScorerChoiceError, match=r"--bbq-scorer=likelihood scores each option as plain text.*"
                                                r"--prompt-format=chat-instruction"):
        choose_scorer("likelihood", prompt_format="chat-instruction", backend="openai")


# --- case 12: the messages ------------------------------------------------------------------------------------


def test_a_question_longer_than_the_model_is_not_judged_and_says_so(tiny_models):
    """A 256-position model and Nejumi's prompt (hundreds of tokens): BBQ's reason names the window; it is no
    usage error that would stop HONEST and sentiment, and it never says 'at most 0'."""
    evaluation = AuditSetup.load(THRESHOLDS, "gender", {"bbq_scorer": "generated-choice"}).evaluations["bbq"]
    _, tokenizer = tiny_models["sentencepiece"]
    short = HFBackend(tiny_gpt2(tokenizer, n_positions=256), tokenizer)
    items = evaluation.questions.items[:4]
    with pytest.raises(ContextWindowError) as raised:
        by_choice(short, items, evaluation.choice_prompts, evaluation.protocol)
    assert "has 256 positions and the longest prompt alone takes" in str(raised.value)
    assert "at most 0" not in str(raised.value)
    with pytest.raises(Exception, match=r"Lower max_new_tokens .* to at most 6\."):
        check_context(250, 10, 256, "m")


def test_the_header_counts_the_shots_the_prompts_show(tmp_path):
    """A category whose split has no train items gets no few-shot example: the header says so."""
    rows = [row for row in synthetic_rows() if int(row["question_index"]) <= 4]  # 4 templates: no train template
    path = write_jsonl(tmp_path / "small.jsonl", rows)
    evaluation = AuditSetup.load(THRESHOLDS, "gender", {"bbq_file": str(path), "bbq_scorer": "generated-choice"}
                                 ).evaluations["bbq"]
    assert {c: len(s) for c, s in evaluation.questions.shots.items()} == \
        {"Age": 0, "Gender_identity": 0, "Sexual_orientation": 2}  # Nejumi gives Sexual_orientation 3 train templates
    assert "Nejumi's prompt, shots Age 0, Gender_identity 0, Sexual_orientation 2," in evaluation.describe()
