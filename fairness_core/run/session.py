"""One audit run: its setup (thresholds, attribute set, evaluations), the backend, results computed once.

:class:`AuditSetup` is what the run would do, known without loading anything
heavy: the plugin parametrizes the audit tests from it, and ``ja-fairness-audit``
takes its prompt sets and plan lines from it.  :class:`AuditSession` is built
by the plugin after collection, for the evaluations that the selected tests
need (``-k honest`` loads no sentiment classifier).  Every usage problem
of the run, in the order a user should fix them (thresholds and attribute set,
then the model, then each evaluation's scorer or lexicon), is gathered into one
:class:`AuditSetupError` before anything is generated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.evaluation import Evaluation, MetricSpec
from fairness_core.api.options import AuditOptions
from fairness_core.api.prompts import PromptSet
from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.backends.base import Backend
from fairness_core.backends.cache import CachedBackend
from fairness_core.backends.catalog import create_backend
from fairness_core.config.attribute_sets import BUILTIN_ATTRIBUTE_SETS, AttributeSet
from fairness_core.config.thresholds import AuditConfig, attribute_set_problems
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import SAMPLING
from fairness_core.sampling import SamplingRecord, fixed_record, run_adaptively
from fairness_core.scorecard import MetricResult, Scorecard, Settlement, settle

if TYPE_CHECKING:
    from fairness_core.reporting.violations import Evidence


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
        config: AuditConfig | None = _collect(problems, lambda: load_thresholds(thresholds))
        attribute_set: AttributeSet | None = _collect(problems, lambda: load_attribute_set(attributes))
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
                            f"{', '.join(n for n, c in classes.items() if c.attribute_section is not None)}")
        for name in supported:
            problems += classes[name].config_problems(config.section(name), attribute_set, where=where)
        if problems:
            raise AuditSetupError(problems)
        built = {name: _collect(problems, functools.partial(classes[name], config, attribute_set, values or {}))
                 for name in supported}
        evaluations = {name: evaluation for name, evaluation in built.items() if evaluation is not None}
        problems += [f"The attribute set {attribute_set.name!r} ({attribute_set.source}) leaves the {name} evaluation "
                     f"nothing to ask: its {name} section excludes every template, or has no term"
                     for name, evaluation in evaluations.items() if not evaluation.asks_something()]
        if problems:
            raise AuditSetupError(problems)
        return cls(config, attribute_set, evaluations)

    def not_applicable(self) -> dict[str, str]:
        return {name: f"not applicable to the attribute set {self.attributes.name!r}"
                for name in EVALUATIONS if name not in self.evaluations}

    def prompt_sets(self) -> list[PromptSet]:
        """Each evaluation's prompts and protocol: what ``generate`` writes and the audit asks a backend for."""
        return [evaluation.prompt_set() for evaluation in self.evaluations.values()]

    def metric_spec(self, metric_id: str) -> MetricSpec:
        """The spec (direction) of the metric ``<evaluation>.<metric>[...]``."""
        evaluation, _, rest = metric_id.partition(".")
        return type(self.evaluations[evaluation]).metric_spec(rest.split("[", 1)[0])


class AuditSession:
    """The backend and the selected evaluations, loaded; results, scorecards and provenance on demand."""

    def __init__(self, options: AuditOptions, setup: AuditSetup, *, selected: Sequence[str],
                 backend: Backend | None = None, baseline: Path | None = None):
        self.options = options
        self.setup = setup
        self._scored: dict[str, Any] = {}
        self._settled: dict[str, Mapping[str, Settlement]] = {}
        #: How many completions each computed evaluation used, and why it stopped there.
        self.sampling: dict[str, SamplingRecord] = {}
        self._cards: dict[str, Scorecard] = {}
        self._paired: dict[str, dict[str, float]] = {}
        self.config = setup.config
        self.evaluations = {name: e for name, e in setup.evaluations.items() if name in selected}
        self.not_run = {**setup.not_applicable(),
                        **{name: "not selected" for name in setup.evaluations if name not in selected}}
        problems: list[str] = []
        self.backend = backend or _collect(problems, self._load_backend)
        for evaluation in self.evaluations.values():
            evaluation.read_outputs_as(options.settings.prompt_format)
            _collect(problems, functools.partial(evaluation.load, options))
        self.baseline_source = baseline
        # Without a backend there is no provenance to compare the baseline with; its problem is reported already.
        self.baseline = (_collect(problems, lambda: self._read_baseline(baseline))
                         if baseline and self.backend is not None else None)
        #: What the reader of this run should know that is not about the model (shown once, kept in the JSON).
        self.notes: list[str] = []
        if self.baseline is not None and self.backend is not None:  # a baseline is only read with a backend
            self.notes.append(f"baseline: compared with {baseline} (model "
                              f"{self.baseline.provenance.model.get('model', '?')}, {self.baseline.provenance.created})")
            theirs, ours = self.baseline.provenance.model.get("backend"), self.backend.description.get("backend")
            if theirs != ours:
                self.notes.append(f"note: the baseline was generated with the {theirs} backend, this run with {ours}: "
                                  f"across engines completions differ and metrics agree only within their intervals")
        if problems:
            raise AuditSetupError(problems)

    def _read_baseline(self, path: Path):
        from fairness_core.gates.regression import impossible_values, incompatibilities, read_baseline
        from fairness_core.reporting.results import ResultsFileError

        baseline = read_baseline(path)
        impossible = impossible_values(baseline, self.evaluations)
        if impossible:
            raise ResultsFileError(f"The baseline {path} holds values that no audit run makes (edited by hand, or from "
                                   f"another tool?):\n  - " + "\n  - ".join(impossible))
        problems = incompatibilities(baseline, self.provenance())
        if problems:
            raise ResultsFileError(f"The baseline {path} is not comparable with this run:\n  - " + "\n  - ".join(problems))
        return baseline

    def compute_all(self) -> None:
        """Generate and score every selected evaluation now, before any test runs.

        A backend that fails (a server that keeps answering 503) then ends the run
        with one error instead of failing every test that reads the results.
        """
        for name in self.evaluations:
            self.card(name)

    def check(self, metric_id: str, *, where: Sequence[str], evidence: Callable[[], Sequence[Evidence]] = list,
              evidence_total: int | None = None) -> None:
        """Fail the calling test with an :class:`AuditViolation` when the metric breaks its limit."""
        from fairness_core.reporting.violations import enforce

        enforce(self.metric(metric_id), self.config.decision_rule, where=where, evidence=evidence,
                evidence_total=evidence_total, underpowered=self.config.underpowered)

    def baseline_metric(self, metric_id: str):
        """The baseline's record of ``metric_id`` (``None`` without a baseline or when it lacks it)."""
        if self.baseline is None:
            return None
        return next((m for m in self.baseline.metrics if m.id == metric_id), None)

    def paired_errors(self, name: str) -> dict[str, float]:
        """Standard errors of the change of ``name``'s gated metrics against the baseline, paired by prompt.

        Empty without a baseline, when the baseline holds no completions of
        ``name``, or when its prompts are not this run's; the regression tests
        are then unpaired, and the notes say why.
        """
        if name not in self._paired:
            from fairness_core.gates.regression import paired_standard_errors

            records = self.baseline.completions.get(name, []) if self.baseline is not None else []
            evaluation = self.evaluations[name]
            current = evaluation.completion_records(self.scored(name))
            self._paired[name] = (paired_standard_errors(evaluation, current, records, seed=self.options.settings.seed)
                                  if records else {})
            if self.baseline is not None and not self._paired[name]:
                self.notes.append(f"baseline: {name} compared unpaired: "
                                  + ("its completions are not in the baseline" if not records
                                     else "the baseline's prompts are not this run's"))
        return self._paired[name]

    def _load_backend(self) -> Backend:
        settings = self.options.settings
        backend = create_backend(self.options.backend, settings)
        return backend if settings.cache_dir is None else CachedBackend(backend, cache_dir=settings.cache_dir)

    def scored(self, name: str) -> Any:
        """The scored completions of evaluation ``name`` (generated on first use, then kept).

        With ``--sampling=adaptive`` an evaluation with a sequential test draws
        rounds until its verdict is settled (:func:`fairness_core.sampling.run_adaptively`).
        """
        if name not in self._scored:
            evaluation = self.evaluations[name]
            budget, prompts = evaluation.protocol.num_samples, len(evaluation.prompts)
            test = evaluation.sequential_test() if self.options.value(SAMPLING.dest) == "adaptive" else None
            if test is None:
                self._scored[name] = evaluation.run(self.backend)
                why = ("--sampling=adaptive, but this evaluation has no sequential test: the fixed protocol"
                       if self.options.value(SAMPLING.dest) == "adaptive" else "the fixed protocol (--sampling=fixed)")
                self.sampling[name] = fixed_record(budget, prompts, why)
            else:
                scored, record, settled = run_adaptively(
                    evaluation, functools.partial(evaluation.run_samples, self.backend), test=test)
                self._scored[name], self.sampling[name], self._settled[name] = scored, record, settled
        return self._scored[name]

    def card(self, name: str) -> Scorecard:
        """Every metric of evaluation ``name``, computed once (with the sequential test's settled verdicts)."""
        if name not in self._cards:
            scored = self.scored(name)
            results = self.evaluations[name].metrics(scored, seed=self.options.settings.seed)
            self._cards[name] = Scorecard(settle(results, self._settled.get(name, {})))
        return self._cards[name]

    def metric(self, metric_id: str) -> MetricResult:
        return self.card(metric_id.split(".", 1)[0])[metric_id]

    def provenance(self):
        """What produced this run's numbers: model, backend, attribute set, each evaluation's setup, versions."""
        from fairness_core.reporting.results import Provenance, now, versions

        return Provenance(
            created=now(),
            model=dict(self.backend.description),
            fingerprint=self.backend.fingerprint,
            usage=dict(getattr(self.backend, "usage", {})),
            seed=self.options.settings.seed,
            decision_rule=self.config.decision_rule,
            attributes=self.setup.attributes.provenance(),
            evaluations={name: e.provenance() for name, e in self.evaluations.items()},
            not_run=self.not_run,
            versions=versions(),
            sampling={name: record.as_dict() for name, record in self.sampling.items()},
        )


def _unused_limits(config: AuditConfig, attribute_set: AttributeSet, not_run: Sequence[str], *, where: str) -> list[str]:
    """Limits written for this attribute set under ``attributes:`` for an evaluation that it does not run.

    They would never apply, and the file's author would believe they do.
    """
    limits = config.attributes.get(attribute_set.name)
    return [f"{where}: attributes.{attribute_set.name}.{name} sets limits for the {name} evaluation, which the "
            f"attribute set {attribute_set.name!r} does not run (it has no {name} section); remove them"
            for name in not_run if limits is not None and getattr(limits, name, None) is not None]


def _collect(problems: list[str], step: Callable[[], Any]) -> Any:
    """Run ``step``; a usage error is added to ``problems`` instead of ending the setup."""
    try:
        return step()
    except AuditUsageError as err:
        problems.append(str(err))
        return None
