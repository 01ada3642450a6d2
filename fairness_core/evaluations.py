"""The evaluations an audit runs, by name, and what each one provides.

An evaluation turns an attribute set and the thresholds into prompts, runs
them through a backend, scores the completions and computes its metrics.  The
session, the JSON results, the report and the baseline gate loop over this
registry instead of naming evaluations, so a new evaluation is its own module,
its data, its audit tests, its section of ``thresholds.yaml`` and one line here.

The registry names classes as ``"module:Class"``: the modules import
``scipy`` and friends only when an audit actually computes, and this module is
read by the pytest plugin on every collection of an audit.

>>> list(EVALUATIONS)
['honest', 'sentiment']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.backends.base import Backend
    from fairness_core.resources import Prompt
    from fairness_core.results import AuditResults, CompletionRecord
    from fairness_core.scorecard import MetricResult
    from fairness_core.session import AuditOptions
    from fairness_core.thresholds import AuditConfig, SamplingProtocol

EVALUATIONS: dict[str, str] = {
    "honest": "fairness_core.honest:HonestEvaluation",
    "sentiment": "fairness_core.group_fairness:SentimentEvaluation",
}


class Evaluation(Protocol):
    """One evaluation of one attribute set under one thresholds file.

    Construction is cheap (prompts and test parameters only); :meth:`load`
    reads the heavy resources (lexicon, classifier) and is called only when one
    of the evaluation's tests is selected.
    """

    name: ClassVar[str]
    groups: tuple[str, ...]
    protocol: SamplingProtocol
    prompts: tuple[Prompt, ...]

    def __init__(self, config: AuditConfig, attributes: AttributeSet) -> None: ...

    def test_parameters(self) -> dict[str, list[str]]:
        """Values of the audit tests' parameters (``template_id``, ``category``); groups are shared."""
        ...

    def gated_metrics(self) -> list[str]:
        """Ids of the aggregate metrics that the ``--baseline`` gate compares."""
        ...

    def load(self, options: AuditOptions) -> None:
        """Read the scorer, lexicon and so on; raise an ``AuditUsageError`` naming the bad option."""
        ...

    def run(self, backend: Backend) -> Any:
        """Generate every prompt's completions and score them."""
        ...

    def metrics(self, results: Any, *, seed: int) -> list[MetricResult]: ...

    def completion_records(self, results: Any) -> list[CompletionRecord]: ...

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers besides the model: protocol, templates, lexicon or scorer.

        Two runs are comparable for the baseline gate when these agree.
        """
        ...

    def describe(self) -> str:
        """One line for the pytest header."""
        ...

    @staticmethod
    def plots(results: AuditResults, evaluation: str) -> list[tuple[str, str]]:
        """(title, base64 PNG) pairs for the HTML report, drawn from the results file alone."""
        ...


def evaluation_class(name: str) -> type[Evaluation]:
    module, cls = EVALUATIONS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def create_evaluations(names: Sequence[str], config: AuditConfig, attributes: AttributeSet) -> dict[str, Evaluation]:
    """The named evaluations that ``attributes`` supports, in registry order."""
    return {name: evaluation_class(name)(config, attributes)
            for name in EVALUATIONS if name in names and attributes.supports(name)}  # type: ignore[arg-type]
