"""The package's layering: imports run one way, and no generic module imports an evaluation.

The import graph is read from the source (every ``import`` and ``from ... import`` of a ``fairness_core``
module, at top level, inside functions and under ``TYPE_CHECKING``: a type-only import still ties two
modules' ideas together), so that no new dependency is needed and nothing has to be imported to check it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fairness_core"
#: What generic code may import of ``evaluations/``: the registry, the base class and the prompt types.
EVALUATION_API = ("fairness_core.evaluations", "fairness_core.evaluations.base", "fairness_core.evaluations.prompts")


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


def generic(module: str) -> bool:
    """A module outside the evaluations' packages and the demo models (which are trained for the evaluations)."""
    return not module.startswith(("fairness_core.evaluations", "fairness_core.demo"))


def test_no_generic_module_imports_an_evaluation():
    """An evaluation's code is reached through the registry and the base class only, never imported by name."""
    graph = import_graph()
    found = {module: sorted(target for target in targets
                            if target.startswith("fairness_core.evaluations") and target not in EVALUATION_API)
             for module, targets in graph.items() if generic(module)}
    assert not {module: targets for module, targets in found.items() if targets}


def test_the_backends_do_not_depend_on_the_demo_models():
    """``demo`` builds on ``backends`` (token ids); a backend receives ``--model`` resolved, never a demo name."""
    graph = import_graph()
    assert not {module for module, targets in graph.items()
                if module.startswith("fairness_core.backends") and any(t.startswith("fairness_core.demo") for t in targets)}


def longest_chain(graph: dict[str, frozenset[str]]) -> list[str]:
    """The longest import chain of an acyclic graph (module first, what it imports next)."""
    @cache
    def chain(module: str) -> tuple[str, ...]:
        return (module, *max((chain(target) for target in graph[module]), key=len, default=()))

    return list(max((chain(module) for module in graph), key=len))


def test_the_layering_is_measured():
    """Edges and the longest chain, for the record (the closing note of a restructuring quotes them)."""
    graph = import_graph()
    edges = sum(len(targets) for targets in graph.values())
    chain = longest_chain(graph)
    assert edges > len(graph) and len(chain) >= 3
    print(f"{len(graph)} modules, {edges} import edges, longest chain {len(chain)}: {' -> '.join(chain)}")
