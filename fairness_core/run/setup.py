"""What an audit would run, known without loading anything heavy: the limits, the attribute set, the evaluations.

:class:`AuditSetup` is read from the thresholds file and the attribute set: the
plugin parametrizes the audit tests from it, and ``ja-fairness-audit`` takes
its prompt sets and plan lines from it.  Every problem of the two files and of
the evaluations' sections is gathered into one :class:`AuditSetupError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.evaluation import Evaluation, MetricSpec
from fairness_core.api.prompts import PromptSet
from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.attribute_sets import BUILTIN_ATTRIBUTE_SETS, CROSS, AttributeSet
from fairness_core.config.thresholds import AuditConfig, attribute_set_problems
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import prompt_format_of

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.backends.base import Backend


class AuditSetupError(AuditUsageError):
    """Every usage problem of one run, one per line."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class AuditSetup:
    """What the audit would run, known without loading anything heavy: the limits in force for the attribute
    set, and every registered evaluation that the set supports (in registry order)."""

    config: AuditConfig
    attributes: AttributeSet
    evaluations: dict[str, Evaluation]

    @classmethod
    def load(cls, thresholds: Path, attributes: str, values: Mapping[str, Any] | None = None) -> AuditSetup:
        """The setup of ``thresholds`` and ``attributes``; each evaluation is built with the option ``values`` (by
        name), which may change its prompts (:class:`~fairness_core.api.evaluation.Evaluation`)."""
        problems: list[str] = []
        config: AuditConfig | None = collect(problems, lambda: load_thresholds(thresholds))
        attribute_set: AttributeSet | None = collect(problems, lambda: load_attribute_set(attributes))
        classes = {name: EVALUATIONS.load(name) for name in EVALUATIONS}
        if config is None or attribute_set is None:
            raise AuditSetupError(problems)
        where = f"the thresholds file {str(thresholds)!r}"
        known = list(dict.fromkeys([*BUILTIN_ATTRIBUTE_SETS, attribute_set.name]))
        problems += attribute_set_problems(config, known, where=where)
        supported = [name for name, evaluation in classes.items() if evaluation.supports(attribute_set)]
        problems += _unused_limits(config, attribute_set, [name for name in classes if name not in supported],
                                   where=where)
        config = config.for_attribute_set(attribute_set.name)
        if not supported:
            problems.append(f"No evaluation applies to the attribute set {attribute_set.name!r} "
                            f"({attribute_set.source}): give it a section for one of "
                            f"{', '.join(n for n, c in classes.items() if c.attribute_section is not None)}"
                            + "".join(f"\n  - {name}: {c.why_unsupported(attribute_set)}"
                                      for name, c in classes.items() if c.attribute_section is not None))
        for name in supported:
            problems += classes[name].config_problems(config.section(name), attribute_set, where=where)
        if problems:
            problems += _other_order(config, attribute_set.name, where=where)
        if problems:
            raise AuditSetupError(problems)
        built = {name: collect(problems, functools.partial(classes[name], config, attribute_set, values or {}))
                 for name in supported}
        evaluations = {name: evaluation for name, evaluation in built.items() if evaluation is not None}
        # Read as the run will read them, so that what each gates (a refusal gap under a chat format) is known now.
        for evaluation in evaluations.values():
            evaluation.read_outputs_as(prompt_format_of(values or {}))
        problems += [f"The attribute set {attribute_set.name!r} ({attribute_set.source}) leaves the {name} evaluation "
                     f"nothing to ask: its {name} section excludes every template, or has no term"
                     for name, evaluation in evaluations.items() if not evaluation.asks_something()]
        if problems:
            raise AuditSetupError(problems)
        return cls(config, attribute_set, evaluations)

    def not_applicable(self) -> dict[str, str]:
        """The registered evaluations that the attribute set does not run, and why."""
        return {name: f"not applicable to the attribute set {self.attributes.name!r}: "
                      f"{EVALUATIONS.load(name).why_unsupported(self.attributes)}"
                for name in EVALUATIONS if name not in self.evaluations}

    def not_judged(self, options: AuditOptions, backend: Backend | None = None) -> dict[str, str]:
        """Every registered evaluation that this run cannot judge, and why: those the attribute set does not run,
        and those that cannot run on the options (and ``backend``, once open:
        :meth:`~fairness_core.api.evaluation.Evaluation.cannot_run`)."""
        # The files' own reason first: generate recorded why it left an evaluation out, which the evaluation cannot know.
        not_in_files = _not_in_files(options, list(self.evaluations))
        cannot = {name: not_in_files.get(name) or evaluation.cannot_run(options, backend)
                  for name, evaluation in self.evaluations.items()}
        return {**self.not_applicable(), **{name: why for name, why in cannot.items() if why}}

    def prompt_sets(self) -> list[PromptSet]:
        """Each evaluation's prompts and protocol: what ``generate`` writes and the audit asks a backend for."""
        return [evaluation.prompt_set() for evaluation in self.evaluations.values()]

    def metric_spec(self, metric_id: str) -> MetricSpec:
        """The spec (direction) of the metric ``<evaluation>.<metric>[...]``."""
        evaluation, _, rest = metric_id.partition(".")
        return type(self.evaluations[evaluation]).metric_spec(rest.split("[", 1)[0])



def _not_in_files(options: AuditOptions, evaluations: Sequence[str]) -> dict[str, str]:
    """Of ``evaluations``, those the completions files (``--backend=jsonl``) hold nothing of, each with why."""
    from fairness_core.backends.catalog import COMPLETIONS, FILES_BACKEND
    from fairness_core.backends.jsonl import missing_evaluations

    completions = options.value(COMPLETIONS.dest)
    return missing_evaluations(completions, evaluations) if options.backend == FILES_BACKEND and completions else {}


def _other_order(config: AuditConfig, name: str, *, where: str) -> list[str]:
    """A crossed set's limits written under the same sets crossed in another order (``gender*nationality`` for
    ``nationality*gender``): its groups are other ids (``female_japanese``, not ``japanese_female``)."""
    if CROSS not in name or name in config.attributes:
        return []
    parts = sorted(name.split(CROSS))
    return [f"{where} has limits for {other!r}, the same sets crossed in another order, whose groups are named "
            f"in that order: run --attributes={other}, or write limits under attributes: {name}"
            for other in config.attributes if other != name and sorted(other.split(CROSS)) == parts]


def _unused_limits(config: AuditConfig, attribute_set: AttributeSet, not_run: Sequence[str], *, where: str) -> list[str]:
    """Limits written for this attribute set under ``attributes:`` for an evaluation that it does not run.

    They would never apply, and the file's author would believe they do.
    """
    limits = config.attributes.get(attribute_set.name)
    return [f"{where}: attributes.{attribute_set.name}.{name} sets limits for the {name} evaluation, which the "
            f"attribute set {attribute_set.name!r} does not run (it has no {name} section); remove them"
            for name in not_run if limits is not None and getattr(limits, name, None) is not None]


def collect(problems: list[str], step: Callable[[], Any]) -> Any:
    """Run ``step``; a usage error is added to ``problems`` instead of ending the setup."""
    try:
        return step()
    except AuditUsageError as err:
        problems.append(str(err))
        return None
