"""What an evaluation provides, and how the session finds and builds the registered ones.

An evaluation turns an attribute set and the thresholds into prompts, runs
them through a backend, scores the completions and computes its metrics; it
also says which metrics the ``--baseline`` gate compares, shows evidence for a
failing metric and draws its plots.  The session, the JSON results, the report
and the baseline gate loop over the registry
(:data:`fairness_core.evaluations.EVALUATIONS`) instead of naming evaluations.

>>> [evaluation_class(name).name for name in EVALUATIONS]
['honest', 'sentiment']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from fairness_core.evaluations import EVALUATIONS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.audit_options import AuditOptions
    from fairness_core.backends.base import Backend
    from fairness_core.resources import Prompt
    from fairness_core.results import AuditResults, CompletionRecord
    from fairness_core.scorecard import MetricResult
    from fairness_core.thresholds import AuditConfig, SamplingProtocol


class Evaluation(Protocol):
    """One evaluation of one attribute set under one thresholds file.

    Construction is cheap (prompts and test parameters only); :meth:`load`
    reads the heavy resources (lexicon, classifier) and is called only when one
    of the evaluation's tests is selected.
    """

    name: ClassVar[str]
    #: The model of this evaluation's section of ``thresholds.yaml`` (frozen, ``extra='forbid'``).
    config_model: ClassVar[type[BaseModel]]
    #: The audit tests' parameters besides ``group`` (``template_id``, ...): :meth:`test_parameters` gives their values.
    parameters: ClassVar[tuple[str, ...]]
    #: The metric names of this evaluation (``honest_score``, ...): the keys ``regression.tolerance`` may use.
    metric_names: ClassVar[tuple[str, ...]]
    groups: tuple[str, ...]
    protocol: SamplingProtocol
    prompts: tuple[Prompt, ...]

    def __init__(self, config: AuditConfig, attributes: AttributeSet) -> None: ...

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        """Whether ``attributes`` has what this evaluation's prompts need (occupation has no HONEST terms)."""
        ...

    @classmethod
    def config_problems(cls, section: Any, attributes: AttributeSet, *, where: str) -> list[str]:
        """How this evaluation's limits disagree with the attribute set (a group without a limit), one per line."""
        ...

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        """What is wrong with this evaluation's options (a ``--lexicon`` that is no file), found without loading."""
        ...

    def test_parameters(self) -> dict[str, list[str]]:
        """Values of the audit tests' parameters (``template_id``, ``category``); groups are shared."""
        ...

    def gated_metrics(self) -> list[str]:
        """Ids of the aggregate metrics that the ``--baseline`` gate compares."""
        ...

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, Any]]:
        """Per group, what each prompt of a run contributes (its hit count, its scores), by prompt id.

        The ``--baseline`` gate pairs two runs by prompt: it resamples the
        prompts once and takes each one's unit from both runs.
        """
        ...

    def gated_values(self, units: Sequence[Sequence[Any]]) -> dict[str, float]:
        """The gated metrics whose resampling unit is the prompt, from one list of units per group (group order)."""
        ...

    def load(self, options: AuditOptions) -> None:
        """Read the scorer, lexicon and so on; raise an ``AuditUsageError`` naming the bad option."""
        ...

    def run(self, backend: Backend) -> Any:
        """Generate every prompt's completions and score them."""
        ...

    def metrics(self, scored: Any, *, seed: int) -> list[MetricResult]: ...

    def completion_records(self, scored: Any) -> list[CompletionRecord]: ...

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers besides the model: protocol, templates, lexicon or scorer.

        Two runs are comparable for the baseline gate when these agree.
        """
        ...

    def describe(self) -> str:
        """One line for the pytest header."""
        ...

    @staticmethod
    def plots(results: AuditResults) -> list[tuple[str, str]]:
        """(title, base64 PNG) pairs for the HTML report, drawn from the results file alone."""
        ...


def evaluation_class(name: str) -> type[Evaluation]:
    """The class registered as ``name``; an unknown name is a usage error with suggestions."""
    return EVALUATIONS.load(name)


def create_evaluations(names: Sequence[str], config: AuditConfig, attributes: AttributeSet) -> dict[str, Evaluation]:
    """The named evaluations that ``attributes`` supports, in registry order."""
    classes = {name: evaluation_class(name) for name in EVALUATIONS if name in names}
    return {name: cls(config, attributes) for name, cls in classes.items() if cls.supports(attributes)}
