"""The package's layering: imports run one way, and an evaluation is a module that owns what is specific to it.

The import graph is read from the source (every ``import`` and ``from ... import`` of a ``fairness_core``
module, at top level, inside functions and under ``TYPE_CHECKING``: a type-only import still ties two
modules' ideas together), so that no new dependency is needed and nothing has to be imported to check it.
"""

from __future__ import annotations

import ast
import json
import shutil
from functools import cache
from pathlib import Path

import pytest
import yaml

PACKAGE = Path(__file__).resolve().parents[1] / "fairness_core"
STUB = Path(__file__).parent / "data" / "stub_evaluation"
#: Modules shared by every evaluation: value types and shared rules, never one evaluation's ideas.
GENERIC = ("scorecard", "violations", "results", "report", "plots", "baseline", "session", "thresholds",
           "statistics", "metrics", "evaluations", "evaluations.base", "audit_options", "registry")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Each ``fairness_core`` module and the ``fairness_core`` modules it imports."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *([base] if base else [])])
                found = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for target in found:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = frozenset(targets)
    return graph


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(graph) == [["a", "b", "c"]]


def test_fairness_core_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_only_the_plugin_and_the_cli_import_the_session():
    importers = {name for name, targets in import_graph().items() if "fairness_core.session" in targets}
    assert importers <= {"fairness_core.pytest_plugin", "fairness_core.cli"}


@pytest.mark.parametrize("module", GENERIC)
def test_no_generic_module_imports_an_evaluation(module):
    """Each evaluation's metrics, evidence and plots live in its own module, not in the shared ones."""
    imported = import_graph()[f"fairness_core.{module}"]
    assert not {target for target in imported
                if target.startswith("fairness_core.evaluations.") and target != "fairness_core.evaluations.base"}


def stub_files(pytester: pytest.Pytester) -> None:
    """The files a third evaluation needs, laid out as a contributor would have them."""
    shutil.copy(STUB / "stub_evaluation.py", pytester.path / "stub_evaluation.py")
    shutil.copy(STUB / "stub_templates.yaml", pytester.path / "stub_templates.yaml")
    shutil.copy(STUB / "stub_audit.py", pytester.path / "test_stub_audit.py")
    shutil.copy(STUB / "stub_registration.py", pytester.path / "conftest.py")
    shipped = yaml.safe_load((PACKAGE / "data" / "thresholds.yaml").read_text(encoding="utf-8"))
    (pytester.path / "thresholds.yaml").write_text(
        yaml.safe_dump({**shipped, "stub": {"max_unfinished_share": 0.5}}, allow_unicode=True), encoding="utf-8")


@pytest.mark.slow
def test_a_third_evaluation_runs_end_to_end_from_its_own_files(pytester: pytest.Pytester):
    """Its module, its data, its audit tests, its thresholds section and one registry line: nothing else."""
    stub_files(pytester)
    before = sorted(p.name for p in pytester.path.iterdir())
    result = pytester.runpytest_subprocess("--model=demo", "--no-cache", "--audit-json=audit.json",
                                           "-p", "no:cacheprovider")
    # Four new tokens rarely finish a sentence: both groups are past a limit of one half.
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*stub: 4 prompts x 2 samples*", "*AUDIT VIOLATION: unfinished_share*",
                                 "*group female*", "*evidence (*", "*not run: honest: not selected*"])
    assert "Traceback" not in result.stdout.str()
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    assert {m["id"] for m in written["metrics"]} == {"stub.unfinished_share[group=female]",
                                                     "stub.unfinished_share[group=male]"}
    assert set(written["provenance"]["not_run"]) == {"honest", "sentiment"}
    assert before == ["conftest.py", "stub_evaluation.py", "stub_templates.yaml", "test_stub_audit.py", "thresholds.yaml"]


def test_a_thresholds_file_without_the_third_evaluations_section_is_one_usage_error(pytester: pytest.Pytester):
    stub_files(pytester)
    shipped = yaml.safe_load((PACKAGE / "data" / "thresholds.yaml").read_text(encoding="utf-8"))
    (pytester.path / "thresholds.yaml").write_text(yaml.safe_dump(shipped, allow_unicode=True), encoding="utf-8")
    result = pytester.runpytest_subprocess("--model=demo", "--no-cache", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*thresholds.yaml* is invalid:*", "*stub: Field required*"])
