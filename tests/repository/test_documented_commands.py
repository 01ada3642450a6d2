"""Docs as tests: every command line of README.md and docs/*.md that starts with ``pytest`` or ``ja-fairness-audit``
is run, and the outcome its line documents is asserted.

A default that breaks a documented route then fails CI instead of a user.  A
doc's commands run in their order in one folder (a line may read what an
earlier one wrote: ``--audit-json=results.json``, then ``--baseline=results.json``).

What a line documents, in its trailing comment:

* ``# passes``: exit status 0; ``# fails``: exit status 1;
* ``# fails: a, b``: exit status 1, and each of ``a``, ``b`` (a metric, a group)
  appears in the output;
* no outcome: the run ends with a verdict (status 0 or 1), never a usage error
  or a traceback; ``ja-fairness-audit`` ends with status 0.

A line is run as written, except for what cannot exist on a CI machine, each
replaced by the nearest thing that does (:data:`SUBSTITUTIONS`, printed with the
line): a placeholder model (``M``, ``MODEL``, ``<...>``) or a hub id is a demo
model; a served model (``--base-url``) is a scripted OpenAI-compatible server
on 127.0.0.1, asked at a small protocol (what it answers is scripted: the
route is what is checked); ``--backend=vllm`` is the in-process engine (vLLM's own routes
run in ``.ci/vllm-check``); the files a line names are the doc's own example
files (a fenced block whose first line is ``# region.yaml``), or, where no doc
writes one out, written by :data:`FILES` (a JBBQ folder of synthetic rows).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from audit_support import small_protocol
from bbq_support import synthetic_rows, write_jsonl
from http_support import ScriptedServer

from fairness_core.config.package_data import default_thresholds_path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PROGRAMS = ("pytest", "ja-fairness-audit")
COMMAND_START = re.compile(r"^\s*(?:\$ )?((?:pytest|ja-fairness-audit) .*)$")


@dataclass(frozen=True)
class DocumentedCommand:
    """One command line of a doc: where it is, what it says (continuations joined), what outcome it documents."""

    doc: str
    line: int
    text: str
    outcome: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}" + (f"   # {self.outcome}" if self.outcome else "")


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines of ``path`` in code: inside a fence, or indented by four spaces."""
    lines, fenced = [], False
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or text.startswith("    "):
            lines.append((number, text))
    return lines


def documented_commands(path: Path) -> list[DocumentedCommand]:
    """The command lines of one doc, in order."""
    found: list[DocumentedCommand] = []
    code = _code_lines(path)
    index = 0
    while index < len(code):
        number, text = code[index]
        match = COMMAND_START.match(text)
        index += 1
        if match is None:
            continue
        command = match.group(1)
        while command.rstrip().endswith("\\") and index < len(code):
            command = command.rstrip()[:-1] + " " + code[index][1].strip()
            index += 1
        written, _, comment = command.partition(" #")
        found.append(DocumentedCommand(path.relative_to(REPO).as_posix(), number, " ".join(written.split()),
                                       comment.strip()))
    return found


def all_commands() -> list[DocumentedCommand]:
    return [command for path in DOCS for command in documented_commands(path)]


# --- what a CI machine cannot have, and what stands in for it -----------------------------------------------------

#: (pattern, replacement, why): applied in order to every line before it runs.  ``{server}`` is the scripted server.
SUBSTITUTIONS: tuple[tuple[str, str, str], ...] = (
    (r"--base-url=\S+", "--base-url={server}", "a served model is a scripted server on 127.0.0.1"),
    (r"(--backend=openai\b.*)--model=\S+", r"\1--model=scripted-model", "the scripted server serves scripted-model"),
    (r"--model=<[^>]*>", "--model=demo", "a placeholder model is the fair demo model"),
    (r"--model=(?:M|MODEL|M2)\b", "--model=demo", "a placeholder model is the fair demo model"),
    (r"--model=[\w.-]+/[\w.-]*(?:instruct|chat)[\w.-]*", "--model=demo:chat", "a hub chat model is the chat demo model"),
    (r"--model=[\w.-]+/[\w.-]+", "--model=demo", "a hub model is the fair demo model"),
    (r"--backend=vllm\b", "--backend=hf", "vLLM's routes run in .ci/vllm-check; here the in-process engine"),
)


def substituted(text: str, server: str) -> tuple[str, list[str]]:
    """The line as it runs here, and why each substitution was made."""
    notes = []
    for pattern, replacement, why in SUBSTITUTIONS:
        text, count = re.subn(pattern, replacement, text)
        if count:
            notes.append(why)
    return text.replace("{server}", server), notes


def doc_files(path: Path) -> dict[str, str]:
    """The example files a doc writes out: a fenced block whose first line is ``# <name>.yaml`` is that file."""
    files, block, fenced = {}, [], False
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.lstrip().startswith("```"):
            if fenced and block and (name := re.match(r"#\s*([\w.-]+\.ya?ml)\b", block[0].strip())):
                files[name.group(1)] = "\n".join(block) + "\n"
            fenced, block = not fenced, []
        elif fenced:
            block.append(text)
    return files


#: Files a doc's lines name that no doc writes out: name -> how to write it into the folder (given the doc's own
#: example files, which a user would have copied).
FILES: dict[str, Callable[[Path, dict[str, str]], None]] = {
    "my-groups.yaml": lambda folder, examples: (folder / "my-groups.yaml").write_text(
        examples.get("region.yaml") or doc_files(REPO / "docs" / "attribute-sets.md")["region.yaml"], encoding="utf-8"),
    "my.yaml": lambda folder, examples: shutil.copy(default_thresholds_path(), folder / "my.yaml"),
    "jbbq/": lambda folder, examples: (folder / "jbbq").mkdir(exist_ok=True) or write_jsonl(
        folder / "jbbq" / "Gender_identity.jsonl", [r for r in synthetic_rows() if r["category"] == "Gender_identity"]),
}


@dataclass(frozen=True)
class Outcome:
    status: frozenset[int]
    named: tuple[str, ...] = ()


def documented_outcome(command: DocumentedCommand) -> Outcome:
    """What the line's comment promises (see the module's docstring)."""
    comment = command.outcome.lower()
    words = re.split(r"[\s,:;]+", comment)
    if "fails" in words:
        named = comment.partition("fails")[2].lstrip(" :,").partition("(")[0]
        return Outcome(frozenset({1}), tuple(item.strip(" .`") for item in named.split(",") if item.strip(" .`")))
    if "passes" in words:
        return Outcome(frozenset({0}))
    return Outcome(frozenset({0}) if command.text.startswith("ja-fairness-audit") else frozenset({0, 1}))


def run_line(command: DocumentedCommand, folder: Path, server: str, env: dict[str, str]) -> str:
    """Run one line in ``folder``; a failure message, or ``""`` when it kept its promise."""
    text, notes = substituted(command.text, server)
    examples = doc_files(REPO / command.doc)
    for name, content in examples.items():
        if name in text and not (folder / name).exists():
            (folder / name).write_text(content, encoding="utf-8")
    for name, write in FILES.items():
        if name in text and not (folder / name).exists():
            write(folder, examples)
    if f"--base-url={server}" in text and "--thresholds" not in text:
        # What a scripted server answers means nothing: the route is what is checked, at a small protocol.
        small = folder / "scripted-server-protocol.yaml"
        small.write_text(yaml.safe_dump(small_protocol(yaml.safe_load(default_thresholds_path().read_text(
            encoding="utf-8")), samples=1, window=8), allow_unicode=True), encoding="utf-8")
        text += f" --thresholds={small}"
        notes.append("a scripted server is asked at 1 sample and 8 tokens a prompt")
    program, *args = shlex.split(text)
    argv = ([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args] if program == "pytest"
            else [sys.executable, "-m", "fairness_core.cli", *args])
    run = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=900, env=env)
    output = run.stdout + run.stderr
    outcome = documented_outcome(command)
    problems = []
    if run.returncode not in outcome.status:
        problems.append(f"exit status {run.returncode}, documented {sorted(outcome.status)}")
    problems += [f"{name!r} is not in the output" for name in outcome.named if name.lower() not in output.lower()]
    if "Traceback" in output or "INTERNALERROR" in output:
        problems.append("a traceback")
    if not problems:
        return ""
    ran = f"ran as: {text}" + (f" ({'; '.join(notes)})" if notes else "")
    return f"{command}\n  {ran}\n  " + "; ".join(problems) + "\n" + output[-3000:]


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One generation cache for every doc's lines (the same demo audit in three docs generates once), and the
    checkout's ``audits/`` reachable as ``pytest audits``."""
    cache = tmp_path_factory.mktemp("documented-commands-cache")
    return {**os.environ, "JA_FAIRNESS_AUDIT_CACHE": str(cache), "OMP_NUM_THREADS": "1"}


def test_the_docs_hold_command_lines_and_each_documents_what_it_runs():
    commands = all_commands()
    print(f"{len(commands)} documented command lines in {len(DOCS)} docs")
    assert len(commands) >= 20
    assert all(command.text.split()[0] in PROGRAMS for command in commands)


def test_the_outcome_reader_reads_the_conventions():
    def outcome(comment: str) -> Outcome:
        return documented_outcome(DocumentedCommand("d", 1, "pytest audits --model=demo", comment))

    assert outcome("passes") == Outcome(frozenset({0}))
    assert outcome("fails: honest_ratio, refusal_gap") == Outcome(frozenset({1}), ("honest_ratio", "refusal_gap"))
    assert outcome("fails (demo:qa passes)") == Outcome(frozenset({1}))
    assert outcome("8 groups: japanese, ...") == Outcome(frozenset({0, 1}))


@pytest.mark.slow
@pytest.mark.commands
@pytest.mark.parametrize("doc", [path.relative_to(REPO).as_posix() for path in DOCS if documented_commands(path)])
def test_every_documented_command_runs_as_documented(doc: str, tmp_path: Path, environment: dict[str, str]):
    """The doc's lines, in order, in one folder; every failure is reported, not only the first."""
    (tmp_path / "audits").symlink_to(REPO / "audits")
    (tmp_path / "out").mkdir()
    failures = []
    commands = documented_commands(REPO / doc)
    with ScriptedServer() as server:
        for command in commands:
            failure = run_line(command, tmp_path, server.base_url, environment)
            if failure:
                failures.append(failure)
    print(f"{doc}: ran {len(commands)} command lines, {len(failures)} broke their promise")
    assert not failures, "\n\n".join(failures)


def test_the_substitutions_keep_what_a_line_asks_and_replace_only_what_ci_cannot_have():
    line = ("pytest audits --backend=openai --base-url=http://lb.internal:8000/v1 --model=MODEL --concurrency=64")
    text, notes = substituted(line, "http://127.0.0.1:1/v1")
    assert text == "pytest audits --backend=openai --base-url=http://127.0.0.1:1/v1 --model=scripted-model --concurrency=64"
    assert len(notes) == 2
    assert substituted("pytest audits --model=llm-jp/llm-jp-3-1.8b-instruct --prompt-format=chat-prefill", "")[0] == (
        "pytest audits --model=demo:chat --prompt-format=chat-prefill")
    assert substituted("pytest audits --model=demo:biased --html=report.html", "")[0] == (
        "pytest audits --model=demo:biased --html=report.html")
    examples = doc_files(REPO / "docs" / "attribute-sets.md")
    assert {"region.yaml", "my-thresholds.yaml"} <= set(examples)
    assert yaml.safe_load(examples["region.yaml"])["name"] == "region"
