"""The run's one option table: pytest and ``ja-fairness-audit`` show the same options, and ``--model`` is resolved once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fairness_core.api.generic_options import shard
from fairness_core.config.option_types import AUDIT, GENERATE, PLAN, Option
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import OptionTableError, project_root, resolve_model, resolve_thresholds, run_options

REPO = Path(__file__).resolve().parents[1]
#: An option's line in argparse's help: ``  --seed SEED`` (argparse) or ``  --seed=SEED`` (pytest), then its text.
OPTION_START = re.compile(r"^  (--[\w-]+)(?:[ =][A-Z_]+)?(?:\s{2,}|\n|$)", flags=re.M)


def help_texts(output: str) -> dict[str, str]:
    """Each option's help text in a ``--help`` output, with the line wrapping undone."""
    found = {}
    starts = list(OPTION_START.finditer(output))
    for start, end in zip(starts, [*starts[1:], None]):
        text = output[start.end():end.start() if end else len(output)]
        text = text.split("\n\n", 1)[0]
        found[start.group(1)] = " ".join(text.split())
    return found


def help_of(*argv: str) -> dict[str, str]:
    """``--help`` at a width where nothing wraps (argparse breaks lines at hyphens, as in ``ja-fairness-audit``)."""
    run = subprocess.run([sys.executable, *argv, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "1000"})
    assert run.returncode == 0, run.stderr
    return help_texts(run.stdout)


def test_pytest_and_generate_show_the_shared_options_with_the_same_defaults_and_help():
    audit = help_of("-m", "pytest", "-p", "no:cacheprovider")
    generate = help_of("-m", "fairness_core.cli", "generate")
    shared = sorted({o.flag for _, o in run_options(AUDIT)} & {o.flag for _, o in run_options(GENERATE)})
    assert len(shared) >= 15, shared
    assert {flag: audit[flag] for flag in shared} == {flag: generate[flag] for flag in shared}
    assert "(default: gender)" in audit["--attributes"] and "(default: 0)" in audit["--seed"]


def test_each_command_takes_its_own_options():
    flags = {command: {option.flag for _, option in run_options(command)} for command in (AUDIT, GENERATE, PLAN)}
    assert {"--audit-json", "--baseline", "--lexicon", "--sentiment"} <= flags[AUDIT] - flags[GENERATE]
    assert {"--output", "--shard"} <= flags[GENERATE] - flags[AUDIT]
    # plan's own, the format and sampling it plans for, and the evaluations' options that change what is asked (HONEST's
    # ratio, BBQ's questions and scorer)
    assert flags[PLAN] == {"--attributes", "--thresholds", "--prompt-format", "--sampling", "--ratio", "--bbq-file",
                           "--bbq-subset", "--bbq-scorer", "--baseline"}  # plan --baseline: what a certification against it takes


def test_an_option_declared_twice_differently_is_refused(monkeypatch):
    from fairness_core.backends.catalog import BACKENDS

    entry = BACKENDS["jsonl"]
    clash = type(entry)(entry.factory, entry.summary, (Option("--seed", "another seed", int, 7),))
    monkeypatch.setitem(BACKENDS._entries, "jsonl", clash)
    with pytest.raises(OptionTableError, match=r"The option --seed is declared twice, differently: by the run and "
                                               r"by --backend=jsonl"):
        run_options(AUDIT)


def test_a_demo_name_resolves_to_its_folder_with_its_defaults():
    reference = resolve_model("demo:biased", reads_files=True)
    assert reference.name == "demo:biased" and reference.local
    assert Path(reference.location).name == "biased-sentencepiece" and reference.defaults == {"sentiment": "lexicon"}


def test_a_hub_id_or_a_served_name_passes_as_given():
    reference = resolve_model("rinna/japanese-gpt-neox-small", reads_files=True)
    assert (reference.location, reference.local, dict(reference.defaults)) == ("rinna/japanese-gpt-neox-small", False, {})


def test_a_path_must_be_a_folder_only_where_the_backend_reads_the_model(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(AuditUsageError, match=rf"^--model={re.escape(missing)}: no such directory\.$"):
        resolve_model(missing, reads_files=True)
    assert resolve_model(missing, reads_files=False).location == missing
    assert resolve_model(str(tmp_path), reads_files=True).local


def test_the_thresholds_file_is_found_by_one_rule(tmp_path):
    given = tmp_path / "mine.yaml"
    assert resolve_thresholds(given, root=tmp_path) == given
    assert resolve_thresholds(None, root=tmp_path).parent.name == "data"  # the package's own
    (tmp_path / "thresholds.yaml").write_text("x", encoding="utf-8")
    assert resolve_thresholds(None, root=tmp_path) == tmp_path / "thresholds.yaml"


def test_the_project_root_is_found_as_pytest_finds_its_rootdir(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert project_root(inner) == tmp_path


@pytest.mark.parametrize("text", ["3/2", "0/1", "1", "a/b", "1/0"])
def test_a_bad_shard_names_what_is_allowed(text):
    with pytest.raises(Exception, match=rf"must be i/n with 1 <= i <= n, e\.g\. 1/3\. Got '{re.escape(text)}' instead\."):
        shard(text)


def literal_option_reads(source: str) -> list[str]:
    """Where ``source`` reads an option's value by a literal name: ``getoption("x")``, ``options.value("x")``, and
    ``values["x"]`` or ``values.get("x")`` on the run's mapping of option values (named ``values`` throughout)."""
    import ast

    names = {option.dest for command in (AUDIT, GENERATE, PLAN) for _, option in run_options(command)}
    names |= {f"--{name.replace('_', '-')}" for name in names}
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and isinstance(node.value, ast.Name) and node.value.id == "values"):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
              and isinstance(node.args[0], ast.Constant)
              and (node.func.attr in {"getoption", "value"}
                   or (node.func.attr == "get" and isinstance(node.func.value, ast.Name) and node.func.value.id == "values"))):
            key = node.args[0].value
        if isinstance(key, str) and key in names:
            found.append(f"line {node.lineno}: {key!r}")
    return found


def test_the_literal_reader_finds_literal_reads():
    assert literal_option_reads('config.getoption("seed")\nvalues["no_cache"]\nvalues.get("model")\n'
                                'options.value("sentiment")\nvalues.get(SEED.dest)\nfingerprint["model"]') == [
        "line 1: 'seed'", "line 2: 'no_cache'", "line 3: 'model'", "line 4: 'sentiment'"]


def test_no_option_is_read_by_a_literal_name_outside_the_option_table():
    """Every option is read through its ``Option`` (``SEED.dest``): a renamed option cannot leave a reader behind."""
    table = REPO / "fairness_core" / "run" / "options.py"
    found = {str(path.relative_to(REPO)): reads for path in sorted((REPO / "fairness_core").rglob("*.py"))
             if path != table and (reads := literal_option_reads(path.read_text(encoding="utf-8")))}
    assert found == {}
