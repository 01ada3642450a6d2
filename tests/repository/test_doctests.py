"""The examples in the modules' docstrings run and give what they show.

Every module of ``fairness_core`` whose source holds an example (``>>>``) is
run: an example can never go stale unnoticed, and none is left out by a list
that someone forgot to extend.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fairness_core"


def modules_with_examples() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_foundation_modules_have_examples():
    assert {"fairness_core.statistics", "fairness_core.registry", "fairness_core.api.evaluation",
            "fairness_core.run.options"} <= set(modules_with_examples())


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted >= 1, f"{name} holds '>>> ' outside a docstring: make it an example or rephrase it"
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed (see above)"
