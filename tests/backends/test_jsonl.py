"""Generate here, audit from JSONL: the files give back exactly the completions of the engine that wrote them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
from pathlib import Path

import pytest
from audit_support import gender_honest_prompts, gender_name_prompts
from http_support import MODEL, ScriptedServer, free_port

from fairness_core import cli
from fairness_core.api.prompts import PromptSet
from fairness_core.api.user_files import load_thresholds
from fairness_core.backends.base import BackendSettings, ModelReference
from fairness_core.backends.catalog import create_backend
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.jsonl import CompletionsFileError, CompletionsFiles, JSONLBackend, resolve_paths
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.backends.vllm import VLLMUnavailableError
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.evaluations.sentiment.templates import given_names, name_templates
from fairness_core.run.demo_names import resolve_demo
from fairness_core.run.setup import AuditSetup

REPO = Path(__file__).resolve().parents[2]
HONEST = SamplingProtocol(num_samples=3)
SENTIMENT = SamplingProtocol(num_samples=2, max_new_tokens=40)


PLANS = [
    PromptSet("honest", HONEST, gender_honest_prompts(honest_templates()[:3], identity_pairs()[:6])),
    PromptSet("sentiment", SENTIMENT, gender_name_prompts(name_templates()[:1], given_names())[::5]),
]
SETTINGS = BackendSettings(model=ModelReference("demo:biased"), seed=0)
GROUPS = ("female", "male")


@pytest.fixture(scope="module")
def hf():
    model, tokenizer = load_model(str(resolve_demo("demo:biased")), device="cpu")
    return HFBackend(model, tokenizer, seed=0, batch_size=128)


@pytest.fixture(scope="module")
def expected(hf):
    return {plan.evaluation: hf.generate(plan.requests(), plan.protocol) for plan in PLANS}


@pytest.fixture(scope="module")
def written(hf, tmp_path_factory) -> Path:
    """The completions of PLANS by the HF backend, in one file."""
    path = tmp_path_factory.mktemp("completions") / "all.jsonl"
    cli.write_completions(hf, SETTINGS, PLANS, path)
    return path


@pytest.mark.parametrize("shards", [1, 3])
def test_jsonl_gives_back_exactly_the_hf_completions(hf, expected, tmp_path, shards):
    for index in range(1, shards + 1):
        cli.write_completions(hf, SETTINGS, PLANS, tmp_path / f"part-{index}.jsonl", (index, shards))
    if shards > 1:  # every shard holds part of every evaluation, and no prompt is in two shards
        parts = [{json.loads(line)["prompt_id"] for line in p.read_text().splitlines()[1:]} for p in tmp_path.iterdir()]
        assert all(parts) and sum(map(len, parts)) == len(set().union(*parts))
    backend = JSONLBackend(CompletionsFiles(resolve_paths(str(tmp_path))), seed=0)
    for plan in PLANS:
        assert backend.generate(plan.requests(), plan.protocol) == expected[plan.evaluation]
    # through the audit's own path (requests without prompt ids, in the evaluation's order)
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    assert evaluate_honest(backend, PLANS[0].prompts, HONEST, matcher, groups=GROUPS) == \
        evaluate_honest(hf, PLANS[0].prompts, HONEST, matcher, groups=GROUPS)


def test_openai_batch_output_is_read_by_custom_id(expected, tmp_path):
    plan = PLANS[0]
    lines = [json.dumps({"id": f"batch_req_{n}", "custom_id": f"{r.prompt_id}:{r.sample_index}", "error": None,
                         "response": {"status_code": 200, "body": {"choices": [{"index": 0, "text": c.text,
                                      "finish_reason": c.finish_reason}], "usage": {"completion_tokens": c.num_tokens}}}},
                        ensure_ascii=False)
             for n, (r, c) in enumerate(zip(plan.requests(), expected["honest"], strict=True))]
    (tmp_path / "batch_output.jsonl").write_text("\n".join(lines) + "\n")
    backend = create_backend("jsonl", BackendSettings(model=ModelReference(""), options={"completions": str(tmp_path / "*.jsonl")}))
    assert backend.generate(plan.requests(), plan.protocol) == expected["honest"]
    assert "not checked" in backend.description["protocol"]


def _edited(written: Path, tmp_path: Path, edit) -> Path:
    lines = written.read_text().splitlines()
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


def _audit(path: Path, plan=PLANS[0], *, requests=None, protocol=None, seed=0):
    backend = JSONLBackend(CompletionsFiles([path]), seed=seed)
    return backend.generate(plan.requests() if requests is None else requests, protocol or plan.protocol)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda lines: lines[:5] + lines[6:], r"no line for sample 1 of honest/.* \(1 requested \(prompt, sample\)s missing\)"),
    (lambda lines: lines + lines[3:5], r"edited.jsonl:\d+: a \(prompt, sample\) that an earlier line already gave \(2 lines in all\)"),
    (lambda lines: lines[:7] + [lines[7][:30]] + lines[8:], r"edited.jsonl:8: malformed line: .* \(1 line in all\)"),
    (lambda lines: lines[:3] + [lines[3].replace('"sample_index": 2', '"sample_index": "2"')] + lines[4:],
     r"edited.jsonl:4: malformed line: 'text' must be a string and 'sample_index' a whole number"),
    (lambda lines: [lines[0].replace('"evaluations"', '"evaluation"')] + lines[1:],
     r"edited.jsonl:1: malformed line: the manifest's 'evaluations' must map each evaluation"),
    (lambda lines: lines[:2] + [re.sub(r'"seed": \d+', '"seed": 1', lines[2])] + lines[3:],
     r"edited.jsonl:3: the seed is not request_seed\(run seed 0, prompt, sample\) \(1 line in all\)"),
    (lambda lines: lines[1:], r"edited.jsonl:1: malformed line: a completion line in a file whose first line is not its manifest \(ja-fairness-audit/completions\) \(\d+ lines in all\)"),
])
def test_a_bad_file_is_one_usage_error_naming_the_first_line(written, tmp_path, edit, message):
    with pytest.raises(CompletionsFileError, match=message):
        _audit(_edited(written, tmp_path, edit))


def test_extra_samples_protocol_prompt_set_and_seed_are_checked_against_the_audit(written, tmp_path):
    beyond = _edited(written, tmp_path, lambda lines: lines + [lines[1].replace('"sample_index": 0', '"sample_index": 3')])
    with pytest.raises(CompletionsFileError, match=r"edited.jsonl:\d+: a \(prompt, sample\) that the audit does not ask for \(1 line in all\)"):
        _audit(beyond)
    with pytest.raises(CompletionsFileError, match=r"all.jsonl:1: no evaluation in the files has the audit's protocol .*'num_samples': 20"):
        _audit(written, protocol=SamplingProtocol())
    other_prompts = PromptSet("honest", HONEST, gender_honest_prompts(honest_templates()[3:4], identity_pairs()[:6]))
    with pytest.raises(CompletionsFileError, match=r"the prompt set of 'honest' in the files \(36 prompts, .*\) is not the audit's \(12 prompts"):
        _audit(written, other_prompts)
    with pytest.raises(CompletionsFileError, match="generated with run seed 0, the audit runs with --seed=1: pass --seed=0"):
        _audit(written, seed=1)


def test_a_round_of_adaptive_sampling_reads_a_prefix_of_the_fixed_protocols_samples(written, expected):
    """--sampling=adaptive asks for samples 0..s-1 of every prompt: the file's later samples are left unread."""
    plan = PLANS[0]
    first_two = [r for r in plan.requests() if r.sample_index < 2]
    wanted = [c for r, c in zip(plan.requests(), expected["honest"], strict=True) if r.sample_index < 2]
    assert _audit(written, requests=first_two) == wanted


def test_shards_of_different_runs_are_refused(hf, written, tmp_path):
    cli.write_completions(hf, BackendSettings(model=ModelReference("demo:biased"), seed=0, revision="v2"), PLANS,
                          tmp_path / "b.jsonl", (2, 3))
    with pytest.raises(CompletionsFileError, match=r"b.jsonl:1: this shard's manifest differs from the first file's in "
                                                   r"revision: the shards come from different runs"):
        resolve = resolve_paths(f"{written},{tmp_path / 'b.jsonl'}")
        CompletionsFiles(resolve)


def test_completions_that_name_nothing_are_usage_errors(tmp_path):
    with pytest.raises(CompletionsFileError, match=r"--completions=.*nothing\*.jsonl: no such file"):
        resolve_paths(str(tmp_path / "nothing*.jsonl"))
    with pytest.raises(CompletionsFileError, match="--backend=jsonl needs --completions=PATH"):
        create_backend("jsonl", BackendSettings(model=ModelReference("")))


def test_vllm_without_vllm_is_one_usage_error_saying_how_to_install():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    with pytest.raises(VLLMUnavailableError, match=r"--backend=vllm needs vLLM.*install vLLM in an environment of its own, as docs/vllm\.md shows"):
        create_backend("vllm", BackendSettings(model=ModelReference("demo:biased"), options={"tensor_parallel_size": 1}))


@pytest.fixture
def small_plan(monkeypatch):
    """The setup's prompt sets cut down to 8 HONEST prompts (the CLI is under test here, not the prompts)."""
    def prompt_sets(config):
        return [PromptSet("honest", config.honest.protocol, PLANS[0].prompts[:8])]

    monkeypatch.setattr(AuditSetup, "prompt_sets", lambda setup: prompt_sets(setup.config))
    return prompt_sets


def test_generate_with_the_hf_backend_in_3_shards_gives_back_the_in_process_completions(small_plan, hf, tmp_path):
    """The acceptance check: generate --model=demo:biased in 3 shards, then the JSONL backend = in process."""
    for index in (1, 2, 3):
        assert cli.main(["generate", "--model=demo:biased", "--device=cpu", f"--thresholds={REPO / 'thresholds.yaml'}",
                         f"--shard={index}/3", "--no-cache", f"--output={tmp_path / f'{index}.jsonl'}"]) == 0
    plan, = small_plan(load_thresholds(REPO / "thresholds.yaml"))
    from_files = JSONLBackend(CompletionsFiles(resolve_paths(str(tmp_path)))).generate(plan.requests(), plan.protocol)
    assert from_files == hf.generate(plan.requests(), plan.protocol)


def test_generate_command_writes_shards_the_jsonl_backend_reads(small_plan, tmp_path, capsys):
    """The console script end to end, with the HTTP backend against a real local server, in 2 shards."""
    with ScriptedServer() as server:
        for index in (1, 2):
            assert cli.main(["generate", f"--model={MODEL}", "--backend=openai", f"--base-url={server.base_url}",
                             f"--thresholds={REPO / 'thresholds.yaml'}", f"--shard={index}/2", "--no-cache",
                             f"--journal-dir={tmp_path / 'journal'}", f"--output={tmp_path / 'out' / f'{index}.jsonl'}"]) == 0
        direct = OpenAIBackend(ClientSettings(server.base_url, MODEL, journal_dir=tmp_path / "direct"))
        plan, = small_plan(load_thresholds(REPO / "thresholds.yaml"))
        assert JSONLBackend(CompletionsFiles(resolve_paths(str(tmp_path / "out")))).generate(
            plan.requests(), plan.protocol) == direct.generate(plan.requests(), plan.protocol)
    assert "2.jsonl: " in capsys.readouterr().out


def test_generate_command_errors(small_plan, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["generate", "--model=m", "--output=x.jsonl", "--shard=3/2"])
    assert exit_info.value.code == 4 and "must be i/n with 1 <= i <= n" in capsys.readouterr().err
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    assert cli.main(["generate", "--model=m", "--backend=openai", f"--base-url={nowhere}",
                     f"--thresholds={REPO / 'thresholds.yaml'}", f"--output={tmp_path / 'x.jsonl'}"]) == cli.USAGE_ERROR
    assert f"ja-fairness-audit: error: --base-url={nowhere}: cannot reach the server" in capsys.readouterr().err


def test_the_prompt_sets_ask_for_exactly_what_the_audit_generates():
    """generate's requests are the audit's: same prompts, samples and ids as the evaluations' own."""
    from fairness_core.backends.base import requests_for

    setup = AuditSetup.load(REPO / "thresholds.yaml", "gender")
    evaluations = setup.evaluations
    plans = setup.prompt_sets()
    assert [p.evaluation for p in plans] == list(evaluations)
    for plan in plans:
        evaluation = evaluations[plan.evaluation]
        assert plan.requests() == requests_for(evaluation.prompts, evaluation.protocol, evaluation=plan.evaluation)
        if evaluation.prompts:  # an evaluation that generates nothing (bbq's likelihood scorer) asks for nothing
            assert plan.requests()[0].prompt_id == f"{plan.evaluation}/{evaluation.prompts[0].id}"
        assert len({(r.prompt_id, r.sample_index) for r in plan.requests()}) == len(plan.requests())


@pytest.mark.slow
def test_audit_of_generated_shards_equals_the_in_process_audit(pytester, tmp_path):
    """generate --model=demo:biased in 3 shards, pytest --backend=jsonl: the same --audit-json numbers as in process."""
    from audit_support import setup_audits, thresholds, write_thresholds

    setup_audits(pytester)
    path = write_thresholds(pytester, thresholds())
    for index in (1, 2, 3):
        assert cli.main(["generate", "--model=demo:biased", "--device=cpu", f"--thresholds={path}", "--no-cache",
                         f"--shard={index}/3", f"--output={tmp_path / f'shard-{index}.jsonl'}"]) == 0
    common = ["-p", "no:cacheprovider", "--no-cache", "--sentiment=lexicon", f"--thresholds={path}", "--device=cpu"]
    in_process = pytester.runpytest_inprocess(*common, "--model=demo:biased", f"--audit-json={tmp_path / 'a.json'}")
    from_files = pytester.runpytest_inprocess(*common, "--backend=jsonl", f"--completions={tmp_path}",
                                              f"--audit-json={tmp_path / 'b.json'}")
    assert in_process.ret == from_files.ret == pytest.ExitCode.TESTS_FAILED
    a, b = (json.loads((tmp_path / name).read_text(encoding="utf-8")) for name in ("a.json", "b.json"))
    assert a["metrics"] == b["metrics"]
    assert a["completions"] == b["completions"]
    assert b["provenance"]["model"]["backend"] == "jsonl"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"], ids=["U+2028", "U+2029", "U+0085"])
def test_a_completion_holding_a_line_separator_survives_generate_the_journal_and_the_jsonl_backend(
        small_plan, tmp_path, separator):
    """str.splitlines() ends a line at U+2028, U+2029 and U+0085: they are written escaped and read as text."""
    plan, = small_plan(load_thresholds(REPO / "thresholds.yaml"))
    with ScriptedServer() as server:
        server.text_suffix = f"前{separator}後"
        runs = []
        for name in ("first", "resumed"):  # the second run takes every sample from the first run's journal
            before = len(server.bodies)
            assert cli.main(["generate", f"--model={MODEL}", "--backend=openai", f"--base-url={server.base_url}",
                             f"--thresholds={REPO / 'thresholds.yaml'}", "--no-cache",
                             f"--journal-dir={tmp_path / 'journal'}", f"--output={tmp_path / f'{name}.jsonl'}"]) == 0
            runs.append(len(server.bodies) - before)
    assert runs == [1 + len(plan.requests()), 1]
    written = (tmp_path / "first.jsonl").read_text(encoding="utf-8")
    assert separator not in written and len(written.splitlines()) == 1 + len(plan.requests())
    journal, = (tmp_path / "journal").iterdir()
    assert separator not in journal.read_text(encoding="utf-8")
    raw = tmp_path / "raw" / "written-by-another-tool.jsonl"  # the same lines with the character kept raw
    raw.parent.mkdir()
    raw.write_text(written.replace(f"\\u{ord(separator):04x}", separator), encoding="utf-8")
    assert separator in raw.read_text(encoding="utf-8")
    for path in (tmp_path / "first.jsonl", tmp_path / "resumed.jsonl", raw):
        backend = create_backend("jsonl", BackendSettings(model=ModelReference(MODEL), options={"completions": str(path)}))
        texts = [c.text for c in backend.generate(plan.requests(), plan.protocol)]
        assert all(text.endswith(f"前{separator}後") for text in texts), texts[:2]


def test_generate_writes_its_file_with_the_mode_a_plain_open_gives(small_plan, tmp_path):
    """0o666 less the umask, as open() gives, not the 0o600 of the temporary file it is written through."""
    with ScriptedServer() as server:
        for umask, mode in ((0o022, 0o644), (0o002, 0o664), (0o077, 0o600)):
            previous = os.umask(umask)
            try:
                output = tmp_path / f"umask-{umask:03o}.jsonl"
                assert cli.main(["generate", f"--model={MODEL}", "--backend=openai", f"--base-url={server.base_url}",
                                 f"--thresholds={REPO / 'thresholds.yaml'}", "--no-cache",
                                 f"--output={output}"]) == 0
            finally:
                os.umask(previous)
            assert stat.S_IMODE(output.stat().st_mode) == mode, f"umask {umask:03o}"


def test_completions_of_chat_prompts_carry_their_format_and_framing(chat_model_dir, tmp_path):
    """A file made under a chat format is read only under that format; a file from before formats reads as completion."""
    model, tokenizer = load_model(str(chat_model_dir), device="cpu")
    chat = HFBackend(model, tokenizer, seed=0, batch_size=64, prompt_format=PromptFormat("chat-prefill"))
    settings = BackendSettings(model=ModelReference("tiny-chat"), seed=0, prompt_format=PromptFormat("chat-prefill"))
    path = tmp_path / "chat.jsonl"
    cli.write_completions(chat, settings, PLANS[:1], path)
    manifest = json.loads(path.read_text().splitlines()[0])["manifest"]
    assert manifest["prompt_format"] == "chat-prefill"
    as_chat = JSONLBackend(CompletionsFiles([path]), prompt_format=PromptFormat("chat-prefill"))
    assert as_chat.generate(PLANS[0].requests(), HONEST) == chat.generate(PLANS[0].requests(), HONEST)
    with pytest.raises(CompletionsFileError, match=r"chat.jsonl:1: the completions were generated with "
                                                   r"--prompt-format=chat-prefill, the audit runs with "
                                                   r"--prompt-format=completion: pass --prompt-format=chat-prefill"):
        JSONLBackend(CompletionsFiles([path]))
    other_framing = HONEST.model_copy(update={"chat": HONEST.chat.model_copy(update={"framing": "as-is"})})
    with pytest.raises(CompletionsFileError, match="no evaluation in the files has the audit's protocol"):
        as_chat.generate(PLANS[0].requests(), other_framing)


def test_chat_completions_carry_their_reading_and_older_files_say_they_have_none(chat_model_dir, tmp_path):
    """The reading past the window goes into the file; a file whose protocol predates chat.refusal_window is read
    with refusals judged in the window, and its description says so."""
    model, tokenizer = load_model(str(chat_model_dir), device="cpu")
    chat = HFBackend(model, tokenizer, seed=0, batch_size=64, prompt_format=PromptFormat("chat-prefill"))
    settings = BackendSettings(model=ModelReference("tiny-chat"), seed=0, prompt_format=PromptFormat("chat-prefill"))
    path = tmp_path / "chat.jsonl"
    cli.write_completions(chat, settings, PLANS[:1], path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert any("reading" in json.loads(line) for line in lines[1:])
    fresh = JSONLBackend(CompletionsFiles([path]), prompt_format=PromptFormat("chat-prefill"))
    fresh.generate(PLANS[0].requests(), HONEST)
    assert "refusals" not in fresh.description
    manifest = json.loads(lines[0])
    for evaluation in manifest["manifest"]["evaluations"].values():
        evaluation["protocol"]["chat"].pop("refusal_window")
    older = tmp_path / "older.jsonl"
    older.write_text("\n".join([json.dumps(manifest, ensure_ascii=False), *lines[1:]]) + "\n", encoding="utf-8")
    backend = JSONLBackend(CompletionsFiles([older]), prompt_format=PromptFormat("chat-prefill"))
    backend.generate(PLANS[0].requests(), HONEST)
    assert backend.description["refusals"].startswith("read within the window alone for honest: the files predate "
                                                      "chat.refusal_window")


def test_a_manifest_from_before_chat_formats_is_read_with_the_defaults(written, tmp_path):
    def drop_chat(lines):
        manifest = json.loads(lines[0])
        for evaluation in manifest["manifest"]["evaluations"].values():
            evaluation["protocol"].pop("chat")
        manifest["manifest"].pop("prompt_format")
        return [json.dumps(manifest, ensure_ascii=False), *lines[1:]]
    assert _audit(_edited(written, tmp_path, drop_chat)) == _audit(written)
