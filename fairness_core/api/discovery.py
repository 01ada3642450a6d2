"""The evaluations an audit runs, found through the ``fairness_core.evaluations`` entry-point group.

An evaluation is a package with an :class:`~fairness_core.api.evaluation.Evaluation`
subclass, registered in its distribution's ``pyproject.toml``::

    [project.entry-points."fairness_core.evaluations"]
    honest = "fairness_core.evaluations.honest.evaluation:HonestEvaluation"

so that pytest, ``ja-fairness-audit`` and an installed wheel see the same set,
and a third-party package can ship an evaluation of its own.  The registry
imports a class only when it is used, and checks what it imports: a subclass of
``Evaluation`` whose ``name`` is its entry point's.  Evaluations run in the
order of their names.

>>> list(EVALUATIONS)
['bbq', 'honest', 'names', 'sentiment']
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from fairness_core.errors import AuditUsageError
from fairness_core.registry import Registry

ENTRY_POINT_GROUP = "fairness_core.evaluations"


class EvaluationRegistryError(AuditUsageError):
    """An unknown evaluation name, or a registered evaluation that cannot be used."""


def discover() -> dict[str, str]:
    """Every evaluation's entry point, as ``name -> "module:Class"``, by name."""
    found: dict[str, str] = {}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if found.get(entry.name, entry.value) != entry.value:
            raise EvaluationRegistryError(
                f"Two installed packages register the evaluation {entry.name!r}: {found[entry.name]} and "
                f"{entry.value}. Uninstall one of them.")
        found[entry.name] = entry.value
    if not found:
        raise EvaluationRegistryError(
            f"No evaluation is registered in the {ENTRY_POINT_GROUP!r} entry-point group: the package's metadata "
            f"is missing or out of date. Reinstall it (pip install ja-fairness-audit, or pip install -e . "
            f"in a checkout).")
    return found


def _check(name: str, loaded: Any) -> str | None:
    from fairness_core.api.evaluation import Evaluation

    if not (isinstance(loaded, type) and issubclass(loaded, Evaluation)):
        return "is not a subclass of fairness_core.api.evaluation.Evaluation"
    if getattr(loaded, "name", None) != name:
        return f"declares name = {getattr(loaded, 'name', None)!r}; an evaluation's name is its entry point's"
    return None


EVALUATIONS: Registry[str] = Registry("evaluation", discover, error=EvaluationRegistryError, check=_check)
