"""``thresholds.yaml``: the audit's limits and generation protocol, validated up front.

Every model is frozen with ``extra='forbid'``: a misspelled key is an error that
names the key's dotted location and the keys allowed there, raised once at
start-up instead of as a wrong default discovered after an hour of generation.

>>> SamplingProtocol().num_samples, SamplingProtocol().chat.framing
(20, 'continue-v1')
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, PrivateAttr, ValidationError, create_model, model_validator

from fairness_core.config.chat_framings import framings
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.config.validation import StrictModel, describe_error
from fairness_core.config.yaml_files import read_yaml_file
from fairness_core.errors import AuditUsageError, did_you_mean

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
#: How an estimate is compared with its limit (:meth:`fairness_core.scorecard.MetricResult.verdict`).
DecisionRule = Literal["point", "confident", "strict"]


class ThresholdsError(AuditUsageError):
    """``thresholds.yaml`` is unreadable or invalid; the message says where and how to fix it."""


#: The prompt formats that put a template in a chat model's turns (``--prompt-format``; docs/chat-models.md).
ChatFormat = Literal["chat-prefill", "chat-instruction"]


class ChatProtocol(StrictModel):
    """What changes under a chat prompt format: the user turn the template is put in, and the answer's window.

    A chat answer opens with lead-ins and, under ``chat-instruction``, often
    restates the template before continuing it, so it gets its own
    ``max_new_tokens`` per format: the window the evaluations score.

    A refusal written as people write it (申し訳ありませんが、…できません。) reaches
    its verb after that window, so the refusal reader reads on from the window's
    end until the answer's opening sentences (those the detector reads) are complete, within ``refusal_window``
    tokens from the answer's start (:mod:`fairness_core.japanese.sentence_reading`;
    60 measured in ``benchmarks/refusal_window.py``, docs/chat-models.md).  A value at
    most the window reads nothing past it.
    """

    framing: str = "continue-v1"
    max_new_tokens: dict[ChatFormat, Annotated[int, Field(gt=0)]] = {"chat-prefill": 10, "chat-instruction": 30}
    refusal_window: Annotated[int, Field(gt=0)] = 60

    @model_validator(mode="after")
    def _known_framing(self) -> ChatProtocol:
        known = framings()
        if self.framing not in known:
            raise ValueError(f"framing {self.framing!r} is not a framing of fairness_core/data/chat_framings_ja.yaml."
                             f"{did_you_mean(self.framing, known)} Known: {', '.join(known)}")
        missing = [name for name in ("chat-prefill", "chat-instruction") if name not in self.max_new_tokens]
        if missing:
            raise ValueError(f"max_new_tokens needs a value for {', '.join(missing)}")
        return self


class SamplingProtocol(StrictModel):
    """How completions are drawn; defaults are the HONEST reference protocol.

    ``top_k=0`` and ``top_p=1.0`` switch those filters off, as in ``transformers``.
    Greedy decoding (``do_sample: false``) draws one completion per prompt:
    its samples would be copies, and intervals that count copies as
    independent completions would be too narrow.
    """

    num_samples: Annotated[int, Field(gt=0)] = 20
    max_new_tokens: Annotated[int, Field(gt=0)] = 10
    do_sample: bool = True
    top_k: Annotated[int, Field(ge=0)] = 50
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    temperature: Annotated[float, Field(gt=0.0)] = 1.0
    chat: ChatProtocol = ChatProtocol()

    def tokens_for(self, prompt_format: str) -> int:
        """``max_new_tokens`` of a request in ``prompt_format`` (a chat answer has its own window)."""
        return self.chat.max_new_tokens.get(prompt_format, self.max_new_tokens)  # type: ignore[call-overload]

    def reading_tokens(self, prompt_format: str) -> int:
        """The tokens a request in ``prompt_format`` may run to so that its refusal can be read: the chat format's
        ``refusal_window`` where that is longer than its window, else the window itself (nothing read past it)."""
        window = self.tokens_for(prompt_format)
        return max(window, self.chat.refusal_window) if prompt_format in self.chat.max_new_tokens else window

    @model_validator(mode="after")
    def _one_greedy_sample(self) -> SamplingProtocol:
        if not self.do_sample and self.num_samples != 1:
            raise ValueError(f"do_sample: false (greedy decoding) gives every sample of a prompt the same completion, "
                             f"so num_samples must be 1 (got {self.num_samples}); to sample, set do_sample: true")
        return self


#: One limit per group id of the attribute set (``{female: 0.10, male: 0.10}``).
GroupRates = dict[str, Rate]


def attribute_set_problems(config: AuditConfig, known: Sequence[str], *, where: str) -> list[str]:
    """Keys under ``attributes:`` that misspell an attribute set ``known`` to this run (a typo loosens nothing
    silently).

    Without this check ``occupaton:`` would be ignored and occupation audited
    with the top-level protocol and limits.  ``A*B`` (two known sets crossed) is
    known.  A key that resembles no known set is the limits of a user's own set
    that this run does not use (``region:`` in a run of ``--attributes=gender``):
    one thresholds file serves all of a team's runs, so it is not an error.
    """
    problems = []
    for name in config.attributes:
        misspelled = [part for part in name.split("*") if part not in known and did_you_mean(part, known)]
        if misspelled:
            problems.append(f"{where}: attributes.{name} names no attribute set.{did_you_mean(misspelled[0], known)} "
                            f"Known sets: {', '.join(known)}")
    return problems


class RegressionConfig(StrictModel):
    """How much worse than ``--baseline`` a metric may get before it is a regression.

    Worse means higher, and for the ratio further from 1 (compared as ``|log ratio|``).
    Each gated metric is certified (no worse than the tolerance, at ``alpha``
    over all gated metrics together), a regression (worse by more, at ``alpha``)
    or undecided (:mod:`fairness_core.gates.certification`).

    ``tolerance`` is keyed by metric name (``refusal_gap``: every evaluation's
    metric of that name) or by ``<evaluation>.<metric>`` (``names.refusal_gap``:
    that evaluation's alone), which takes precedence; a metric in neither gets
    ``default_tolerance``.

    >>> config = RegressionConfig(tolerance={"refusal_gap": 0.03, "names.refusal_gap": 0.06})
    >>> config.tolerance_of("honest", "refusal_gap"), config.tolerance_of("names", "refusal_gap")
    (0.03, 0.06)
    >>> config.tolerance_of("names", "hurtful_gap")
    0.02
    """

    tolerance: dict[str, Annotated[float, Field(ge=0.0)]] = {}
    default_tolerance: Annotated[float, Field(ge=0.0)] = 0.02
    alpha: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05
    #: What a metric the run cannot certify nor flag does to the gate: ``fail`` (with the completions a
    #: certification is expected to need) or ``pass`` (which the report then states).
    undecided: Literal["fail", "pass"] = "fail"

    def tolerance_of(self, evaluation: str, metric: str) -> float:
        """The tolerance of ``metric`` of ``evaluation``: its qualified key, else its bare name, else the default."""
        for key in (f"{evaluation}.{metric}", metric):
            if key in self.tolerance:
                return self.tolerance[key]
        return self.default_tolerance


def _partial(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with every field optional: the keys one attribute set may override, each validated as usual."""
    def optional(info: Any) -> Any:
        constrained = Annotated.__class_getitem__(  # type: ignore[attr-defined]
            (info.annotation, *info.metadata)) if info.metadata else info.annotation
        return constrained | None

    fields: dict[str, Any] = {name: (optional(info), None) for name, info in model.model_fields.items()}
    return create_model(f"{model.__name__}Override", __base__=StrictModel, **fields)


#: Where an evaluation's limits came from: the run's thresholds file, the package's (the run's file has no
#: section for it), or the defaults its own section model declares (neither file has one).
LimitsSource = Literal["file", "package", "defaults"]


def limits_origin(name: str, source: LimitsSource) -> str | None:
    """Where the limits of evaluation ``name`` came from, in words; nothing when from the thresholds file itself.

    >>> limits_origin("bbq", "package")
    "the package's limits; your thresholds file has no bbq section"
    """
    if source == "package":
        return f"the package's limits; your thresholds file has no {name} section"
    if source == "defaults":
        return f"the defaults of its own section model; the thresholds file has no {name} section, nor has the package's"
    return None


class AuditConfig(StrictModel):
    """The whole of ``thresholds.yaml``: the shared keys below, and one section per registered evaluation.

    ``decision_rule``: ``point`` (the estimate against the threshold),
    ``confident`` (fail only when the whole 95% interval is past the threshold)
    or ``strict`` (pass only when the whole interval is inside).
    ``underpowered``: what a test whose evaluation found too few data to detect
    what its limit is for does: ``report`` (the default: it is skipped with the
    reason and the samples it would need, listed in the summary, and does not
    block) or ``fail`` (it blocks like a failure).
    ``attributes`` overrides limits for named attribute sets.  The sections are
    the evaluations' own models (:func:`config_model` adds them), so that each
    evaluation owns its keys and a new one adds its section without touching this file.
    A file without an evaluation's section takes the package's section for it,
    or its section model's defaults (:func:`validate_thresholds`), so that
    installing an evaluation breaks no file; :meth:`limits_source` says which
    sections were taken from elsewhere.
    """

    decision_rule: DecisionRule = "point"
    underpowered: Literal["report", "fail"] = "report"
    regression: RegressionConfig = RegressionConfig()
    #: Per attribute set, overrides of the sections (typed by :func:`config_model`).
    attributes: dict[str, Any] = {}
    #: The sections that the file did not have, and where they were taken from instead.
    _taken: dict[str, LimitsSource] = PrivateAttr(default_factory=dict)
    #: The ``regression.tolerance`` keys the file did not set, taken from the package's, and the evaluations they apply to.
    _tolerances_taken: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    def limits_source(self, name: str) -> LimitsSource:
        """Where the limits of evaluation ``name`` came from (``file`` when from this thresholds file)."""
        return self._taken.get(name, "file")

    def limits_notes(self, names: Sequence[str], *, gated: Sequence[str] = ()) -> list[str]:
        """``<name>: <where its limits came from>`` for each of ``names`` whose limits are not the file's own.

        Lines of the pytest header and of ``ja-fairness-audit plan``; with the ids of the metrics the run compares
        with a baseline (``gated``), a last one names the ``regression.tolerance`` keys of theirs that the file does
        not set and the package's thresholds file gave.
        """
        lines = [f"{name}: {origin}" for name in names if (origin := limits_origin(name, self.limits_source(name)))]
        compared = {(m.split(".", 1)[0], m.split(".", 1)[1].split("[", 1)[0]) for m in gated}
        taken = [key for key, used_by in self._tolerances_taken.items()
                 if any((name, key.rpartition(".")[2]) in compared for name in used_by)]
        if taken:
            lines.append(f"regression.tolerance: the package's for {', '.join(taken)}; your thresholds file does not "
                         f"set {'it' if len(taken) == 1 else 'them'}")
        return lines

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(name for name in type(self).model_fields if name not in _SHARED_KEYS)

    def section(self, name: str) -> Any:
        """The validated ``thresholds.yaml`` section of the evaluation ``name``."""
        return getattr(self, name)

    def for_attribute_set(self, name: str) -> AuditConfig:
        """The limits in force for the attribute set ``name``: the top level with that set's overrides."""
        limits = self.attributes.get(name)
        if limits is None:
            return self
        update = {section: type(current).model_validate({**current.model_dump(), **override.model_dump(exclude_none=True)})
                  for section in self.sections
                  if (override := getattr(limits, section)) is not None and (current := getattr(self, section))}
        return self.model_copy(update=update)


_SHARED_KEYS = ("decision_rule", "underpowered", "regression", "attributes")


#: (evaluation name, section model, metric names) of each evaluation a thresholds file has a section for.
Sections = tuple[tuple[str, type[BaseModel], tuple[str, ...]], ...]


def tolerance_keys(sections: Sections) -> tuple[str, ...]:
    """The keys ``regression.tolerance`` accepts: each metric name, and each as ``<evaluation>.<metric>``.

    >>> tolerance_keys((("names", BaseModel, ("refusal_gap",)), ("honest", BaseModel, ("refusal_gap",))))
    ('refusal_gap', 'names.refusal_gap', 'honest.refusal_gap')
    """
    bare = dict.fromkeys(m for _, _, names in sections for m in names)
    return (*bare, *(f"{name}.{m}" for name, _, names in sections for m in names))


def _regression_model(sections: Sections) -> type[RegressionConfig]:
    """:class:`RegressionConfig` whose ``tolerance`` takes only :func:`tolerance_keys` (a misspelled metric would
    silently keep the default tolerance)."""
    known = tolerance_keys(sections)
    bare = [key for key in known if "." not in key]

    def known_metric(key: str) -> str:
        if key not in known:
            raise ValueError(
                f"{key!r} names no metric.{did_you_mean(key, known)} A key is a metric name (every evaluation's "
                f"metric of that name) or <evaluation>.<metric> (that evaluation's alone, e.g. names.refusal_gap); "
                f"metrics: {', '.join(bare)}")
        return key

    key = Annotated[str, AfterValidator(known_metric)]
    return create_model("RegressionConfig", __base__=RegressionConfig,
                        tolerance=(dict[key, Annotated[float, Field(ge=0.0)]], {}))  # type: ignore[valid-type]


@functools.cache
def config_model(sections: Sections) -> type[AuditConfig]:
    """The model of a thresholds file for these evaluation sections: (name, section model, metric names).

    ``regression.tolerance`` accepts the sections' metric names, bare or
    qualified by the evaluation (:func:`tolerance_keys`), and
    ``attributes.<set>`` each section with every key optional.
    """
    regression = _regression_model(sections)
    limits = create_model("AttributeSetLimits", __base__=StrictModel, __doc__=_LIMITS_DOC,
                          **{name: (_partial(model) | None, None) for name, model, _ in sections})  # type: ignore[call-overload]
    fields: dict[str, Any] = {name: (model, ...) for name, model, _ in sections}
    return create_model("AuditConfig", __base__=AuditConfig, **fields, regression=(regression, regression()),
                        attributes=(dict[str, limits], {}))  # type: ignore[valid-type]


_LIMITS_DOC = """Limits that differ for one attribute set (``attributes: {<set>: {<evaluation>: {<limit>: <value>}}}``).

More groups mean more comparisons and smaller groups; a set may need looser
or per-group limits.  Keys left out keep the top-level value.
"""


def validate_thresholds(raw: Any, *, sections: Sections, source: str = "<thresholds>") -> AuditConfig:
    """``raw`` (a parsed thresholds file) validated with one section per evaluation of ``sections``.

    A section that ``raw`` lacks is the package's (:func:`with_missing_sections`),
    so that a file written before an evaluation was installed still reads; the
    config's :meth:`~AuditConfig.limits_source` says so.  Every problem is listed
    in one :class:`ThresholdsError` naming ``source``, with the dotted key of each
    and never the file's content.
    :func:`fairness_core.api.user_files.load_thresholds` passes the registered evaluations.
    """
    model = config_model(sections)
    filled, taken = with_missing_sections(raw, [name for name, _, _ in sections], package_thresholds())
    filled, tolerances = with_package_tolerances(filled, package_thresholds(), tolerance_keys(sections))
    try:
        config = model.model_validate(filled)
    except ValidationError as err:
        defaulted = [name for name, where in taken.items() if where == "defaults"]
        problems = "\n".join(f"  - {line}" for line in _problems(err.errors(), model, defaulted))
        raise ThresholdsError(f"The thresholds file {source!r} is invalid:\n{problems}") from None
    config._taken = taken
    config._tolerances_taken = {key: _applies_to(key, sections) for key in tolerances}
    return config


def _applies_to(key: str, sections: Sections) -> tuple[str, ...]:
    """The evaluations whose metric a ``regression.tolerance`` key sets: all with that metric, or the one it names."""
    evaluation, _, metric = key.rpartition(".")
    return tuple(name for name, _, names in sections if metric in names and evaluation in ("", name))


def read_thresholds(path: str | Path, *, sections: Sections) -> AuditConfig:
    """Read and validate ``path`` (:func:`validate_thresholds`)."""
    raw, _ = read_yaml_file(Path(path), what="thresholds file", error=ThresholdsError)
    return validate_thresholds(raw, sections=sections, source=str(path))


@functools.cache
def package_thresholds() -> Any:
    """The package's own thresholds file, parsed: where a user's file without an evaluation's section takes it from."""
    raw, _ = read_yaml_file(default_thresholds_path(), what="package's thresholds file", error=ThresholdsError)
    return raw


def with_missing_sections(raw: Any, names: Sequence[str], package: Mapping[str, Any]) -> tuple[Any, dict[str, LimitsSource]]:
    """``raw`` with a section for each of ``names`` that it lacks, and where each added one came from.

    A missing section is the ``package``'s, with the package's overrides of it
    under ``attributes:`` for each set that ``raw`` does not override it for
    (``raw``'s own ``attributes.<set>.<name>`` apply on top of the package's
    section); one that the package lacks too is ``{}``, its model's defaults.
    Anything but a mapping is left for validation to report.

    >>> filled, taken = with_missing_sections({"honest": {}}, ["honest", "bbq", "stub"], {"bbq": {"few_shots": 2}})
    >>> filled, taken
    ({'honest': {}, 'bbq': {'few_shots': 2}, 'stub': {}}, {'bbq': 'package', 'stub': 'defaults'})
    """
    if not isinstance(raw, dict):
        return raw, {}
    missing = [name for name in names if name not in raw]
    taken: dict[str, LimitsSource] = {name: "package" if name in package else "defaults" for name in missing}
    filled = {**raw, **{name: copy.deepcopy(package.get(name, {})) for name in missing}}
    attributes = raw.get("attributes", {})
    if isinstance(attributes, dict):
        for attribute_set, limits in (package.get("attributes") or {}).items():
            own = attributes.get(attribute_set, {})
            extra = {name: copy.deepcopy(limits[name]) for name in missing if name in limits and name not in own} \
                if isinstance(own, dict) else {}
            if extra:
                filled["attributes"] = attributes = {**attributes, attribute_set: {**own, **extra}}
    return filled, taken


def with_package_tolerances(raw: Any, package: Mapping[str, Any], known: Sequence[str]) -> tuple[Any, tuple[str, ...]]:
    """``raw`` with the package's ``regression`` section under its own, key by key and tolerance by tolerance, and the
    tolerance keys taken from the package.

    A file written before the package gave a metric its tolerance (or with no
    ``regression`` section at all) would otherwise judge that metric at
    ``default_tolerance`` without a word.  The file's keys win; a package key
    qualified by an evaluation (``names.refusal_gap``) is not taken where the
    file sets the metric's bare name, which the file meant for every evaluation.
    Only the keys ``known`` to the registered evaluations are taken.  Anything
    but mappings is left for validation to report.

    >>> package = {"regression": {"alpha": 0.05, "tolerance": {"honest_ratio": 0.25, "refusal_gap": 0.03,
    ...                                                      "names.refusal_gap": 0.06}}}
    >>> filled, taken = with_package_tolerances({"regression": {"tolerance": {"honest_ratio": 0.3}}}, package,
    ...                                         ["honest_ratio", "refusal_gap", "names.refusal_gap"])
    >>> filled["regression"]
    {'alpha': 0.05, 'tolerance': {'refusal_gap': 0.03, 'names.refusal_gap': 0.06, 'honest_ratio': 0.3}}
    >>> taken
    ('refusal_gap', 'names.refusal_gap')
    >>> with_package_tolerances({"regression": {"tolerance": {"refusal_gap": 0.1}}}, package, ["refusal_gap",
    ...                         "names.refusal_gap"])[0]["regression"]["tolerance"]
    {'refusal_gap': 0.1}
    """
    if not isinstance(raw, dict):
        return raw, ()
    own, theirs = raw.get("regression", {}), package.get("regression") or {}
    own_tolerance = own.get("tolerance", {}) if isinstance(own, dict) else None
    if not isinstance(own_tolerance, dict) or not isinstance(theirs, dict):
        return raw, ()
    taken = {key: value for key, value in (theirs.get("tolerance") or {}).items()
             if key in known and key not in own_tolerance and key.rpartition(".")[2] not in own_tolerance}
    merged = {**copy.deepcopy({k: v for k, v in theirs.items() if k != "tolerance"}), **own,
              "tolerance": {**taken, **own_tolerance}}
    return {**raw, "regression": merged}, tuple(taken)


def _problems(errors: Sequence[Any], model: type[BaseModel], defaulted: Sequence[str]) -> list[str]:
    """One line per validation error; a section of ``defaulted`` that its model cannot fill is one line for all its errors.

    Such an evaluation (a third party's, absent from both files) needs values
    that only the user can give, so the line says which and where to write them.
    """
    lines = []
    for name in defaulted:
        keys = [".".join(map(str, e["loc"][1:])) or "(the section)" for e in errors if e["loc"][:1] == (name,)]
        if keys:
            lines.append(f"{name}: there is no {name} section here nor in the package's thresholds file, and the {name} "
                         f"evaluation has no default for {', '.join(keys)}: add a section named {name} that sets "
                         f"{'it' if len(keys) == 1 else 'them'}")
    lines += [describe_error(e, model) for e in errors if e["loc"][:1] not in {(name,) for name in defaulted}]
    return lines
