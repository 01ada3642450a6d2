"""The package's layering: imports run one way, down the declared layers, and no generic module imports an evaluation.

The import graph is read from the source (every ``import`` and ``from ... import`` of a ``fairness_core``
module, at top level, inside functions and under ``TYPE_CHECKING``: a type-only import still ties two
modules' ideas together), so that no new dependency is needed and nothing has to be imported to check it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fairness_core"

#: The floors of the house, ground first (docs/architecture.md): a module imports its own floor's modules and
#: those below, never one above.  Each floor is a list of module prefixes (``config`` is ``config`` and ``config.*``).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("errors", "registry", "config", "japanese", "data")),
    ("backends", ("backends",)),
    ("pure computation", ("statistics", "scorecard", "sampling")),
    ("reporting", ("reporting",)),
    ("api", ("api",)),
    ("gates", ("gates",)),
    ("evaluations", ("evaluations",)),
    ("run", ("run",)),
    ("doors", ("cli", "pytest_plugin", "audits", "demo")),
)


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


def floor(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s floor (the package itself, ``fairness_core``, is the ground)."""
    relative = module.removeprefix("fairness_core").removeprefix(".")
    if not relative:
        return 0
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(relative == prefix or relative.startswith(prefix + ".") for prefix in prefixes):
            return index
    raise AssertionError(f"{module} is on no floor of LAYERS: give its folder one")


def upward_imports(graph: dict[str, frozenset[str]]) -> list[str]:
    """Every import from a lower floor to a higher one, as ``a (floor) -> b (floor)``."""
    return sorted(f"{module} ({LAYERS[floor(module)][0]}) -> {target} ({LAYERS[floor(target)][0]})"
                  for module, targets in graph.items() for target in targets if floor(target) > floor(module))


def test_the_floor_finder_finds_an_upward_import():
    graph = {"fairness_core.config.x": frozenset({"fairness_core.run.session"}), "fairness_core.run.session": frozenset()}
    assert upward_imports(graph) == ["fairness_core.config.x (foundation) -> fairness_core.run.session (run)"]


def test_every_module_is_on_a_floor():
    assert all(floor(module) >= 0 for module in import_graph())


def test_imports_run_down_the_floors():
    assert upward_imports(import_graph()) == []


def test_only_the_doors_import_the_session():
    importers = {name for name, targets in import_graph().items() if "fairness_core.run.session" in targets}
    assert importers <= {"fairness_core.pytest_plugin", "fairness_core.cli", "fairness_core.run.startup"}


def generic(module: str) -> bool:
    """A module outside the evaluations' packages and the demo models (which are trained for the evaluations)."""
    return not module.startswith(("fairness_core.evaluations", "fairness_core.demo"))


def test_no_generic_module_imports_an_evaluation():
    """An evaluation's code is reached through :mod:`fairness_core.api` only: nothing outside ``evaluations/`` and
    ``demo/`` imports ``fairness_core.evaluations`` or anything in it."""
    graph = import_graph()
    found = {module: sorted(target for target in targets if target.startswith("fairness_core.evaluations"))
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
    floors = len({floor(module) for module in graph})
    print(f"{len(graph)} modules, {edges} import edges, {floors} floors, 0 upward imports, longest chain {len(chain)}: "
          f"{' -> '.join(chain)}")
