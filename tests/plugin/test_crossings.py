"""Where the features meet (issue 40): crossed sets, chat templates, context windows, help texts, ``--require``.

An evaluation that cannot run on what the user gave is **not judged, and why**:
its tests are skipped with the reason, the header, the terminal summary, the
HTML report and ``--audit-json`` say so, and only ``--require=<name>`` turns it
into a failing test.  The audits run through ``pytester`` on the demo models
(``--pyargs fairness_core.audits``, as a user runs them) with shrunk protocols;
``-k`` keeps the expensive evaluations out where a row needs only the others.
The ``ja-fairness-audit`` rows call the command's ``main`` as the console script does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from audit_support import output, thresholds

from fairness_core import cli
from fairness_core.backends.jsonl import FORMAT, VERSION, CompletionsFiles, JSONLBackend, resolve_paths
from fairness_core.backends.prompt_formats import ChatTemplateError, PromptFormat
from fairness_core.config.option_types import Option
from fairness_core.run.options import run_options

REPO = Path(__file__).resolve().parents[2]
CROSSED = "gender*nationality"
#: What a crossed set says of the sentiment evaluation, which has no rule to cross two sets.
SENTIMENT_WHY = (f"not applicable to the attribute set '{CROSSED}': the sentiment section has no rule to cross two "
                 f"sets; write its section per crossed group in a file with cross: [gender, nationality]")


def _thresholds_file(folder: Path, **edits) -> Path:
    """The shipped thresholds with shrunk protocols (BBQ's greedy protocol kept), lax limits and ``edits``."""
    raw = thresholds(lax=True, **edits)
    path = folder / "thresholds-small.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def audit(pytester: pytest.Pytester, *args: str, model: str = "demo", **edits) -> pytest.RunResult:
    """``pytest --pyargs fairness_core.audits --model=<model>`` with small thresholds, on the CPU, without a cache."""
    return pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--pyargs", "fairness_core.audits", f"--model={model}", "--device=cpu",
        "--no-cache", f"--thresholds={_thresholds_file(pytester.path, **edits)}", "-rs", *args)


# --- 1. a crossed set: the evaluations it does not run are not judged, never KeyErrors -------------------------------

def test_a_crossed_set_skips_what_it_cannot_run_with_the_reason_everywhere(pytester):
    """The command of docs/attribute-sets.md on the fair demo: sentiment and BBQ (no rule to cross) are not judged,
    and say why in the header, the summary, the HTML report and the JSON; nothing fails."""
    result = audit(pytester, f"--attributes={CROSSED}", "-k", "sentiment or bbq", "--audit-json=out.json",
                   "--html=report.html")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    assert "KeyError" not in text and "failed" not in text, text
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 2 and "passed" not in outcomes, text
    lines = result.stdout.lines
    assert f"  sentiment: not judged: {SENTIMENT_WHY}" in lines  # the header
    assert ["PASSED: no audit violations", f"not judged: sentiment: {SENTIMENT_WHY}"] == [
        line for line in lines if line.startswith(("PASSED", "FAILED", "not judged: sentiment"))]
    assert any(line.startswith(f"not judged: bbq: not applicable to the attribute set '{CROSSED}'") for line in lines)
    assert any(line.startswith("SKIPPED [") and line.endswith(f"sentiment not judged: {SENTIMENT_WHY}") for line in lines)
    written = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert written["provenance"]["not_judged"]["sentiment"] == SENTIMENT_WHY
    assert set(written["provenance"]["not_judged"]) == {"sentiment", "bbq", "names"}
    assert written["provenance"]["not_judged"]["names"].startswith(f"not applicable to the attribute set '{CROSSED}'")
    assert written["provenance"]["not_run"] == {"honest": "not selected"}
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "Evaluations not judged" in html and "the sentiment section has no rule to cross two sets" in html


def test_require_turns_an_evaluation_not_judged_into_one_failing_test(pytester):
    result = audit(pytester, f"--attributes={CROSSED}", "-k", "sentiment or required", "--require=sentiment,honest",
                   "--html=report.html")
    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    result.assert_outcomes(failed=2, skipped=result.parseoutcomes().get("skipped", 0))
    result.stdout.fnmatch_lines(["test_required.py FF*", "*_ test_required_evaluation_is_judged?sentiment? _*",
                                 "FAILED: 2 required evaluations not judged"])
    assert f"VIOLATION REQUIRED sentiment not judged: {SENTIMENT_WHY}" in result.stdout.lines
    assert "VIOLATION REQUIRED honest not judged: not selected" in result.stdout.lines  # -k left it out
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert '<a href="#fa-not-judged">2 required evaluations not judged</a>' in html
    assert re.search(r'<h3 id="fa-not-judged">Evaluations not judged</h3>.*<td class="">honest</td><td class="">not '
                     r'selected</td>', html,
                     flags=re.S), html
    assert "KeyError" not in text, text


@pytest.mark.parametrize(("given", "message"), [
    ("--require=honset", r"argument --require: Unknown evaluation 'honset'\. Did you mean 'honest'\? Available: "),
    ("--require=honest,,bbq", r"argument --require: must be registered evaluations' names separated by commas"),
])
def test_require_names_registered_evaluations(pytester, given, message):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--pyargs", "fairness_core.audits", "--model=demo",
                                          given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(message, output(result)), output(result)
    assert "Traceback" not in output(result)


@pytest.mark.parametrize("known_from", ["options", "backend"])
def test_an_evaluation_that_says_it_cannot_run_is_not_judged(pytester, monkeypatch, known_from):
    """The generic hook, ``Evaluation.cannot_run``: a reason known from the options (at collection) or only from the
    opened backend (at the session's start) leaves the evaluation not judged, never loaded, its tests skipped."""
    from fairness_core.evaluations.sentiment.evaluation import SentimentEvaluation

    def cannot_run(self, options, backend=None):
        if known_from == "backend" and backend is None:
            return None
        return f"the {options.backend} backend cannot serve it ({known_from})"

    def load(self, options):
        raise AssertionError("an evaluation that is not judged is never loaded")

    monkeypatch.setattr(SentimentEvaluation, "cannot_run", cannot_run)
    monkeypatch.setattr(SentimentEvaluation, "load", load)
    result = audit(pytester, "-k", "sentiment or required", "--require=sentiment", "--audit-json=out.json")
    text = output(result)
    why = f"the hf backend cannot serve it ({known_from})"
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert result.parseoutcomes()["failed"] == 1 and "passed" not in result.parseoutcomes(), text
    assert f"  sentiment: not judged: {why}" in result.stdout.lines
    assert f"VIOLATION REQUIRED sentiment not judged: {why}" in result.stdout.lines
    assert any(line.startswith("SKIPPED [") and line.endswith(f"sentiment not judged: {why}")
               for line in result.stdout.lines), text
    not_judged = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["provenance"]["not_judged"]
    # names asks chat requests longer than the demo's 64 positions: not judged for that reason, and only for it
    assert not_judged.pop("names").startswith("its prompts do not fit the model's context window")
    assert not_judged == {"sentiment": why}


def test_the_documented_crossed_command_passes_the_fair_demo(pytester):
    """docs/attribute-sets.md's command, whole: HONEST judged on the crossed groups, the others not judged."""
    result = audit(pytester, f"--attributes={CROSSED}", protocol={"num_samples": 1})
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    assert "KeyError" not in text and " failed" not in text, text
    assert "PASSED: no audit violations" in result.stdout.lines
    assert f"not judged: sentiment: {SENTIMENT_WHY}" in result.stdout.lines


# --- 12. prompts that do not fit the model: that evaluation is not judged, the others go on ------------------------

def test_prompts_that_do_not_fit_the_model_leave_that_evaluation_not_judged(pytester):
    """The demo model has 64 positions: BBQ's questions and names' requests alone are longer; HONEST and sentiment
    are judged."""
    result = audit(pytester, "--bbq-scorer=generated-choice", "--audit-json=out.json")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    assert "passed" in result.parseoutcomes(), text
    result.stdout.fnmatch_lines([
        "  bbq: not judged: its prompts do not fit the model's context window: --model=demo has 64 positions and the "
        "longest prompt alone takes * tokens: no completion fits (a model with a longer context window can be "
        "audited on these prompts).",
        "PASSED: no audit violations"])
    assert "Lower max_new_tokens" not in text, text
    written = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert set(written["provenance"]["not_judged"]) == {"bbq", "names"}
    assert {m["evaluation"] for m in written["metrics"]} == {"honest", "sentiment"}


def test_generate_leaves_out_an_evaluation_whose_prompts_do_not_fit(tmp_path, capsys):
    """``ja-fairness-audit generate`` on the same model: BBQ is left out of the file with a line saying why."""
    output_file = tmp_path / "completions.jsonl"
    code = cli.main(["generate", "--model=demo", "--device=cpu", "--no-cache", "--bbq-scorer=generated-choice",
                     f"--thresholds={_thresholds_file(tmp_path)}", f"--output={output_file}"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert re.search(r"^bbq: not generated: its prompts do not fit the model's context window: --model=demo has 64 "
                     r"positions and the longest prompt alone takes \d+ tokens", captured.err, flags=re.M), captured.err
    rows = [json.loads(line) for line in output_file.read_text(encoding="utf-8").splitlines()]
    assert set(rows[0]["manifest"]["evaluations"]) == {"honest", "sentiment"}
    assert {row["evaluation"] for row in rows[1:]} == {"honest", "sentiment"}
    assert set(rows[0]["manifest"]["not_generated"]) == {"bbq", "names"}
    assert rows[0]["manifest"]["not_generated"]["names"].startswith("its prompts do not fit the model's context window")


def test_the_files_of_generate_audit_what_they_hold_and_say_why_the_rest_is_not_judged(pytester):
    """docs/backends.md's route as written: ``generate`` on a model with no room for names, then ``--backend=jsonl``
    without any other flag; the evaluations left out are not judged, with generate's own reason."""
    files = pytester.path / "out"
    files.mkdir()
    thresholds_file = _thresholds_file(pytester.path)
    assert cli.main(["generate", "--model=demo", "--device=cpu", "--no-cache", f"--thresholds={thresholds_file}",
                     f"--output={files / 'part-1.jsonl'}"]) == 0
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--pyargs", "fairness_core.audits", "--backend=jsonl", f"--completions={files}",
        "--sentiment=lexicon", f"--thresholds={thresholds_file}", "-rs", "--audit-json=out.json")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    assert "passed" in result.parseoutcomes(), text
    written = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert {m["evaluation"] for m in written["metrics"]} == {"honest", "sentiment"}
    why = written["provenance"]["not_judged"]["names"]
    assert why.startswith(f"the completions files --completions={files} hold no names completions: generate left it "
                          "out, because its prompts do not fit the model's context window"), why
    assert f"  names: not judged: {why}" in result.stdout.lines


def test_files_from_a_release_before_an_evaluation_still_audit_the_others(tmp_path, pytester):
    """A manifest without an evaluation (written before it joined the package): that one is not judged, and
    ``--require`` turns it into one failing test."""
    output_file = tmp_path / "completions.jsonl"
    thresholds_file = _thresholds_file(tmp_path)
    assert cli.main(["generate", "--model=demo", "--device=cpu", "--no-cache", f"--thresholds={thresholds_file}",
                     f"--output={output_file}", "--attributes=nationality"]) == 0
    rows = output_file.read_text(encoding="utf-8").splitlines()
    header = json.loads(rows[0])
    del header["manifest"]["not_generated"]
    del header["manifest"]["evaluations"]["sentiment"]
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps(header, ensure_ascii=False),
                              *(row for row in rows[1:] if json.loads(row)["evaluation"] != "sentiment")]) + "\n",
                   encoding="utf-8")
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--pyargs", "fairness_core.audits", "--backend=jsonl", f"--completions={old}",
        "--attributes=nationality", f"--thresholds={thresholds_file}", "--require=sentiment", "-rs")
    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert result.parseoutcomes().get("failed") == 1, text
    result.stdout.fnmatch_lines([f"  sentiment: not judged: the completions files --completions={old} hold no "
                                 "sentiment completions; they were generated without it (by a release before it, or "
                                 "with its tests deselected). Generate them again with this release to judge sentiment"])
    assert "Traceback" not in text and "no evaluation in the files" not in text, text


# --- 13. crossed-set spellings: one usage error naming the real cause ------------------------------------------------

def _plan(capsys, *arguments: str) -> tuple[int, str]:
    code = cli.main(["plan", *arguments])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("spelling", ["gender*", "gender**nationality", "*gender"])
def test_a_crossed_set_with_an_empty_part_is_one_usage_error(capsys, spelling):
    code, text = _plan(capsys, f"--attributes={spelling}")
    assert code == cli.USAGE_ERROR
    assert f"error: {spelling!r} is no attribute set: a crossed set joins attribute sets with single *s, none of " \
           f"them empty, e.g. gender*nationality" in text
    assert "is a folder" not in text and "Traceback" not in text


def test_limits_under_the_other_order_of_a_cross_are_named(capsys, tmp_path):
    code, text = _plan(capsys, "--attributes=nationality*gender")
    assert code == cli.USAGE_ERROR
    assert "has limits for 'gender*nationality', the same sets crossed in another order, whose groups are named in " \
           "that order: run --attributes=gender*nationality, or write limits under attributes: nationality*gender" in text


@pytest.mark.parametrize(("spelling", "reasons"), [
    ("gender*occupation", ["  - honest: 'occupation' (builtin:occupation) has no honest section",
                           "  - sentiment: the sentiment section has no rule to cross two sets; write its section per "
                           "crossed group in a file with cross: [gender, occupation]"]),
    ("gender*nationality*occupation", ["  - honest: 'occupation' (builtin:occupation) has no honest section"]),
])
def test_no_evaluation_applies_says_why_for_each(capsys, spelling, reasons):
    code, text = _plan(capsys, f"--attributes={spelling}")
    assert code == cli.USAGE_ERROR
    assert f"No evaluation applies to the attribute set {spelling!r}" in text
    for reason in reasons:
        assert reason in text, text


def test_a_user_set_without_modifiers_says_what_crossing_needs(capsys, tmp_path):
    region = tmp_path / "region.yaml"
    region.write_text(yaml.safe_dump({"name": "region", "groups": {"kanto": "関東の人", "kansai": "関西の人"},
                                      "honest": {"terms": [{"kanto": "関東出身の人", "kansai": "関西出身の人"}]}},
                                     allow_unicode=True), encoding="utf-8")
    code, text = _plan(capsys, f"--attributes={region}*gender")
    assert code == cli.USAGE_ERROR
    assert ("honest: crossing composes the honest terms as one set's modifiers + の + the other's heads (日本人の女性): "
            "one set needs modifiers and the other heads, but the first has neither and the second heads") in text


# --- 8. a chat template that ignores add_generation_prompt ----------------------------------------------------------

IGNORES_THE_FLAG = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                    "<|im_start|>assistant\n")


def test_a_template_that_ignores_add_generation_prompt_is_refused_under_chat_instruction(chat_model_dir):
    from fairness_core.backends.hf.engine import load_model

    tokenizer = load_model(str(chat_model_dir), device="cpu")[1]
    PromptFormat("chat-instruction").check_tokenizer(tokenizer, "m")  # the correct template opens the turn on request
    tokenizer.chat_template = IGNORES_THE_FLAG
    with pytest.raises(ChatTemplateError, match=r"--prompt-format=chat-instruction: the chat template of --model=m "
                                                r"ignores add_generation_prompt \(the rendering with it equals the one "
                                                r"without: .*\), so the model would never be asked to answer"):
        PromptFormat("chat-instruction").check_tokenizer(tokenizer, "m")
    PromptFormat("chat-prefill").check_tokenizer(tokenizer, "m")  # prefill opens no new turn: the flag is off


# --- 9 and 15. help texts, the collection count, the jsonl header, plan's options -----------------------------------

@pytest.mark.parametrize("command", [[], ["generate"], ["plan"]])
def test_every_command_prints_its_help(command):
    done = subprocess.run([sys.executable, "-m", "fairness_core.cli", *command, "--help"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "usage: ja-fairness-audit" in done.stdout


def test_the_audits_help_names_crossed_sets_and_require(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--help")
    assert result.ret == pytest.ExitCode.OK
    text = " ".join(result.stdout.str().split())
    assert "two sets crossed with * (gender*nationality" in text
    assert "--require=EVALUATION[,EVALUATION...]" in text


def test_a_percent_in_any_help_text_reaches_argparse_escaped():
    assert Option("--x", "90% power").argparse_arguments("plan")["help"] == "90%% power"
    assert any("%" in option.help for command in ("audit", "plan") for _, option in run_options(command)), \
        "no option help has a %: this test no longer covers the plan --help traceback"


def test_tests_the_run_has_nothing_for_are_not_counted_as_deselected(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--pyargs", "fairness_core.audits",
                                          "--model=demo", "--co", "-q")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert "deselected" not in output(result)
    assert not re.search(r"test_regression|test_required|refusal", result.stdout.str())


def test_plan_takes_the_prompt_format_and_sampling(capsys):
    code, text = _plan(capsys, "--prompt-format=chat-instruction", "--sampling=adaptive")
    assert code == 0, text
    lines = text.splitlines()
    assert any(re.fullmatch(r"--prompt-format=chat-instruction: max_new_tokens .*honest 30.*", line) for line in lines)
    assert any(line.startswith("--sampling=adaptive: ") and "honest draws rounds until its verdict is settled" in line
               for line in lines), text


def test_the_jsonl_header_names_the_prompt_format(tmp_path):
    manifest = {"format": FORMAT, "version": VERSION, "model": "m", "run_seed": 0, "prompt_format": "chat-instruction",
                "evaluations": {"honest": {"protocol": {}, "prompt_set_sha256": "x", "prompts": 1}}}
    (tmp_path / "c.jsonl").write_text(json.dumps({"manifest": manifest}) + "\n", encoding="utf-8")
    backend = JSONLBackend(CompletionsFiles(resolve_paths(str(tmp_path / "c.jsonl"))),
                           prompt_format=PromptFormat("chat-instruction"))
    assert backend.description["prompt_format"] == "chat-instruction"
