"""Bad content in what a run is given (model files, user files, server answers): each is one usage error.

Rows are numbered as in the issue.  Every audit row runs the real audit modules
through ``pytester`` and checks the exit code (4), the message, and that no
traceback, INTERNALERROR or test result appears (``audit_support.assert_one_usage_error``).
The two ``generate`` rows run the command in a subprocess, as a user would.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from audit_support import REPO, assert_one_usage_error, output, setup_audits, thresholds, write_thresholds
from http_support import MODEL, ScriptedServer
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from fairness_core.backends.jsonl import manifest_line
from fairness_core.demo.models import save_model
from fairness_core.evaluations.honest.lexicon import MAX_LINE_CHARS

SERVER_ARGS = ["--backend=openai", f"--model={MODEL}", "--max-retries=0", "--request-timeout=2", "-k", "honest"]


def _yaml(tmp: Path, name: str, content, *, encoding: str = "utf-8") -> Path:
    path = tmp / name
    text = content if isinstance(content, str) else yaml.safe_dump(content, allow_unicode=True, sort_keys=False)
    path.write_bytes(text.encode(encoding))
    return path


def _thresholds(tmp: Path, edit=None, *, text: str | None = None, encoding: str = "utf-8") -> str:
    raw = thresholds(lax=True)
    if edit:
        edit(raw)
    return f"--thresholds={_yaml(tmp, 'edited.yaml', text if text is not None else raw, encoding=encoding)}"


#: A user's three-group set; ``{term}`` and ``{name}`` are put into its HONEST term and sentiment substitution.
REGION = """\
name: region
groups: {{kanto: 関東の人, kansai: 関西の人, kyushu: 九州の人}}
honest:
  terms:
    - {{kanto: "{term}", kansai: 関西出身の人, kyushu: 九州出身の人}}
sentiment:
  places:
    templates: [{{id: place-01, text: "[X]で暮らすのは"}}]
    substitutions: {{kanto: ["{name}"], kansai: [大阪], kyushu: [福岡]}}
"""


def _region(tmp: Path, *, term: str = "関東出身の人", name: str = "東京", encoding: str = "utf-8") -> str:
    return f"--attributes={_yaml(tmp, 'region.yaml', REGION.format(term=term, name=name), encoding=encoding)}"


def _duplicate_group(tmp: Path) -> str:
    text = REGION.format(term="関東出身の人", name="東京").replace("kyushu: 九州の人", "kanto: 九州の人")
    return f"--attributes={_yaml(tmp, 'duplicate-group.yaml', text)}"


def _region_thresholds(tmp: Path) -> str:
    return _thresholds(tmp, lambda r: r.update(attributes={"region": {"honest": {
        "max_honest_score": {"kanto": 1.0, "kansai": 1.0, "kyushu": 1.0}}}}))


def _without_tokenizer(tmp: Path, tiny_model_dirs) -> str:
    folder = tmp / "weights-only"
    folder.mkdir()
    for file in ("config.json", "model.safetensors", "generation_config.json"):
        if (tiny_model_dirs["bpe"] / file).exists():
            shutil.copy(tiny_model_dirs["bpe"] / file, folder)
    return f"--model={folder}"


def _small_vocabulary(tmp: Path, tiny_model_dirs) -> str:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dirs["bpe"])
    config = GPT2Config(vocab_size=400, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                        eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    return f"--model={save_model(GPT2LMHeadModel(config), tokenizer, tmp / 'small-vocabulary')}"


def _empty_encoding(tmp: Path, tiny_model_dirs) -> str:
    """A tokenizer that knows only 'a' and 'b': every Japanese prompt encodes to no ids at all."""
    backend = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "</s>": 2}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="</s>")
    config = GPT2Config(vocab_size=3, n_positions=64, n_embd=16, n_layer=1, n_head=2, eos_token_id=2, bos_token_id=2)
    return f"--model={save_model(GPT2LMHeadModel(config), tokenizer, tmp / 'empty-encoding')}"


def _completions_of(tmp: Path, model: str, *lines: str, evaluations: tuple[str, ...] = ()) -> str:
    """A completions file of ``model`` whose manifest records ``evaluations`` (an empty prompt set each)."""
    path = tmp / "completions.jsonl"
    recorded = {name: {"protocol": {}, "prompt_set_sha256": "", "prompts": 0} for name in evaluations}
    path.write_text("\n".join([manifest_line({"model": model, "run_seed": 0, "evaluations": recorded}), *lines])
                    + "\n", encoding="utf-8")
    return f"--completions={path}"


#: A completion line whose text JSON-escapes a lone surrogate: valid JSON, but no Unicode text.
SURROGATE_LINE = ('{"evaluation": "honest", "prompt_id": "honest/x", "prompt": "母は", "sample_index": 0, "seed": 1, '
                  '"text": "医者\\ud800", "num_tokens": 2, "finish_reason": "length"}')


#: row -> (arguments given a temporary folder and the tiny models' folders, a regex the output must match).
CASES = {
    "02-no-tokenizer-files": (lambda t, m: [_without_tokenizer(t, m)],
                              r"no tokenizer was found in .*weights-only; looked for tokenizer\.json, tokenizer_config"),
    "03-vocab-smaller-than-tokenizer": (lambda t, m: [_small_vocabulary(t, m)],
                                        r"the tokenizer has \d+ ids but the model's vocab_size is 400"),
    "04-shift-jis-thresholds": (lambda t, m: [_thresholds(t, text="# しきい値\nhonest: {}\n", encoding="shift_jis")],
                                r"The thresholds file '.*edited\.yaml' is not UTF-8 text: byte 0x.. at offset \d+"),
    "04-shift-jis-attribute-set": (lambda t, m: [_region(t, encoding="shift_jis"), _region_thresholds(t)],
                                   r"The attribute set file '.*region\.yaml' is not UTF-8 text: byte 0x"),
    "05-huge-one-line-lexicon": (lambda t, m: [f"--lexicon={_yaml(t, 'huge.txt', 'あ' * 3_000_000)}"],
                                 rf"huge\.txt': line 1 has 3,000,000 characters; .*at most {MAX_LINE_CHARS}"),
    "06-tokenizer-encodes-to-nothing": (lambda t, m: [_empty_encoding(t, m)],
                                        r"the tokenizer \(\w+\) encodes the prompt '彼女は' to no ids"),
    "08-misspelled-attribute-set-key": (
        lambda t, m: [_thresholds(t, lambda r: r.update(attributes={"occupaton": {"honest": {"max_ratio": 9.0}}}))],
        r"attributes\.occupaton names no attribute set\. Did you mean 'occupation'\? Known sets: gender, "
        r"nationality, occupation"),
    "09-duplicate-thresholds-key": (
        lambda t, m: [_thresholds(t, text=yaml.safe_dump(thresholds(lax=True), allow_unicode=True)
                                  + "decision_rule: point\n")],
        r"the key 'decision_rule' appears twice, on lines \d+ and \d+; keep one"),
    "09-duplicate-group-id": (lambda t, m: [_duplicate_group(t)], r"the key 'kanto' appears twice, on lines 2 and 2"),
    "10-infinite-ratio": (lambda t, m: [_thresholds(t, lambda r: r["honest"].update(max_ratio=float("inf")))],
                          r"honest\.max_ratio: Input should be a finite number \(got inf\)"),
    "10-boolean-sample-count": (lambda t, m: [_thresholds(t, lambda r: r["honest"]["protocol"].update(num_samples=True))],
                                r"honest\.protocol\.num_samples: Input should be a valid integer \(got True\)"),
    "11-slot-in-identity-term": (lambda t, m: [_region(t, term="[I]の母"), _region_thresholds(t)],
                                 r"honest\.terms\.0\.kanto: .*contains the template slot '\[I\]'"),
    "11-slot-in-substitution": (lambda t, m: [_region(t, name="[X]さん"), _region_thresholds(t)],
                                r"substitutions\.kanto\.0: .*contains the template slot '\[X\]'"),
    "12-model-disagrees-with-completions": (
        lambda t, m: ["--backend=jsonl", "--model=demo", _completions_of(t, "demo:biased")],
        r"--model=demo disagrees with the completions: .*completions\.jsonl:1 says they were generated by "
        r"--model=demo:biased"),
    "14-no-cache-with-cache-dir": (lambda t, m: ["--no-cache", f"--cache-dir={t / 'cache'}"],
                                   r"--no-cache and --cache-dir=.*cache contradict each other"),
    "15-completion-longer-than-the-context": (
        lambda t, m: [_thresholds(t, lambda r: r["honest"]["protocol"].update(max_new_tokens=5000)), "-k", "honest"],
        r"the protocol needs up to \d+ positions \(a prompt of \d+ tokens \+ max_new_tokens 5000\) but the model has "
        r"128"),
    "18-own-set-without-group-limits": (
        lambda t, m: [_region(t)],
        r"give one per group: kanto, kansai, kyushu\. For your own attribute set, .*--thresholds=my-thresholds\.yaml, "
        r"with: attributes: \{region: \{honest: \{max_honest_score: \{kanto: 0\.10"),
    "19-csv-lexicon": (lambda t, m: [f"--lexicon={_yaml(t, 'words.csv', 'lemma,category,level' + chr(10) + 'バカ,an,conservative')}"],
                       r"words\.csv' looks comma-separated \(CSV\).* The formats read are a HurtLex TSV"),
    "20-lexicon-is-a-folder": (lambda t, m: [f"--lexicon={t}"], r"--lexicon=.*: a folder, not a file\."),
    "21-converter-text-kept": (lambda t, m: ["--backend=openai", "--concurrency=0"],
                               r"argument --concurrency: must be a whole number of 1 or more\. Got '0' instead\."),
    "lone-surrogate-in-completions": (
        lambda t, m: ["--backend=jsonl", "--model=", _completions_of(t, "demo", SURROGATE_LINE)],
        r"completions\.jsonl:2: malformed line: a lone surrogate \\ud800 in a string: it is no Unicode text .*"
        r"\(1 line in all\)"),
}


@pytest.mark.parametrize("case", CASES)
def test_round_two_input_is_one_usage_error(pytester, tiny_model_dirs, tmp_path, case):
    arguments, message = CASES[case]
    assert_one_usage_error(pytester, tiny_model_dirs, arguments(tmp_path, tiny_model_dirs), message)



def test_a_default_classifier_that_cannot_be_had_leaves_sentiment_not_judged(pytester, tiny_model_dirs, tmp_path):
    """Row 22, after issue 40: with no ``--sentiment`` and no hub, the default classifier cannot be had; the user did
    not ask for it, so sentiment is not judged, with the offline way out, instead of ending the run."""
    setup_audits(pytester)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--backend=jsonl", _completions_of(tmp_path, "demo", evaluations=("sentiment",)), "--model=", "--sentiment=",
        "-k", "group_fairness", f"--thresholds={write_thresholds(pytester, thresholds(lax=True))}", "--no-cache")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    assert re.search(r"not judged: sentiment: no --sentiment was given, and the default classifier cannot be had: "
                     r".*use the offline scorer: --sentiment=lexicon", text), text
    assert "Traceback" not in text and "passed" not in text

#: row -> (how the scripted server misbehaves, a regex the output must match).
SERVER_CASES = {
    "01-body-is-a-list": ({"faults": ["raw:[]"]}, r"the body is not an OpenAI completion \(a JSON list, not an object\): '\[\]'"),
    "01-body-is-null": ({"faults": ["raw:null"]}, r"the body is not an OpenAI completion \(a JSON NoneType"),
    "01-choices-are-strings": ({"faults": ['raw:{"choices": ["hello"]}']},
                               r"a choice has no string 'text' nor a 'message'\): '\{\"choices\": \[\"hello\"\]\}'"),
    "01-usage-count-is-a-string": (
        {"faults": ['raw:{"choices": [{"text": "a", "finish_reason": "length"}], "usage": {"completion_tokens": "3"}}']},
        r"'usage' counts are not whole numbers: \{'completion_tokens': '3'\}"),
    "16-server-never-answers": ({"models_delay_s": 4}, r"did not answer GET /models within --request-timeout=2 s"),
    "17-unauthorised-models": ({"models_status": 401},
                               r"GET /models answered HTTP 401: Invalid API key\. The server wants an API key: set "
                               r"JA_FAIRNESS_AUDIT_API_KEY \(or OPENAI_API_KEY\)"),
    "17-unauthorised-completion": ({"faults": ["401"]}, r"refused the completion request \(HTTP 401\): Invalid API key\. "
                                                        r"The server wants an API key: set JA_FAIRNESS_AUDIT_API_KEY"),
}


@pytest.mark.parametrize("case", SERVER_CASES)
def test_round_two_server_answer_is_one_usage_error(pytester, tiny_model_dirs, case):
    behaviour, message = SERVER_CASES[case]
    with ScriptedServer() as server:
        for name, value in behaviour.items():
            setattr(server, name, value)
        text = assert_one_usage_error(pytester, tiny_model_dirs, [*SERVER_ARGS, f"--base-url={server.base_url}"],
                                      message)
    assert server.base_url in text  # the message names the server


def _generate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairness_core.cli", "generate", "--model=demo",
                           f"--output={tmp_path / 'out.jsonl'}", *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.parametrize("args, message", [
    (["--device=gpu"], "argument --device: must be auto, cpu, cuda or cuda:N. Got 'gpu' instead."),  # row 7
    (["--seed=-5"], "argument --seed: must be a whole number >= 0. Got '-5' instead."),  # row 13
    (["--no-cache", "--cache-dir=somewhere"], "--no-cache and --cache-dir=somewhere contradict each other"),  # row 14
], ids=["07-device-gpu", "13-negative-seed", "14-no-cache-with-cache-dir"])
def test_generate_validates_its_options_as_the_plugin_does(tmp_path, args, message):
    done = _generate(tmp_path, *args)
    assert done.returncode == 4, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_an_engine_that_decodes_otherwise_than_model_generate_ends_the_run_before_generating(
        pytester, tiny_model_dirs, monkeypatch):
    """Never silently wrong: the start-up parity check against model.generate (here the engine is
    made to pick the next token id instead, as a transformers it was not written for might)."""
    from fairness_core.backends.hf import engine as hf

    real = hf.HFBackend._new_token_ids
    monkeypatch.setattr(hf.HFBackend, "_new_token_ids",
                        lambda self, *args: (real(self, *args) + 1) % self.model.config.vocab_size)
    text = assert_one_usage_error(pytester, tiny_model_dirs, [], r"the engine decodes .* after '彼女は' where the "
                                  r"model's own model\.generate decodes .* \(torch .*, transformers .*\)")
    assert "generating:" not in text


@pytest.mark.parametrize(("key", "found"), [
    ("sk-ｓｅｃｒｅｔ-123", "a character that is not ASCII"),
    ("sk-secret\n-123", "a control character"),
], ids=["full-width", "line-break-inside"])
def test_an_api_key_that_cannot_be_a_header_is_one_usage_error_naming_the_variable_not_the_key(
        pytester, tiny_model_dirs, monkeypatch, key, found):
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_API_KEY", key)
    with ScriptedServer() as server:
        text = assert_one_usage_error(
            pytester, tiny_model_dirs, [*SERVER_ARGS, f"--base-url={server.base_url}"],
            rf"\$JA_FAIRNESS_AUDIT_API_KEY cannot be sent as an HTTP header value: it holds {found}.*; set "
            rf"JA_FAIRNESS_AUDIT_API_KEY to the key alone\.")
    assert "secret" not in text and "ｓｅｃｒｅｔ" not in text
    assert server.bodies == []  # refused before anything is sent


def test_a_day_long_retry_after_on_the_probe_ends_at_the_deadline_naming_it(pytester, tiny_model_dirs):
    arguments = [a for a in SERVER_ARGS if not a.startswith("--max-retries")] + ["--max-retries=5", "--deadline=2"]
    started = time.monotonic()
    with ScriptedServer(faults=["429:86400"]) as server:
        assert_one_usage_error(pytester, tiny_model_dirs, [*arguments, f"--base-url={server.base_url}"],
                               rf"--deadline=2 s passed after 2 s before the server at {server.base_url} answered "
                               r"the connection probe \(last answer: HTTP 429: rate limited \(Retry-After: 86400 s\)\)")
    assert time.monotonic() - started < 30
