"""The examples in the modules' docstrings run and give what they show.

A module is listed only if it has at least one example: a listed module without any would pass with
nothing tried.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = (
    "fairness_core.errors",
    "fairness_core.japanese",
    "fairness_core.lexicon",
    "fairness_core.matching",
    "fairness_core.colloquial",
    "fairness_core.resources",
    "fairness_core.thresholds",
    "fairness_core.metrics",
    "fairness_core.evaluations.honest",
    "fairness_core.violations",
    "fairness_core.backends.base",
    "fairness_core.backends.cpu_features",
    "fairness_core.backends.dtype_choice",
    "fairness_core.backends.registry",
    "fairness_core.backends.options",
    "fairness_core.backends.openai",
    "fairness_core.backends.jsonl",
    "fairness_core.backends.vllm",
    "fairness_core.backends.versions",
    "fairness_core.cli",
    "fairness_core.demo.registry",
    "fairness_core.evaluations.sentiment",
    "fairness_core.health",
    "fairness_core.locations",
    "fairness_core.outputs",
    "fairness_core.report",
    "fairness_core.scorecard",
    "fairness_core.sentiment",
    "fairness_core.statistics",
    "fairness_core.registry",
    "fairness_core.evaluations",
    "fairness_core.evaluations.base",
    "fairness_core.plots",
    "fairness_core.audit_options",
    "fairness_core.attribute_sets",
    "fairness_core.yaml_files",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted >= 1, f"{name} has no docstring example: add one, or take it off the list"
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed (see above)"
