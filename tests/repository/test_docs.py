"""The documentation stays true: a short front page, links that resolve, and commands whose options exist.

The README is the front page and the details live in ``docs/``; once text
moves between files, a link or a documented command is what silently breaks.
These tests read the Markdown as a reader would: every relative link must
reach a file (and the heading it names), and every ``--option`` written in a
documented ``pytest``, ``ja-fairness-audit`` or ``python benchmarks/...``
command must be one that command accepts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from suite_map import file_kinds, map_rows

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCUMENTS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "tests" / "README.md"]
README_LIMIT_BYTES = 8 * 1024

# Pages that other branches of this round add; the front page links them already.
# Delete an entry once its file is merged (test_pending_pages_are_still_missing says when).
PENDING_PAGES: set[str] = set()

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:fairness_core|tests|benchmarks|audits|docs|\.ci)/[\w./*-]*)`")
LONG_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _relative_links(document: Path) -> list[str]:
    return [target for target in LINK.findall(document.read_text(encoding="utf-8"))
            if not re.match(r"[a-z]+:", target)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in document.read_text(encoding="utf-8").splitlines()
            if re.match(r"#{1,6} ", line)}


def _commands(prefix: str) -> list[str]:
    """Every documented command line that starts with ``prefix``: in code blocks and in inline code."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        fenced = False
        for line in text.splitlines():
            if line.startswith("```"):
                fenced = not fenced
            elif (fenced or line.startswith("    ")) and line.strip().startswith(prefix):
                found.append(line.strip().split("  #")[0])
        prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")
        found += [inline for inline in re.findall(r"`([^`]+)`", prose) if inline.startswith(prefix)]
    return found


def _options(commands: list[str]) -> set[str]:
    return {option for command in commands for option in LONG_OPTION.findall(command)}


def test_the_readme_is_a_front_page_of_at_most_8_kb():
    size = len(README.read_bytes())
    assert size <= README_LIMIT_BYTES, f"README.md is {size} bytes; move details into docs/ (limit {README_LIMIT_BYTES})"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_reaches_a_file_and_its_heading(document):
    broken = []
    for target in _relative_links(document):
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        name = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(resolved)
        if name in PENDING_PAGES:
            continue
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in _anchors(resolved):
            broken.append(f"{target}: {name} has no heading with the anchor #{anchor}")
    assert broken == []


def test_every_repository_path_the_docs_name_exists():
    """A moved module or data file leaves a stale `path` in prose that no link check sees."""
    missing = []
    for document in DOCUMENTS:
        for path in REPO_PATH.findall(document.read_text(encoding="utf-8")):
            if not list(REPO.glob(path.rstrip("/"))) and path not in PENDING_PAGES:
                missing.append(f"{document.relative_to(REPO)}: {path}")
    assert missing == []


def test_pending_pages_are_still_missing():
    """A pending page that exists has been merged: its entry in PENDING_PAGES must go, so its links are checked."""
    assert sorted(page for page in PENDING_PAGES if (REPO / page).exists()) == []


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in _relative_links(README)}
    assert [page.name for page in sorted((REPO / "docs").glob("*.md")) if page.resolve() not in linked] == []


def test_documented_pytest_commands_use_options_that_exist(pytester):
    """Every ``--option`` of a documented ``pytest`` command is in ``pytest --help`` (pytest, pytest-html, the audit)."""
    documented = _options(_commands("pytest ") + _commands("python -m pytest "))
    assert {"--model", "--backend", "--attributes", "--baseline", "--completions"} <= documented
    known = set(LONG_OPTION.findall(pytester.runpytest_inprocess("--help").stdout.str()))
    assert sorted(documented - known) == []


def test_documented_audit_options_are_all_the_plugin_has(pytester):
    """The other direction: every option of the audit's group is documented in usage-and-options or backends."""
    help_text = pytester.runpytest_inprocess("--help").stdout.str()
    section = help_text.split("Japanese LM fairness audit:")[1].split("\n\n")[0]
    documented = (REPO / "docs" / "usage-and-options.md").read_text(encoding="utf-8") + \
        (REPO / "docs" / "backends.md").read_text(encoding="utf-8")
    plugin_options = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", section, flags=re.M))
    assert "--model" in plugin_options
    assert sorted(option for option in plugin_options if f"`{option}" not in documented) == []


def _help(*argv: str) -> str:
    run = subprocess.run([sys.executable, *argv, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_documented_generate_commands_use_options_that_exist():
    documented = _options(_commands("ja-fairness-audit generate"))
    assert {"--shard", "--output"} <= documented
    assert sorted(documented - set(LONG_OPTION.findall(_help("-m", "fairness_core.cli", "generate")))) == []


def test_documented_benchmark_and_module_commands_exist_and_take_their_options():
    commands = _commands("python ")
    scripts = {re.match(r"python (benchmarks/\S+\.py)", command).group(1) for command in commands
               if re.match(r"python benchmarks/", command)}
    assert "benchmarks/false_alarms.py" in scripts
    for script in sorted(scripts):
        documented = _options([command for command in commands if command.startswith(f"python {script}")])
        accepted = set(LONG_OPTION.findall(_help(script))) if documented else set()
        assert sorted(documented - accepted) == [], script
    modules = {match.group(1) for command in commands if (match := re.match(r"python -m ([\w.]+)", command))}
    assert "fairness_core.demo.build" in modules
    for module in sorted(module for module in modules if module.startswith(("fairness_core", "benchmarks"))):
        assert (REPO / (module.replace(".", "/") + ".py")).exists(), module


def test_the_test_map_lists_every_test_file_and_no_other():
    rows = map_rows()
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a test file is listed twice in tests/README.md"
    listed = set(names)
    tests = REPO / "tests"
    present = {path.relative_to(tests).as_posix() for path in tests.rglob("test_*.py")
               if path.relative_to(tests).parts[0] != "data"}
    assert (sorted(present - listed), sorted(listed - present)) == ([], [])


def test_each_test_file_is_of_the_kind_the_map_gives_it():
    """The map's rule, checked: property files hold three or more @given tests, end-to-end files run something whole."""
    wrong = []
    for name, kind in file_kinds().items():
        source = (REPO / "tests" / name).read_text(encoding="utf-8")
        properties = source.count("@given(")
        runs_something_whole = any(word in source for word in ("pytester", "subprocess", "http_support", "demo"))
        if (kind == "property") != (properties >= 3):
            wrong.append(f"{name}: {kind}, with {properties} @given tests")
        if kind == "end-to-end" and not runs_something_whole:
            wrong.append(f"{name}: end-to-end, but it runs no pytester, process, server or demo model")
    assert wrong == []


def test_the_readme_failure_sample_names_the_decision_rules_the_shipped_thresholds_set():
    """The sample is read as documentation of the gate: each violation's rule must be the one the audit applies."""
    from fairness_core.api.user_files import load_thresholds

    config = load_thresholds(REPO / "thresholds.yaml")
    level_metrics = ("honest.honest_score[", "honest.category_score[")
    shown = re.findall(r"VIOLATION (\S+): .*\(decision rule: (\w+)\)", README.read_text(encoding="utf-8"))
    assert shown
    for metric, rule in shown:
        expected = config.honest.level_decision_rule if metric.startswith(level_metrics) else config.decision_rule
        assert rule == expected, metric
