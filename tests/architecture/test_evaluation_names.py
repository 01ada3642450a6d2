"""No generic module names an evaluation: a new evaluation is one folder, and nothing outside it knows it.

Every module of ``fairness_core`` outside ``evaluations/`` and ``demo/`` is read
as a syntax tree.  Each identifier (names, attributes, definitions, arguments,
keywords, imports) and each string constant that is not a docstring is checked
against the registered evaluations: no evaluation's name, and none of its
metric or option names.  An evaluation's name counts anywhere inside a word
(``HonestTemplate`` names HONEST); a metric or option name counts as a whole
part of a name, as ``_`` and ``-`` separate them (``--ratio`` is found in
``effect_ratio``, not in ``generation``).  Comments are not read: they are no
code.

An evaluation named with an ordinary word of code (:data:`CODE_WORDS`: the
``names`` evaluation) would be "found" in every ``names = [...]`` and in every
message that says "names"; so that name counts where the word cannot be the
code's own: as a whole part of a string without whitespace (a key, an id, a
path: ``"names"``, ``"names.occupation_share_gap"``, ``"chat-names"``), as a
component of an imported module's path (``evaluations.names``), and as a
capitalised part of a class name (``NamesSection``).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import get_args

import pytest

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.evaluation import Direction
from fairness_core.api.refusals import REFUSAL_SPECS
from fairness_core.api.withheld import WITHHELD_SPECS

PACKAGE = Path(__file__).resolve().parents[2] / "fairness_core"
#: Where an evaluation's name belongs: the evaluations themselves, and the demo models trained for them.
OWN_PLACES = ("evaluations", "demo")


def generic_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py")
                  if path.relative_to(PACKAGE).parts[0] not in OWN_PLACES)


def shared_vocabulary() -> frozenset[str]:
    """What :mod:`fairness_core.api` declares for every evaluation, so no evaluation owns it: the directions a metric
    can be better in (``ratio``) and the refusal and withheld metrics that every evaluation of chat answers reports."""
    return frozenset({*get_args(Direction), *(spec.name for spec in (*REFUSAL_SPECS, *WITHHELD_SPECS))})


@cache
def forbidden() -> tuple[frozenset[str], frozenset[str]]:
    """(evaluation names, metric and option names) of every registered evaluation, lower-cased, less the api's own
    vocabulary."""
    names, parts = set(), set()
    for name in EVALUATIONS:
        evaluation = EVALUATIONS.load(name)
        names.add(name.lower())
        parts |= {spec.name.lower() for spec in evaluation.metric_specs}
        for option in evaluation.options:
            parts |= {option.flag.lstrip("-").lower(), option.dest.lower()}
    return frozenset(names), frozenset(parts - shared_vocabulary())


#: Evaluation names that are also ordinary words of code and prose; where they count: see the module's docstring.
CODE_WORDS = frozenset({"names"})
#: The kinds of text :func:`words` reads.
IDENTIFIER, CLASS, MODULE, STRING = "identifier", "class", "module", "string"


def _names_a_code_word(name: str, text: str, kind: str) -> bool:
    """Whether ``text`` (of ``kind``) names the evaluation ``name``, one of :data:`CODE_WORDS`."""
    if kind == CLASS:
        return name in (part.lower() for part in re.findall(r"[A-Z][a-z0-9]*", text))
    if kind == MODULE:
        return name in text.lower().split(".")
    if kind == STRING and not re.search(r"\s", text):
        return name in re.split(r"[^a-z0-9]+", text.lower())
    return False


def found_in(text: str, kind: str = STRING) -> list[str]:
    """The forbidden names that ``text`` (an identifier, a class or module name, or a string constant) holds."""
    names, parts = forbidden()
    lowered = text.lower()
    hits = [name for name in names if (_names_a_code_word(name, text, kind) if name in CODE_WORDS else name in lowered)]
    hits += [part for part in parts if re.search(rf"(?<![a-z0-9]){re.escape(part)}(?![a-z0-9])", lowered)]
    return hits


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (a module's, a class's or a function's first statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def words(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, kind, text) of every identifier, class name, imported module and non-docstring string constant."""
    docstrings = _docstrings(tree)
    out: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            out.append((line, IDENTIFIER, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((line, IDENTIFIER, node.attr))
        elif isinstance(node, ast.ClassDef):
            out.append((line, CLASS, node.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((line, IDENTIFIER, node.name))
        elif isinstance(node, ast.arg):
            out.append((line, IDENTIFIER, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append((line, IDENTIFIER, node.arg))
        elif isinstance(node, ast.alias):
            # ``import a.b`` names a module; ``from a import b`` an object (its module is the ImportFrom's)
            out += [(line, MODULE if "." in node.name else IDENTIFIER, node.name)]
            out += [(line, IDENTIFIER, node.asname)] if node.asname else []
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((line, MODULE, node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            out.append((line, STRING, node.value))
    return out


def test_the_check_sees_names_in_code_but_not_in_docstrings():
    tree = ast.parse('"""About honest."""\nfrom x.honest import y\ndef f(pool_ratio, refusal_gap):\n    """honest"""\n'
                     '    return {"metric": "mean_gap", "generation": 1, "direction": "ratio"}\n')
    hits = sorted(hit for _, kind, text in words(tree) for hit in found_in(text, kind))
    assert hits == ["honest", "mean_gap", "pool_ratio"]


@pytest.mark.parametrize(("text", "kind", "named"), [
    ("names", IDENTIFIER, False), ("demo_names", IDENTIFIER, False), ("vietnamese", STRING, False),
    ("every group needs names", STRING, False), ("fairness_core.run.demo_names", MODULE, False),
    ("names", STRING, True), ("names.occupation_share_gap", STRING, True), ("demo:chat-names", STRING, True),
    ("fairness_core.evaluations.names.tasks", MODULE, True), ("NamesSection", CLASS, True), ("DemoNames", CLASS, True),
])
def test_a_code_word_evaluation_is_found_where_the_word_cannot_be_the_codes_own(text, kind, named):
    assert _names_a_code_word("names", text, kind) is named


@pytest.mark.parametrize("path", generic_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_generic_module_names_an_evaluation(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = [f"line {line}: {text[:60]!r} names {', '.join(sorted(hits))}"
             for line, kind, text in words(tree) if (hits := found_in(text, kind))]
    assert not named, f"{path.relative_to(PACKAGE)} names an evaluation:\n" + "\n".join(named)
