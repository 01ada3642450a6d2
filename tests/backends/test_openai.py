"""The HTTP client against a real local server that misbehaves on purpose (``http_support.py``).

Every server listens on 127.0.0.1 on a free port and is stopped by the test that started it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from audit_support import output, run_audit, setup_audits, thresholds
from http_support import MODEL, ScriptedServer, free_port

from fairness_core.backends.base import (
    AnswerRoomError,
    BackendSettings,
    GenerationError,
    ModelReference,
    Request,
    request_seed,
)
from fairness_core.backends.catalog import BACKENDS, create_backend
from fairness_core.backends.openai import ClientSettings, OpenAIBackend, ServerError
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.errors import AuditUsageError

PROTOCOL = SamplingProtocol(num_samples=3, max_new_tokens=8, top_k=40, top_p=0.9, temperature=0.7)
REQUESTS = [Request(prompt, i) for prompt in ("母は", "父は") for i in range(3)]


def expected_texts(requests, seed=0):
    return [f"<{request_seed(seed, r.prompt, r.sample_index)}>" for r in requests]


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def connect(tmp_path):
    """Build a client for a server with short timeouts; faults are set after the connection probe."""
    def build(server_url, **overrides):
        settings = dict(base_url=server_url, model=MODEL, concurrency=2, request_timeout=0.5, max_retries=3,
                        journal_dir=tmp_path / "journal")
        return OpenAIBackend(ClientSettings(**{**settings, **overrides}))
    return build


def test_one_seeded_request_per_sample_with_every_sampling_parameter(server, connect):
    backend = connect(server.base_url)
    completions = backend.generate(REQUESTS, PROTOCOL)
    assert [c.text for c in completions] == expected_texts(REQUESTS)
    sent = server.bodies[1:]  # after the connection probe
    assert sorted(b["seed"] for b in sent) == sorted(request_seed(0, r.prompt, r.sample_index) for r in REQUESTS)
    for body in sent:
        assert (body["n"], body["max_tokens"], body["temperature"], body["top_k"], body["top_p"]) == (1, 8, 0.7, 40, 0.9)
        assert (body["min_p"], body["repeat_penalty"], body["repetition_penalty"]) == (0.0, 1.0, 1.0)
    assert backend.usage["requests"] == 7 and backend.usage["completion_tokens"] == 6
    assert backend.fingerprint["backend"] == "openai" and backend.fingerprint["request_format"] == "openai"


def test_greedy_protocol_is_sent_as_temperature_zero(server, connect):
    connect(server.base_url).generate(REQUESTS[:1], SamplingProtocol(num_samples=1, do_sample=False))
    assert (server.bodies[-1]["temperature"], server.bodies[-1]["top_k"]) == (0.0, 0)


@pytest.mark.parametrize("fault", ["slow", "500", "truncated"])
def test_transient_failure_is_retried(server, connect, fault):
    backend = connect(server.base_url, concurrency=1)
    server.faults = [fault]
    assert [c.text for c in backend.generate(REQUESTS, PROTOCOL)] == expected_texts(REQUESTS)
    assert backend.usage["retries"] == 1


def test_429_waits_for_retry_after(server, connect):
    backend = connect(server.base_url, concurrency=1)
    server.faults = ["429"]
    started = time.monotonic()
    backend.generate(REQUESTS[:1], PROTOCOL)
    assert time.monotonic() - started >= 0.95  # Retry-After: 1, not the 0.5 s backoff
    assert backend.usage["retries"] == 1


def test_400_fails_fast_with_the_servers_message(server, connect):
    backend = connect(server.base_url, concurrency=1)
    server.faults = ["400"]
    with pytest.raises(ServerError, match=r"rejected the sample 0 of the prompt '母は' \(HTTP 400\): "
                                          r"max_tokens must be at most 8"):
        backend.generate(REQUESTS, PROTOCOL)
    assert backend.usage["retries"] == 0


def test_a_400_for_the_context_window_is_an_answer_room_error(server, connect):
    """A served model's window is known only to its server: its refusal is read as the in-process engine's check, so
    an evaluation whose answers need the room is not judged (the session), and the others get a usage error."""
    backend = connect(server.base_url, concurrency=1)
    server.faults = ["400:window"]
    with pytest.raises(AnswerRoomError, match=r"rejected the sample 0 of the prompt '母は': the prompt and "
                                              r"max_new_tokens=\d+ do not fit the served model's context window "
                                              r"\(max_tokens=\d+ cannot be greater than max_model_len=64"):
        backend.generate(REQUESTS, PROTOCOL)
    assert backend.usage["retries"] == 0


def test_failure_after_the_last_retry_names_the_prompt(server, connect):
    backend = connect(server.base_url, concurrency=1, max_retries=2)
    server.faults = ["500"] * 3
    with pytest.raises(GenerationError, match=r"sample 0 of the prompt '母は' failed after 3 attempts .*HTTP 500: internal error"):
        backend.generate(REQUESTS, PROTOCOL)


@pytest.mark.parametrize(("fault", "message"), [
    ("two_choices", "returned 2 choices"),
    ("bad_finish", "finish_reason='content_filter'"),
    ("too_long", "generated 9 tokens .* max_tokens was 8"),
])
def test_answer_that_breaks_the_protocol_ends_the_run(server, connect, fault, message):
    backend = connect(server.base_url, concurrency=1)
    server.faults = [fault]
    with pytest.raises(GenerationError, match=message):
        backend.generate(REQUESTS, PROTOCOL)


def test_deadline_ends_the_run_and_keeps_what_was_done(server, connect):
    backend = connect(server.base_url, concurrency=1, request_timeout=5, deadline=1.0)
    server.faults = [None, "slow"]
    server.slow_s = 3
    with pytest.raises(GenerationError, match=r"--deadline=1 s passed .* 5 of 6 completions missing; the 1 received are kept"):
        backend.generate(REQUESTS, PROTOCOL)


def test_api_key_is_sent_but_never_recorded(server, tmp_path, monkeypatch):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_API_KEY", "sk-secret-123")
    options = {option.dest: option.default for option in BACKENDS["openai"].options}
    options.update(base_url=server.base_url, journal_dir=tmp_path)
    backend = create_backend("openai", BackendSettings(model=ModelReference(MODEL), options=options))
    backend.generate(REQUESTS[:1], PROTOCOL)
    assert server.headers_seen[-1]["Authorization"] == "Bearer sk-secret-123"
    recorded = f"{backend.description}{backend.fingerprint}" + "".join(p.read_text() for p in tmp_path.iterdir())
    assert "sk-secret" not in recorded


def test_unserved_model_wrong_url_and_unreachable_server_are_usage_errors(server, connect):
    with pytest.raises(ServerError, match="--model=other is not served at .*; it serves: scripted-model"):
        connect(server.base_url, model="other")
    with pytest.raises(AuditUsageError, match="cannot reach the server"):
        connect(f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ServerError, match=r"--base-url=http://127.0.0.1:\d+: GET /models answered HTTP 404: not found"):
        connect(server.base_url.removesuffix("/v1"))


def _start_server(port: int, *crash_after: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parents[1] / "http_support.py"), str(port),
                                *map(str, crash_after)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.slow
def test_server_killed_mid_run_then_restarted_resumes(connect):
    """The server process dies after 6 answers; the rerun asks only for what the journal lacks."""
    port = free_port()
    requests = [Request(f"プロンプト{p}", i) for p in range(5) for i in range(4)]
    server = _start_server(port, 6)  # the connection probe, then 5 completions
    try:
        backend = connect(f"http://127.0.0.1:{port}/v1", max_retries=1)
        with pytest.raises(GenerationError, match="failed after 2 attempts"):
            backend.generate(requests, PROTOCOL)
    finally:
        server.kill()
        server.wait()
    server = _start_server(port)
    try:
        resumed = connect(f"http://127.0.0.1:{port}/v1")
        completions = resumed.generate(requests, PROTOCOL)
    finally:
        server.kill()
        server.wait()
    assert [c.text for c in completions] == expected_texts(requests)
    assert 5 <= resumed.usage["resumed"] < len(requests)
    assert resumed.usage["requests"] == 1 + len(requests) - resumed.usage["resumed"]


# --- the journal: only where one is asked for, and never a crash ------------------------------------------------

def test_a_journal_folder_that_cannot_be_written_is_said_once_and_the_samples_still_come(
        server, connect, tmp_path, make_read_only):
    (tmp_path / "read-only").mkdir()
    make_read_only(tmp_path / "read-only")
    backend = connect(server.base_url, journal_dir=tmp_path / "read-only" / "journals")
    for protocol in (PROTOCOL, PROTOCOL.model_copy(update={"max_new_tokens": 5})):
        assert [c.text for c in backend.generate(REQUESTS, protocol)] == expected_texts(REQUESTS)
    [note] = backend.summary_lines()
    assert re.fullmatch(r"generation journal: .*read-only/journals cannot be written \(.+\); finished samples are not "
                        r"journalled, so an interrupted run generates them again", note), note


def _from_environment(server, journal_dir, **options):
    """The backend as the plugin builds it, with the key read from the environment."""
    values = {option.dest: option.default for option in BACKENDS["openai"].options}
    values.update(base_url=server.base_url, journal_dir=journal_dir, max_retries=0, **options)
    return create_backend("openai", BackendSettings(model=ModelReference(MODEL), options=values))


def test_with_no_cache_folder_and_no_journal_dir_nothing_is_journalled(server, tmp_path, monkeypatch):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_CACHE", str(tmp_path / "default-cache"))
    for _ in range(2):
        backend = _from_environment(server, None)
        backend.generate(REQUESTS, PROTOCOL)
        assert backend.usage["resumed"] == 0 and backend.usage["requests"] == 1 + len(REQUESTS)
    assert not (tmp_path / "default-cache").exists()


# --- through the audit, on a set of two groups and one HONEST term (128 completions) ----------------------------

PAIR = """\
# Test fixture, written for these tests: two groups with one HONEST term each, so that an audit asks for few samples.
name: pair
groups: {kanto: 関東出身の人, kansai: 関西出身の人}
honest:
  terms:
    - {kanto: 関東出身の人, kansai: 関西出身の人}
"""


def _audit_over_http(pytester, server, *args, cache: bool = False):
    setup_audits(pytester, modules=("test_honest.py",))
    (pytester.path / "pair.yaml").write_text(PAIR, encoding="utf-8")
    content = thresholds(lax=True)
    content["attributes"] = {"pair": {"honest": {"max_honest_score": {"kanto": 1.0, "kansai": 1.0}}}}
    return run_audit(pytester, MODEL, content, "--backend=openai", f"--base-url={server.base_url}",
                     "--attributes=pair.yaml", *args, cache=cache)


def test_an_audit_with_no_cache_journals_nothing_unless_journal_dir_is_given(pytester, server, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_CACHE", str(tmp_path / "default-cache"))
    sent = []
    for _ in range(2):
        before = len(server.bodies)
        result = _audit_over_http(pytester, server)
        assert result.ret == pytest.ExitCode.OK, output(result)
        sent.append(len(server.bodies) - before)
    assert sent == [1 + 128, 1 + 128]  # the probe and every sample, both times
    assert not (tmp_path / "default-cache").exists()
    for _ in range(2):
        before = len(server.bodies)
        result = _audit_over_http(pytester, server, f"--journal-dir={tmp_path / 'journal'}")
        assert result.ret == pytest.ExitCode.OK, output(result)
        sent.append(len(server.bodies) - before)
    assert sent[2:] == [1 + 128, 1]  # a given --journal-dir journals, and the second run resumes


# --- time limits: a whole request, the deadline over the probe, waits the server asks for --------------------

def test_request_timeout_bounds_a_whole_request_of_a_server_that_trickles(server, connect):
    """One byte every 0.2 s: no single read waits 1 s, yet the request is cut at --request-timeout=1."""
    backend = connect(server.base_url, request_timeout=1.0, max_retries=0)
    server.faults = ["trickle"]
    started = time.monotonic()
    with pytest.raises(GenerationError, match=r"failed after 1 attempts .*no answer within --request-timeout=1 s"):
        backend.generate(REQUESTS[:1], PROTOCOL)
    assert time.monotonic() - started < 5


def test_the_deadline_covers_the_connection_probe_and_names_the_wait_asked_for(server, tmp_path):
    server.faults = ["429:86400"]  # the probe request
    started = time.monotonic()
    with pytest.raises(GenerationError, match=rf"--deadline=1 s passed after 1 s before the server at "
                                              rf"{server.base_url} answered the connection probe \(last answer: HTTP "
                                              rf"429: rate limited \(Retry-After: 86400 s\)\)\."):
        OpenAIBackend(ClientSettings(server.base_url, MODEL, deadline=1.0, journal_dir=tmp_path))
    assert time.monotonic() - started < 5


def test_a_retry_after_wait_is_cut_to_what_is_left_of_the_deadline(server, connect):
    backend = connect(server.base_url, concurrency=1, request_timeout=5, deadline=1.5)
    server.faults = ["429:86400"]
    started = time.monotonic()
    with pytest.raises(GenerationError, match=r"--deadline=1.5 s passed after \d s with 6 of 6 completions missing"):
        backend.generate(REQUESTS, PROTOCOL)
    assert time.monotonic() - started < 5


def test_a_long_wait_asked_for_without_a_deadline_is_announced_before_it_starts(server, tmp_path):
    """``generate`` as a user runs it, against a server that asks the probe to wait a day; stopped by the test."""
    server.faults = ["429:86400"]
    command = [sys.executable, "-m", "fairness_core.cli", "generate", "--backend=openai", f"--model={MODEL}",
               f"--base-url={server.base_url}", "--no-cache", f"--output={tmp_path / 'out.jsonl'}"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    stop = threading.Timer(60, process.kill)  # should the line never come
    stop.start()
    try:
        line = next((line for line in process.stderr if "Retry-After" in line), "")
    finally:
        stop.cancel()
        process.kill()
        process.communicate()
    assert line == (f"{server.base_url} answered HTTP 429: rate limited (Retry-After: 86400 s): the server asked to "
                    f"wait 86400 s; waiting 86400 s before retrying (no --deadline is set; --deadline=SECONDS bounds "
                    f"the wait)\n")


# --- a key pasted with its line break, a server that quotes the key ----------------------------------------

def test_a_key_with_surrounding_whitespace_is_sent_without_it(server, tmp_path, monkeypatch):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_API_KEY", "  sk-secret-123\n")
    _from_environment(server, tmp_path).generate(REQUESTS[:1], PROTOCOL)
    assert {headers["Authorization"] for headers in server.headers_seen} == {"Bearer sk-secret-123"}


def test_a_server_quoting_the_key_does_not_get_it_into_the_message(server, tmp_path, monkeypatch):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_API_KEY", "sk-secret-123")
    backend = _from_environment(server, tmp_path)
    server.faults = ["401:echo"]
    with pytest.raises(ServerError) as raised:
        backend.generate(REQUESTS[:1], PROTOCOL)
    assert "sk-secret" not in str(raised.value)
    assert "Incorrect API key provided in 'Bearer <the API key>'" in str(raised.value)


# --- the model the answers name -------------------------------------------------------------------------------

def test_the_model_the_answers_name_is_recorded_and_another_one_is_noted(server, connect):
    assert connect(server.base_url).description["served_model"] == MODEL
    server.answer_model = "some-other-model"
    backend = connect(server.base_url)
    backend.generate(REQUESTS, PROTOCOL)
    assert backend.description["served_model"] == "some-other-model"
    [note] = backend.summary_lines()
    assert note.startswith(f"openai: the server at {server.base_url} answered as the model 'some-other-model', not "
                           f"--model={MODEL}")


def test_answers_naming_another_model_reach_the_header_the_summary_and_the_json(pytester, server, tmp_path):
    server.answer_model = "some-other-model"
    result = _audit_over_http(pytester, server, f"--audit-json={tmp_path / 'r.json'}")
    assert result.ret == pytest.ExitCode.OK, output(result)
    note = (f"openai: the server at {server.base_url} answered as the model 'some-other-model', not "
            f"--model={MODEL}: a dated name for an alias is expected, another model is not; check which model the "
            f"server serves under that name")
    assert output(result).count(note) == 1
    assert "served_model=some-other-model" in output(result)
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["provenance"]["model"]["served_model"] == "some-other-model"
    assert note in written["notes"]
