"""What an evaluation is: the :class:`Evaluation` base class, and the direction each of its metrics is better in.

An evaluation turns an attribute set and the thresholds into prompts, runs
them through a backend, scores the completions and computes its metrics; it
also says which metrics the ``--baseline`` gate compares, shows evidence for a
failing metric, draws its plots, declares its options, its sections of the
thresholds and attribute-set files, and its line for ``ja-fairness-audit plan``.
The session, the JSON results, the report and both gates loop over the
registered evaluations (:data:`fairness_core.api.discovery.EVALUATIONS`) and ask
them; none of them names one.  A new evaluation subclasses :class:`Evaluation`,
writes what is its own, and keeps the defaults for the rest.

>>> MetricSpec("ratio", "ratio").badness(0.5) == MetricSpec("ratio", "ratio").badness(2.0)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from fairness_core.api.answers import AnswerReader
from fairness_core.api.prompts import Prompt, PromptSet
from fairness_core.config.option_types import Option

if TYPE_CHECKING:
    from pydantic import BaseModel

    from fairness_core.api.options import AuditOptions
    from fairness_core.backends.base import Backend
    from fairness_core.backends.prompt_formats import PromptFormat
    from fairness_core.config.attribute_sets import AttributeSet
    from fairness_core.config.thresholds import AuditConfig, SamplingProtocol
    from fairness_core.reporting.results import AuditResults, CompletionRecord
    from fairness_core.sampling import SequentialTest
    from fairness_core.scorecard import MetricResult

#: Which way a metric is better: ``lower`` (a hurtful rate, a distance), ``higher`` (an accuracy),
#: ``ratio`` (nearer 1 on the log scale, either side) or ``zero`` (nearer 0, either sign: a bias score).
Direction = Literal["lower", "higher", "ratio", "zero"]


#: The values a share or a distance between scores in [0, 1] can take.
SHARE = (0.0, 1.0)
#: The values a difference of two shares, or a bias score, can take.
SIGNED = (-1.0, 1.0)


@dataclass(frozen=True)
class MetricSpec:
    """One metric of an evaluation: its name (the key of ``regression.tolerance``), its direction and its range.

    The regression gate compares two runs by :meth:`badness`, higher worse,
    whatever the metric measures; a baseline value outside ``bounds``
    (inclusive; a ratio is above 0 besides) is refused, as no run makes one.
    """

    name: str
    direction: Direction = "lower"
    bounds: tuple[float, float] = (-math.inf, math.inf)

    def value_problem(self, value: float) -> str | None:
        """Why ``value`` cannot be a value of this metric, or ``None``.

        >>> MetricSpec("share", bounds=SHARE).value_problem(7.5)
        '7.5 is outside [0, 1]'
        """
        if not math.isfinite(value):
            return f"{value} is not a finite number"
        low, high = self.bounds
        if not low <= value <= high:
            return f"{value:g} is outside [{low:g}, {high:g}]"
        if self.direction == "ratio" and value <= 0:
            return f"{value:g} is no ratio of two rates (it must be above 0)"
        return None

    def badness(self, value: float) -> float:
        """How bad ``value`` is, higher worse: a ratio as ``|log ratio|``, a signed score as ``|score|``."""
        if self.direction == "ratio":
            return abs(math.log(value))
        if self.direction == "zero":
            return abs(value)
        return -value if self.direction == "higher" else value

    def badness_interval(self, interval: tuple[float, float]) -> tuple[float, float]:
        """An interval of the metric mapped to badness; one holding the best value reaches a badness of 0."""
        low, high = interval
        ends = sorted((self.badness(low), self.badness(high)))
        best = {"ratio": 1.0, "zero": 0.0}.get(self.direction)
        return (0.0, ends[1]) if best is not None and low <= best <= high else (ends[0], ends[1])

    @property
    def badness_unit(self) -> str:
        """How the badness is measured, for a regression message (`` in |log ratio|``), or ``""``."""
        return {"ratio": " in |log ratio|", "zero": " in |value|", "higher": " (lower is worse)"}.get(self.direction, "")


class CannotRun(Exception):
    """Raised by :meth:`Evaluation.load` when the evaluation cannot run on what the user gave, and the user did not ask
    for what is missing (a default classifier on the hub, offline): the run does not judge it, with this reason,
    as for :meth:`Evaluation.cannot_run`.  A bad value of an option the user set stays an ``AuditUsageError``."""


class Evaluation:
    """One evaluation of one attribute set under one thresholds file; subclass it and register an entry point.

    What a subclass must give: ``name``, ``config_model``, ``metric_specs``,
    :meth:`build_prompts`, :meth:`run`, :meth:`metrics` and
    :meth:`completion_records`.  Everything else has a default.

    It is built once from its parameters, never changed after: the limits, the
    attribute set and the run's option values (by option name, as given; empty
    when none), so that ``pytest``, ``generate`` and ``plan`` see the same
    prompts.  An option that changes what it asks (a question file) is read in
    the constructor, and a bad value is an ``AuditUsageError`` naming the
    option.  A subclass whose prompts come from state of its own (BBQ's
    questions) computes that state from the parameters, then calls
    ``super().__init__``, whose :meth:`build_groups` and :meth:`build_prompts`
    read it.

    Construction is cheap (prompts and test parameters only); :meth:`load`
    reads the heavy resources (a lexicon, a classifier) and is called only when
    one of the evaluation's tests is selected.  Keep the module that defines
    the class free of heavy imports: the pytest plugin reads every registered
    evaluation's options on every pytest run.
    """

    #: The evaluation's name: its entry point, its ``thresholds.yaml`` section, its metric ids' prefix.
    name: ClassVar[str]
    #: The model of this evaluation's section of ``thresholds.yaml`` (frozen, ``extra='forbid'``); it has a
    #: ``protocol`` field (:class:`~fairness_core.config.thresholds.SamplingProtocol`).
    config_model: ClassVar[type[BaseModel]]
    #: The model of its section of an attribute-set file (see :mod:`fairness_core.config.attribute_sets`), or
    #: ``None`` when the groups' labels are all it needs.
    attribute_section: ClassVar[Any] = None
    #: Every metric it reports, with the direction it is better in.
    metric_specs: ClassVar[tuple[MetricSpec, ...]]
    #: The audit tests' parameters besides ``group`` (``template_id``, ...): :meth:`test_parameters` gives their values.
    parameters: ClassVar[tuple[str, ...]] = ()
    #: Its own command-line options, in the run's one option table (``commands`` says which commands take each).
    options: ClassVar[tuple[Option, ...]] = ()
    #: Whether ``max_new_tokens`` is room for answers that end by themselves (a chat reply) rather than the window
    #: its metrics are defined on: a model that holds the prompts but not that many tokens after them then leaves
    #: the evaluation not judged, saying what to lower (for the others it is a usage error).
    answers_need_room: ClassVar[bool] = False
    #: The module of its audit tests (``pytest --pyargs fairness_core.audits`` collects it); default
    #: ``<its package>.test_<name>``.
    audit_module: ClassVar[str | None] = None

    def __init__(self, config: AuditConfig, attributes: AttributeSet, values: Mapping[str, Any]):
        self.limits: Any = config.section(self.name)
        self.protocol: SamplingProtocol = self.limits.protocol
        self.groups: tuple[str, ...] = self.build_groups(attributes)
        self.prompts: tuple[Prompt, ...] = self.build_prompts(attributes)
        #: How outputs are read (refusals, echoes): set for the run's ``--prompt-format`` by
        #: :class:`~fairness_core.run.setup.AuditSetup` (:meth:`read_outputs_as`).
        self.answers = AnswerReader()

    # --- what the evaluation asks ------------------------------------------------------------------------

    def build_groups(self, attributes: AttributeSet) -> tuple[str, ...]:
        """The groups its metrics compare: by default the attribute set's."""
        return attributes.groups

    def build_prompts(self, attributes: AttributeSet) -> tuple[Prompt, ...]:
        """Every prompt of this evaluation for ``attributes``, in a stable order (it assigns nothing)."""
        raise NotImplementedError

    def asks_something(self) -> bool:
        """Whether the attribute set leaves this evaluation anything to ask (a set may exclude every template)."""
        return bool(self.prompts)

    def prompt_set(self) -> PromptSet:
        return PromptSet(self.name, self.protocol, self.prompts, answers_need_room=self.answers_need_room)

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        """Whether ``attributes`` has what the prompts need: by default, this evaluation's section where it has one."""
        return cls.attribute_section is None or attributes.section(cls.name) is not None

    @classmethod
    def why_unsupported(cls, attributes: AttributeSet) -> str:
        """Why :meth:`supports` turns ``attributes`` down, for the reader (the run shows it as "not judged: not
        applicable to the attribute set 'x': <this>"); override it with :meth:`supports`.  By default, why the set
        has no section for this evaluation (a crossed set says what kept it from composing one)."""
        return attributes.why_missing(cls.name)

    @classmethod
    def config_problems(cls, section: Any, attributes: AttributeSet, *, where: str) -> list[str]:
        """How this evaluation's limits disagree with the attribute set (a group without a limit), one per line."""
        return []

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        """What is wrong with this evaluation's options (a ``--lexicon`` that is no file), found without loading."""
        return []

    def cannot_run(self, options: AuditOptions, backend: Backend | None = None) -> str | None:
        """Why this evaluation cannot run on what the user gave, or ``None`` (the default: it can).

        An evaluation that cannot run is **not judged**, with this reason: the
        header, the terminal summary, the HTML report and ``--audit-json`` say
        so, its tests are skipped with it, and only ``--require=<name>`` turns
        it into a failing test.  So return a reason for what the user did not
        ask of this evaluation (a completions file written without its prompts,
        a server that cannot score continuations), and keep raising an
        ``AuditUsageError`` from :meth:`input_problems` or :meth:`load` for a bad
        value of an option the user set for it (a ``--lexicon`` that is no file).

        The run asks twice: at start-up with ``backend=None``, from the options
        alone (cheap: it runs at collection, before any model is loaded; e.g.
        ``options.backend``, a file named by an option), and once more with the
        opened ``backend`` before :meth:`load`, for what only the backend knows
        (``backend.description``, whether it scores).  The reason is one line
        that completes "<name> not judged: ...", e.g. ``"the completions file
        holds no bbq answers (generate them with ja-fairness-audit generate)"``.
        """
        return None

    @classmethod
    def metric_spec(cls, metric: str) -> MetricSpec:
        """The spec of one of this evaluation's metrics, by name (a ``KeyError`` for a name it does not report)."""
        found = next((spec for spec in cls.metric_specs if spec.name == metric), None)
        if found is None:
            raise KeyError(f"The {cls.name} evaluation reports no metric {metric!r}")
        return found

    @classmethod
    def audit_tests(cls) -> str:
        """The module holding this evaluation's audit tests."""
        return cls.audit_module or f"{cls.__module__.rpartition('.')[0]}.test_{cls.name}"

    def test_parameters(self) -> dict[str, list[str]]:
        """Values of the audit tests' parameters (``template_id``, ``category``); groups are shared."""
        return {}

    def gated_metrics(self) -> list[str]:
        """Ids of the aggregate metrics that the ``--baseline`` gate compares."""
        return []

    # --- the regression gate's pairing by prompt ----------------------------------------------------------

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, Any]]:
        """Per group, what each prompt of a run contributes (its hit count, its scores), by prompt id.

        The ``--baseline`` gate pairs two runs by prompt: it resamples the
        prompts once and takes each one's unit from both runs.  Empty (the
        default): the gate compares this evaluation's metrics unpaired.
        """
        return {}

    def gated_values(self, units: Sequence[Sequence[Any]]) -> dict[str, float]:
        """The gated metrics whose resampling unit is the prompt, from one list of units per group (group order)."""
        return {}

    # --- a run -------------------------------------------------------------------------------------------

    def protocol_provenance(self) -> dict[str, Any]:
        """The protocol as it determined the numbers: with the format and its chat block under a chat format, without
        them under ``completion`` (so that a baseline of a completion run compares as it always did)."""
        if not self.answers.detects_refusals:
            return self.protocol.model_dump(exclude={"chat"})
        return {**self.protocol.model_dump(), "prompt_format": self.answers.prompt_format.name}

    def read_outputs_as(self, prompt_format: PromptFormat) -> None:
        """Read the model's outputs as answers in ``prompt_format`` (refusals, echoes: :mod:`.answers`)."""
        self.answers = AnswerReader(prompt_format)

    def load(self, options: AuditOptions) -> None:
        """Read the scorer, lexicon and so on; raise an ``AuditUsageError`` naming the bad option, or
        :class:`CannotRun` where a default the user did not choose cannot be had."""

    def run(self, backend: Backend) -> Any:
        """Generate every prompt's completions and score them."""
        raise NotImplementedError

    def metrics(self, scored: Any, *, seed: int) -> list[MetricResult]:
        raise NotImplementedError

    # --- adaptive sampling (``--sampling=adaptive``) ------------------------------------------------------

    def sequential_test(self) -> SequentialTest | None:
        """A fresh anytime-valid test of the gated verdicts, fed round by round (:mod:`fairness_core.sampling`).

        ``None`` (the default): the evaluation always runs its fixed protocol.
        An evaluation that returns one also implements :meth:`run_samples` and
        :meth:`merge`.
        """
        return None

    def run_samples(self, backend: Backend, samples: range) -> Any:
        """Generate and score the samples ``samples`` of every prompt: one round."""
        raise NotImplementedError

    def merge(self, parts: Sequence[Any]) -> Any:
        """Rounds (of :meth:`run_samples`, or a simulator's) as the scored completions :meth:`metrics` takes."""
        raise NotImplementedError

    def completion_records(self, scored: Any) -> list[CompletionRecord]:
        """One record per completion, with what this evaluation found in it under ``detail``."""
        raise NotImplementedError

    # --- what a reader sees ------------------------------------------------------------------------------

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers besides the model: protocol, templates, lexicon or scorer.

        Two runs are comparable for the baseline gate when these agree.
        """
        return {"protocol": self.protocol_provenance(), "templates": list(dict.fromkeys(p.template_id for p in self.prompts))}

    def describe(self) -> str:
        """One line for the pytest header."""
        return f"{self.name}: {len(self.prompts)} prompts x {self.protocol.num_samples} samples"

    def plan_lines(self, options: AuditOptions) -> list[str]:
        """Its lines of ``ja-fairness-audit plan``: its prompts, samples and limits, and what its plan options ask."""
        return [f"{self.name}: {len(self.prompts)} prompts x {self.protocol.num_samples} samples"]

    @classmethod
    def summary_lines(cls, results: AuditResults) -> list[str]:
        """Lines for the terminal summary beyond the violations (a group that stands out from the pool)."""
        return []

    @classmethod
    def plots(cls, results: AuditResults) -> list[tuple[str, str]]:
        """(title, base64 PNG) pairs for the HTML report, drawn from the results file alone."""
        return []

    def simulator(self) -> Any:
        """The gate simulation's stand-in for this evaluation's scored completions (``benchmarks/``), or ``None``."""
        return None
