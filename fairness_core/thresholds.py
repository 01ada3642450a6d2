"""``thresholds.yaml``: the audit's limits and generation protocol, validated up front.

Every model is frozen with ``extra='forbid'``: a misspelled key is an error that
names the key's dotted location and the keys allowed there, raised once at
start-up instead of as a wrong default discovered after an hour of generation.

>>> SamplingProtocol()
SamplingProtocol(num_samples=20, max_new_tokens=10, do_sample=True, top_k=50, top_p=1.0, temperature=1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from fairness_core.errors import AuditUsageError, did_you_mean
from fairness_core.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED, LexiconLevel
from fairness_core.validation import describe_errors
from fairness_core.yaml_files import read_yaml_file

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
Category = Literal[tuple(HURTLEX_CATEGORIES) + (UNCATEGORISED,)]  # type: ignore[valid-type]


class ThresholdsError(AuditUsageError):
    """``thresholds.yaml`` is unreadable or invalid; the message says where and how to fix it."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class SamplingProtocol(_Strict):
    """How completions are drawn; defaults are the HONEST reference protocol.

    ``top_k=0`` and ``top_p=1.0`` switch those filters off, as in ``transformers``.
    """

    num_samples: Annotated[int, Field(gt=0)] = 20
    max_new_tokens: Annotated[int, Field(gt=0)] = 10
    do_sample: bool = True
    top_k: Annotated[int, Field(ge=0)] = 50
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    temperature: Annotated[float, Field(gt=0.0)] = 1.0


#: One limit per group id of the attribute set (``{female: 0.10, male: 0.10}``).
GroupRates = dict[str, Rate]


def group_problems(config: AuditConfig, groups: tuple[str, ...], *, where: str, set_name: str = "<set>") -> list[str]:
    """How the per-group limits of ``config`` disagree with the attribute set's ``groups``.

    The groups come from the attribute set, not from the thresholds file, so this
    check runs once both are known; each problem names the dotted key.
    """
    problems = []
    rates = config.honest.max_honest_score
    missing = [g for g in groups if g not in rates]
    unknown = [g for g in rates if g not in groups]
    if missing:
        example = ", ".join(f"{g}: 0.10" for g in groups)
        problems.append(f"{where}: honest.max_honest_score has no limit for the group(s) {missing}; "
                        f"give one per group: {', '.join(groups)}. For your own attribute set, write them in your "
                        f"own thresholds file (a copy of the shipped one) and pass --thresholds=my-thresholds.yaml, "
                        f"with: attributes: {{{set_name}: {{honest: {{max_honest_score: {{{example}}}}}}}}}")
    if unknown:
        problems.append(f"{where}: honest.max_honest_score names unknown group(s) {unknown}; "
                        f"the groups are {', '.join(groups)}")
    return problems


def attribute_set_problems(config: AuditConfig, known: Sequence[str], *, where: str) -> list[str]:
    """Keys under ``attributes:`` that name no attribute set ``known`` to this run (a typo loosens nothing silently).

    Without this check ``occupaton:`` would be ignored and occupation audited
    with the top-level protocol and limits.
    """
    problems = []
    for name in config.attributes:
        if name not in known:
            problems.append(f"{where}: attributes.{name} names no attribute set.{did_you_mean(name, known)} "
                            f"Known sets: {', '.join(known)}")
    return problems


class HonestConfig(_Strict):
    """Limits of the HONEST audit.

    ``max_ratio`` bounds the HONEST-score ratio in both directions: with 2.0 a
    ratio above 2.0 or below 0.5 is a violation.  With two groups the ratio is
    the first group's score over the second's (as declared in the attribute
    set); with more, the highest group's over the lowest's.  The ratio of two
    near-zero rates is noise (1 hurtful completion against 0 gives 3.0), so it
    is judged only once both attributes together have ``min_hits_for_ratio``
    hurtful completions; below that the per-attribute limits govern.
    """

    protocol: SamplingProtocol = SamplingProtocol()
    lexicon_level: LexiconLevel = "conservative"
    max_honest_score: GroupRates
    max_template_score: Rate
    max_ratio: Annotated[float, Field(ge=1.0)]
    min_hits_for_ratio: Annotated[int, Field(ge=0)] = 10
    max_category_score: dict[Category, Rate] = {}  # type: ignore[valid-type]


class SentimentConfig(_Strict):
    """Limits of the sentiment group-fairness audit (Huang et al. 2020).

    Distances are Wasserstein-1 between score distributions in [0, 1].
    ``label_positivity`` maps a classifier's labels to positivity when their
    names are not recognised (e.g. ``{LABEL_0: 0.0, LABEL_1: 1.0}``).
    """

    protocol: SamplingProtocol = SamplingProtocol(num_samples=1, max_new_tokens=40)
    label_positivity: dict[str, Rate] = {}
    max_group_distance: Rate
    max_average_group_fairness: Rate
    max_template_distance: Rate
    max_mean_gap: Rate
    max_counterfactual_distance: Rate


MetricName = Literal["honest_score", "honest_ratio", "category_score", "group_distance",
                     "average_group_fairness", "mean_gap", "counterfactual_fairness"]


class RegressionConfig(_Strict):
    """How much worse than ``--baseline`` a metric may get before it is a regression.

    Worse means higher, and for the ratio further from 1 (compared as ``|log ratio|``).
    A regression also has to be significant: a one-sided test of the difference
    of the two runs' estimates, at ``alpha`` over all gated metrics together.
    """

    tolerance: dict[MetricName, Annotated[float, Field(ge=0.0)]] = {}
    default_tolerance: Annotated[float, Field(ge=0.0)] = 0.02
    alpha: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05


def _partial(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with every field optional: the keys one attribute set may override, each validated as usual."""
    def optional(info: Any) -> Any:
        constrained = Annotated.__class_getitem__(  # type: ignore[attr-defined]
            (info.annotation, *info.metadata)) if info.metadata else info.annotation
        return constrained | None

    fields: dict[str, Any] = {name: (optional(info), None) for name, info in model.model_fields.items()}
    return create_model(f"{model.__name__}Override", __base__=_Strict, **fields)


HonestOverride = _partial(HonestConfig)
SentimentOverride = _partial(SentimentConfig)


class AttributeSetLimits(_Strict):
    """Limits that differ for one attribute set (``attributes: {nationality: {honest: {max_ratio: 2.5}}}``).

    More groups mean more comparisons and smaller groups; a set may need looser
    or per-group limits.  Keys left out keep the top-level value.
    """

    honest: HonestOverride | None = None  # type: ignore[valid-type]
    sentiment: SentimentOverride | None = None  # type: ignore[valid-type]


class AuditConfig(_Strict):
    """The whole of ``thresholds.yaml``.

    ``decision_rule``: ``point`` (the estimate against the threshold),
    ``confident`` (fail only when the whole 95% interval is past the threshold)
    or ``strict`` (pass only when the whole interval is inside).
    ``attributes`` overrides limits for named attribute sets.
    """

    decision_rule: Literal["point", "confident", "strict"] = "point"
    honest: HonestConfig
    sentiment: SentimentConfig
    regression: RegressionConfig = RegressionConfig()
    attributes: dict[str, AttributeSetLimits] = {}

    def for_attribute_set(self, name: str) -> AuditConfig:
        """The limits in force for the attribute set ``name``: the top level with that set's overrides."""
        limits = self.attributes.get(name)
        if limits is None:
            return self
        update = {section: type(current).model_validate({**current.model_dump(), **override.model_dump(exclude_none=True)})
                  for section in ("honest", "sentiment")
                  if (override := getattr(limits, section)) is not None and (current := getattr(self, section))}
        return self.model_copy(update=update)


def load_thresholds(path: str | Path) -> AuditConfig:
    """Read and validate ``path``; every problem is reported at once in one error."""
    path = Path(path)
    raw, _ = read_yaml_file(path, what="thresholds file", error=ThresholdsError)
    try:
        return AuditConfig.model_validate(raw)
    except ValidationError as err:
        problems = "\n".join(f"  - {line}" for line in describe_errors(err, AuditConfig))
        raise ThresholdsError(f"The thresholds file {str(path)!r} is invalid:\n{problems}") from None
