"""One audit run's session: the backend and the selected evaluations, loaded; results computed once.

:class:`AuditSession` is built by the plugin after collection, for the
evaluations that the selected tests need (``-k honest`` loads no sentiment
classifier), from the run's :class:`~fairness_core.run.startup.StartUp` (its
options and setup, checked).  Every usage problem of loading (the model, each
evaluation's scorer or lexicon, the baseline) is gathered into one
:class:`~fairness_core.run.setup.AuditSetupError` before anything is generated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairness_core.api.evaluation import CannotRun
from fairness_core.api.generic_options import SAMPLING
from fairness_core.api.options import AuditOptions
from fairness_core.backends.base import AnswerRoomError, Backend, ContextWindowError
from fairness_core.run.setup import AuditSetup, AuditSetupError, collect
from fairness_core.run.startup import open_backend
from fairness_core.sampling import ADAPTIVE, FIXED, SamplingRecord, SequentialTest, fixed_record, run_adaptively
from fairness_core.scorecard import MetricResult, Scorecard, Settlement, settle

if TYPE_CHECKING:
    from fairness_core.gates.certification import CertificationRounds
    from fairness_core.reporting.results import AuditResults, CompletionRecord
    from fairness_core.reporting.violations import Evidence


def _read_baseline(path: Path | None) -> AuditResults:
    from fairness_core.gates.regression import read_baseline

    return read_baseline(Path(str(path)))


class AuditSession:
    """The backend and the selected evaluations, loaded; results, scorecards and provenance on demand."""

    def __init__(self, options: AuditOptions, setup: AuditSetup, *, selected: Sequence[str],
                 backend: Backend | None = None, baseline: Path | None = None, baseline_model: str | None = None):
        self.options = options
        self.setup = setup
        self._scored: dict[str, Any] = {}
        self._settled: dict[str, Mapping[str, Settlement]] = {}
        #: How many completions each computed evaluation used, and why it stopped there.
        self.sampling: dict[str, SamplingRecord] = {}
        self._cards: dict[str, Scorecard] = {}
        self._pairable: dict[str, bool] = {}
        self._comparisons: dict[str, dict[str, Any]] = {}
        self.config = setup.config
        #: The registered evaluations that this run cannot judge, and why (shown as "not judged: <why>").
        self.not_judged = setup.not_judged(options)
        self.evaluations = {name: e for name, e in setup.evaluations.items()
                            if name in selected and name not in self.not_judged}
        #: The evaluations that the run could judge but the test selection (``-k``) left out.
        self.not_run = {name: "not selected" for name in setup.evaluations
                        if name not in selected and name not in self.not_judged}
        problems: list[str] = []
        # The production model runs first, and its engine is let go before the candidate's is loaded.
        generated = collect(problems, lambda: self._run_baseline_model(baseline_model)) if baseline_model else None
        self.backend = backend or collect(problems, lambda: open_backend(options))
        if self.backend is not None:
            for name, evaluation in list(self.evaluations.items()):
                why = evaluation.cannot_run(options, self.backend)
                if why:
                    self._not_judge(name, why)
        for name, evaluation in list(self.evaluations.items()):
            evaluation.read_outputs_as(options.settings.prompt_format)
            try:
                collect(problems, functools.partial(evaluation.load, options))
            except CannotRun as why:
                self._not_judge(name, str(why))
        self.baseline_source = baseline or (f"--baseline-model={baseline_model}" if baseline_model else None)
        # Without a backend there is no provenance to compare the baseline with; its problem is reported already.
        self.baseline = (collect(problems, lambda: self._checked_baseline(generated or _read_baseline(baseline)))
                         if (baseline or generated) and self.backend is not None else None)
        #: Each evaluation's certification rounds under --sampling=adaptive with a baseline (its verdicts at the stop).
        self._rounds: dict[str, CertificationRounds] = {}
        #: What the reader of this run should know that is not about the model (shown once, kept in the JSON).
        self.notes: list[str] = []
        if self.baseline is not None and self.backend is not None:  # a baseline is only read with a backend
            generated_now = "generated in this run, same prompts and seed" if generated else "generated"
            self.notes.append(f"baseline: compared with {self.baseline_source} (model "
                              f"{self.baseline.provenance.model.get('model', '?')}, {generated_now} "
                              f"{self.baseline.provenance.created})")
            theirs, ours = self.baseline.provenance.model.get("backend"), self.backend.description.get("backend")
            if theirs != ours:
                self.notes.append(f"note: the baseline was generated with the {theirs} backend, this run with {ours}: "
                                  f"across engines completions differ and metrics agree only within their intervals")
        if problems:
            raise AuditSetupError(problems)

    def _checked_baseline(self, baseline: AuditResults) -> AuditResults:
        from fairness_core.gates.regression import impossible_values, incompatibilities
        from fairness_core.reporting.results import ResultsFileError

        impossible = impossible_values(baseline, self.evaluations)
        if impossible:
            raise ResultsFileError(f"The baseline {self.baseline_source} holds values that no audit run makes (edited "
                                   f"by hand, or from another tool?):\n  - " + "\n  - ".join(impossible))
        problems = incompatibilities(baseline, self.provenance())
        if problems:
            raise ResultsFileError(f"The baseline {self.baseline_source} is not comparable with this run:\n  - "
                                   + "\n  - ".join(problems))
        return baseline

    def _run_baseline_model(self, model: str) -> AuditResults:
        """The production model's results, generated now with this run's options, prompts and seed (fixed protocol).

        Every backend keys a sample's random stream by (seed, prompt, sample),
        so the candidate's sample ``i`` of a prompt shares its randomness with the
        baseline's: common random numbers, which keep what the two models share
        out of the paired difference.
        """
        from fairness_core.api.generic_options import AUDIT_JSON, BASELINE_MODEL, MODEL
        from fairness_core.errors import AuditUsageError
        from fairness_core.reporting.results import build_results
        from fairness_core.run.options import audit_options

        # The candidate's options as they took effect, its model's defaults included (a demo model's offline
        # scorer): the baseline is measured by the same instruments, or the two runs are not comparable.
        effective = {**self.options.settings.model.defaults,
                     **{name: value for name, value in self.options.values.items() if value is not None}}
        values = {**effective, MODEL.dest: model, SAMPLING.dest: FIXED, AUDIT_JSON.dest: None,
                  BASELINE_MODEL.dest: None}
        theirs, problems = audit_options(values, cache_dir=self.options.settings.cache_dir)
        if problems:
            raise AuditUsageError(f"{BASELINE_MODEL.flag}={model}: " + "; ".join(problems))
        run = AuditSession(theirs, self.setup, selected=list(self.evaluations))
        run.compute_all()
        return build_results(run)

    def compute_all(self) -> None:
        """Generate and score every selected evaluation now, before any test runs.

        A backend that fails (a server that keeps answering 503) then ends the run
        with one error instead of failing every test that reads the results.

        An evaluation whose prompts do not fit the model's context window is not
        judged, with the reason; the other evaluations go on.  So is one whose
        answers need more room than the model leaves after its prompts
        (``answers_need_room``); for the others that is the thresholds file's
        ``max_new_tokens`` to lower, a usage error.
        """
        for name in list(self.evaluations):
            try:
                self.card(name)
            except ContextWindowError as err:
                self._not_judge(name, f"its prompts do not fit the model's context window: {err}")
            except AnswerRoomError as err:
                if not self.evaluations[name].answers_need_room:
                    raise
                self._not_judge(name, f"its answers do not fit the model's context window: {err}")

    def _not_judge(self, name: str, why: str) -> None:
        """Take evaluation ``name`` out of this run: it is not judged, because ``why``."""
        del self.evaluations[name]
        self.not_judged[name] = why
        for kept in (self._scored, self.sampling, self._settled, self._cards):
            kept.pop(name, None)

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

    def pairable(self, name: str) -> bool:
        """Whether ``name``'s gated metrics are compared paired by prompt with the baseline's; the notes say why not.

        Needs the baseline's completions of ``name``, an evaluation whose gated
        metrics are computed from prompt units, and the same prompts in both runs.
        """
        if name not in self._pairable:
            evaluation, records = self.evaluations[name], self._baseline_records(name)
            theirs = evaluation.prompt_units(records) if records else {}
            ours = evaluation.prompt_units(evaluation.completion_records(self.scored(name))) if theirs else {}
            why = ("its completions are not in the baseline" if not records
                   else "its gated metrics are not computed per prompt, each run's interval gives its error" if not theirs
                   else "the baseline's prompts are not this run's"
                   if {g: set(u) for g, u in ours.items()} != {g: set(u) for g, u in theirs.items()} else None)
            self._pairable[name] = why is None
            if self.baseline is not None and why is not None:
                self.notes.append(f"baseline: {name} compared unpaired: {why}")
        return self._pairable[name]

    def comparison(self, metric_id: str):
        """The non-inferiority verdict of gated ``metric_id`` against the baseline (``gates.certification``).

        Paired by prompt where the baseline holds this run's prompts' completions;
        otherwise unpaired from each run's interval, and the notes say why.
        Computed once per evaluation; ``alpha`` is divided among every gated metric of the run.
        """
        from fairness_core.gates.certification import certify, interval_comparison

        name = metric_id.split(".", 1)[0]
        if name not in self._comparisons:
            evaluation = self.evaluations[name]
            records = self._baseline_records(name)
            found = {}
            self.scored(name)  # an adaptive run's rounds judge it as they go
            if name in self._rounds:
                found = {c.metric: c for c in self._rounds[name].verdicts()}
            elif records and self.pairable(name):
                current = evaluation.completion_records(self.scored(name))
                found = {c.metric: c for c in certify({name: evaluation}, {name: current}, {name: records},
                                                      self.config.regression, seed=self.options.settings.seed,
                                                      comparisons=self._gated_count())}
            for m in evaluation.gated_metrics():
                if m not in found and self.baseline_metric(m) is not None:
                    found[m] = interval_comparison(self.metric(m), self.baseline_metric(m), self.config.regression,
                                                   spec=self.setup.metric_spec(m), comparisons=self._gated_count())
            self._comparisons[name] = found
        return self._comparisons[name].get(metric_id)

    def _gated_count(self) -> int:
        """How many gated metrics share the gate's alpha: every one of the run's evaluations."""
        from fairness_core.gates.regression import gated_metrics

        return len(gated_metrics(self.evaluations))

    def _baseline_records(self, name: str) -> Sequence[CompletionRecord]:
        return self.baseline.completions.get(name, []) if self.baseline is not None else []

    def _shares_randomness(self) -> bool:
        """Whether the baseline drew each sample from the stream this run draws it from: same engine, same seed."""
        if self.baseline is None or self.backend is None:
            return False
        ours = self.backend.description.get("backend")
        return self.baseline.provenance.seed == self.options.settings.seed and \
            self.baseline.provenance.model.get("backend") == ours

    def _compared(self, metric_id: str) -> bool:
        """Whether both runs have a value of ``metric_id`` (its regression test is not skipped)."""
        theirs = self.baseline_metric(metric_id)
        return self.metric(metric_id).value is not None and theirs is not None and theirs.value is not None

    def certification_records(self) -> list[dict]:
        """Every compared gated metric's verdict against the baseline, as the results file keeps them (``[]`` without
        one): the metrics that either run left uncomputed are skipped by their tests and left out here."""
        if self.baseline is None:
            return []
        found = []
        for name, evaluation in self.evaluations.items():
            used = len(evaluation.completion_records(self.scored(name)))
            found += [self.comparison(m).as_dict(used) for m in evaluation.gated_metrics() if self._compared(m)]
        return found

    def scored(self, name: str) -> Any:
        """The scored completions of evaluation ``name`` (generated on first use, then kept).

        With ``--sampling=adaptive`` an evaluation with a sequential test draws
        rounds until its verdict is settled (:func:`fairness_core.sampling.run_adaptively`).
        """
        if name not in self._scored:
            evaluation = self.evaluations[name]
            budget, prompts = evaluation.protocol.num_samples, len(evaluation.prompts)
            test = evaluation.sequential_test() if self.options.value(SAMPLING.dest) == ADAPTIVE else None
            if test is not None and self._baseline_records(name):
                test = self._rounds.setdefault(name, self._certification_rounds(name, test))
            if test is None:
                self._scored[name] = evaluation.run(self.backend)
                why = ("--sampling=adaptive, but this evaluation has no sequential test: the fixed protocol"
                       if self.options.value(SAMPLING.dest) == ADAPTIVE else "the fixed protocol (--sampling=fixed)")
                self.sampling[name] = fixed_record(budget, prompts, why)
            else:
                scored, record, settled = run_adaptively(
                    evaluation, functools.partial(evaluation.run_samples, self.backend), test=test)
                self._scored[name], self.sampling[name], self._settled[name] = scored, record, settled
        return self._scored[name]

    def _certification_rounds(self, name: str, limits: SequentialTest) -> CertificationRounds:
        """The rounds that stop once ``name``'s gated metrics are certified or one regressed (and its limits settled).

        The baseline is compared at the candidate's samples a prompt: its first
        ones where it drew them from the same streams (common random numbers),
        all of them otherwise.
        """
        from fairness_core.gates.certification import CertificationRounds, first_samples

        evaluation, records = self.evaluations[name], self._baseline_records(name)
        common = self._shares_randomness()

        def baseline_at(samples: int) -> Mapping[str, Mapping[str, object]]:
            prefix = first_samples(records, samples) if common else None
            return evaluation.prompt_units(records if prefix is None else prefix)

        return CertificationRounds(
            evaluation, self.config.regression, baseline_at=baseline_at, prompts=len(evaluation.prompts),
            units_of=lambda parts: evaluation.prompt_units(evaluation.completion_records(evaluation.merge(parts))),
            comparisons=self._gated_count(), deploy=limits, seed=self.options.settings.seed)

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
            not_judged=self.not_judged,
            versions=versions(),
            sampling={name: record.as_dict() for name, record in self.sampling.items()},
            limits={name: self.config.limits_source(name) for name in self.evaluations},
        )


