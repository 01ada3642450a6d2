"""An evaluation is built once from its parameters and never changed after (the design guide's "construct from
parameters, never mutate").

Every registered evaluation, the base class and the stub third-party
evaluation are checked: none has a ``configure`` that would take option values
after construction; each constructor takes the run's option values; and, read
as a syntax tree, no method but ``__init__`` assigns the prompts or the groups,
and ``build_prompts`` and ``build_groups`` assign nothing (no attribute is set
as a side effect of computing another).
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from pathlib import Path

import pytest

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.evaluation import Evaluation

STUB = Path(__file__).resolve().parents[1] / "data" / "stub_evaluation"
#: What only the constructor sets: what the evaluation asks, and of whom.
BUILT_ONCE = frozenset({"prompts", "groups"})
#: Methods that compute a part of the construction and return it.
BUILDERS = frozenset({"build_prompts", "build_groups"})


def _stub_class() -> type[Evaluation]:
    sys.path.insert(0, str(STUB))
    try:
        from stub_evaluation.evaluation import StubEvaluation
    finally:
        sys.path.remove(str(STUB))
    return StubEvaluation


def evaluation_classes() -> list[type[Evaluation]]:
    return [Evaluation, *(EVALUATIONS.load(name) for name in EVALUATIONS), _stub_class()]


def _self_assignments(function: ast.FunctionDef) -> set[str]:
    """The attributes of ``self`` that ``function`` assigns (plainly, augmented or annotated)."""
    found = set()
    for node in ast.walk(function):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    found.add(part.attr)
    return found


def _methods(cls: type) -> list[ast.FunctionDef]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    return [node for node in tree.body[0].body if isinstance(node, ast.FunctionDef)]


@pytest.mark.parametrize("cls", evaluation_classes(), ids=lambda cls: cls.__name__)
def test_an_evaluation_has_no_configure_and_takes_its_option_values_when_built(cls):
    assert not hasattr(cls, "configure")
    assert list(inspect.signature(cls).parameters) == ["config", "attributes", "values"]


@pytest.mark.parametrize("cls", evaluation_classes(), ids=lambda cls: cls.__name__)
def test_only_the_constructor_sets_the_prompts_and_groups_and_builders_set_nothing(cls):
    for method in _methods(cls):
        assigned = _self_assignments(method)
        if method.name in BUILDERS:
            assert not assigned, f"{cls.__name__}.{method.name} sets {sorted(assigned)} besides returning its part"
        elif method.name != "__init__":
            assert not assigned & BUILT_ONCE, f"{cls.__name__}.{method.name} reassigns {sorted(assigned & BUILT_ONCE)}"


def test_the_check_finds_a_builder_with_a_side_effect_and_a_method_that_reassigns_prompts():
    class Mutating(Evaluation):
        def build_prompts(self, attributes):
            self.questions = ()
            return ()

        def configure(self, values):
            self.prompts = ()

    found = {method.name: _self_assignments(method) for method in _methods(Mutating)}
    assert found == {"build_prompts": {"questions"}, "configure": {"prompts"}}
