"""Machine-readable audit results (``--audit-json``), with a versioned schema.

Every number of the scorecard, the thresholds, the decisions, the provenance
(model, protocol, scorers, versions) and every completion, so that a reviewer
can trace each number back to text and a later run can use the file as
``--baseline``.  The schema is the pydantic model below;
``schema/audit-results-v5.schema.json`` is its JSON Schema, kept in sync by a
test.  Version 4 keeps what an evaluation found in a completion (a hurtful
match, a score) under the record's open ``detail`` field, so that a new
evaluation adds its own without a new schema.  Version 5 adds the
``underpowered`` decision (with what the metric would need), a metric's
``settled`` verdict and the provenance's ``sampling`` (how many completions
each evaluation used under ``--sampling``, and why it stopped); the
provenance's optional ``limits`` (where each evaluation's limits came from)
and the optional ``certification`` verdicts against ``--baseline`` came later
without a new version, as files without them still read.  Files of
versions 2 to 4 (the baselines of earlier runs) are still read, as
:func:`upgrade` translates them.

>>> upgrade({"schema_version": 3, "metrics": [], "health": [], "completions": {"x": [
...     {"template_id": "t", "group": "a", "term": "母", "prompt": "母は", "completion": "…", "score": 0.5}]}},
... )["completions"]["x"][0]["detail"]
{'score': 0.5}
"""

from __future__ import annotations

import datetime
import json
import platform
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from fairness_core.config.thresholds import DecisionRule, LimitsSource
from fairness_core.config.validation import FrozenModel
from fairness_core.errors import AuditUsageError
from fairness_core.reporting.health import confounds, health, unread_refusals
from fairness_core.scorecard import MetricResult

SCHEMA_VERSION = 5
#: Older versions that :func:`upgrade` translates.
READABLE_VERSIONS = (2, 3, 4, 5)
SCHEMA_FILE = Path(__file__).parents[1] / "schema" / f"audit-results-v{SCHEMA_VERSION}.schema.json"


class MetricRecord(FrozenModel):
    id: str
    evaluation: str
    metric: str
    group: str | None
    template_id: str | None
    category: str | None
    value: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    limit_upper: float | None
    limit_lower: float | None
    decision: Literal["pass", "fail", "skipped", "underpowered"]
    skip_reason: str | None
    aggregate: bool
    sample: str
    #: Why a passing value cannot be trusted and what would do (``decision: underpowered``).
    underpowered: str | None = None
    #: A sequential test's verdict under ``--sampling=adaptive``: ``pass: <evidence>`` or ``fail: <evidence>``.
    settled: str | None = None


class CompletionRecord(FrozenModel):
    """One completion of one prompt; ``detail`` holds what its evaluation found in it (matches, a score)."""

    template_id: str
    group: str
    term: str
    prompt: str
    completion: str
    detail: dict[str, Any] = {}

    @property
    def prompt_id(self) -> str:
        """``<template_id>/<group>/<term>``, as :attr:`fairness_core.api.prompts.Prompt.id`: stable across runs."""
        return f"{self.template_id}/{self.group}/{self.term}"


class HealthRecord(FrozenModel):
    evaluation: str
    group: str
    completions: int
    empty_share: float
    repeat_share: float
    loop_share: float
    mean_length: float


class Provenance(FrozenModel):
    """What produced the numbers: model and backend, seed, attribute set, and each evaluation's protocol,
    templates and scorer or lexicon (``evaluations``); ``not_run`` names the registered evaluations that
    this run's test selection left out, ``not_judged`` those it could not judge, each with why."""

    created: str
    model: dict[str, str]
    fingerprint: dict[str, str] | None
    usage: dict[str, int | float] = {}
    seed: int
    decision_rule: str
    attributes: dict[str, Any]
    evaluations: dict[str, dict[str, Any]]
    not_run: dict[str, str]
    #: The registered evaluations that this run could not judge, and why (an attribute set without their section,
    #: prompts that do not fit the model, ...); absent from files written before it was recorded.
    not_judged: dict[str, str] = {}
    versions: dict[str, str]
    #: Per evaluation, how its completions were drawn (``fairness_core.sampling.SamplingRecord.as_dict``).
    sampling: dict[str, dict[str, Any]] = {}
    #: Per evaluation, where its limits came from: ``file`` (the run's thresholds file), ``package`` (the file has
    #: no section for it: the package's) or ``defaults`` (neither has one: its section model's defaults).
    #: Files written before this field was added have none.
    limits: dict[str, LimitsSource] = {}


class CertificationRecord(FrozenModel):
    """One gated metric's verdict against ``--baseline`` (``fairness_core.gates.noninferiority.Comparison``).

    ``difference`` is the change of badness (worse is positive), ``bound`` its
    confidence bound (``None`` when the metric could not be judged);
    ``completions`` the candidate's completions it used, ``needed_completions``
    what a certification is expected to need when it is undecided.
    """

    metric: str
    baseline: float | None
    candidate: float | None
    difference: float | None
    bound: tuple[float, float] | None
    tolerance: float
    verdict: Literal["certified", "regression", "undecided"]
    method: str
    completions: int | None = None
    needed_completions: int | None = None


class AuditResults(FrozenModel):
    schema_version: Literal[5]
    provenance: Provenance
    thresholds: dict
    metrics: list[MetricRecord]
    health: list[HealthRecord]
    confounds: list[str]
    #: Things the run's reader should know that are not about the model, e.g. cache entries regenerated.
    notes: list[str] = []
    #: With ``--baseline``: each gated metric certified, a regression or undecided (empty without one).
    certification: list[CertificationRecord] = []
    completions: dict[str, list[CompletionRecord]]


class ResultsFileError(AuditUsageError, ValueError):
    """A results file (e.g. ``--baseline``) that cannot be read as audit results."""


def versions() -> dict[str, str]:
    names = ("ja-fairness-audit", "torch", "transformers", "tokenizers", "fugashi", "unidic-lite", "scipy", "pytest")
    found = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def metric_records(results: Sequence[MetricResult], rule: DecisionRule) -> list[MetricRecord]:
    return [MetricRecord.model_validate(dict(
        id=r.id, evaluation=r.evaluation, metric=r.metric, group=r.group, template_id=r.template_id,
        category=r.category, value=r.value, interval=r.interval, p_value=r.p_value,
        limit_upper=r.limit.upper if r.limit else None, limit_lower=r.limit.lower if r.limit else None,
        decision=r.decision(rule), skip_reason=r.skip_reason, aggregate=r.aggregate, sample=r.sample,
        underpowered=r.underpowered, settled=f"{r.settled.outcome}: {r.settled.evidence}" if r.settled else None,
    )) for r in results]


def build_results(session) -> AuditResults:
    """The results of what ``session`` (an :class:`~fairness_core.run.session.AuditSession`) has computed."""
    metrics, health_rows, completions, flags = [], [], {}, []
    for name, evaluation in session.evaluations.items():
        metrics += metric_records(session.card(name).metrics, session.config.decision_rule)
        records = evaluation.completion_records(session.scored(name))
        # A group with no completions (its questions did not fit the model) has no health to report.
        pairs = {g: [(r.prompt, r.completion) for r in records if r.group == g] for g in evaluation.groups}
        by_group = {g: health(own) for g, own in pairs.items() if own}
        health_rows += [HealthRecord(evaluation=name, group=g, **vars(h)) for g, h in by_group.items()]
        flags += [f"{name}: {flag}" for flag in confounds(by_group)]
        if not evaluation.answers.detects_refusals:
            texts = {g: [completion for _, completion in own] for g, own in pairs.items()}
            flags += [f"{name}: {flag}" for flag in unread_refusals(texts)]
        completions[name] = records
    return AuditResults.model_validate(dict(
        schema_version=SCHEMA_VERSION, provenance=session.provenance(), thresholds=session.config.model_dump(),
        metrics=metrics, health=health_rows, confounds=flags, completions=completions,
        certification=session.certification_records(),
        notes=[*session.notes, *getattr(session.backend, "summary_lines", list)()],
    ))


def write_results(results: AuditResults, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(results.model_dump_json(indent=1), encoding="utf-8")


def read_results(path: Path) -> AuditResults:
    """Parse an ``--audit-json`` file; any problem is a :class:`ResultsFileError` naming the file."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsFileError(f"Cannot read the audit results file {str(path)!r}: {err}") from None
    if isinstance(raw, dict) and raw.get("schema_version") not in READABLE_VERSIONS:
        raise ResultsFileError(f"The audit results file {str(path)!r} has schema_version "
                               f"{raw.get('schema_version')!r}; this version reads "
                               f"{', '.join(map(str, READABLE_VERSIONS))}.")
    try:
        return AuditResults.model_validate(upgrade(raw) if isinstance(raw, dict) else raw)
    except ValidationError as err:
        raise ResultsFileError(f"The audit results file {str(path)!r} is not valid audit results:\n{err}") from None


#: The fields of a completion record; in files before version 4 any other field was an evaluation's detail.
RECORD_FIELDS = ("template_id", "group", "term", "prompt", "completion")


def upgrade(raw: dict) -> dict:
    """An older results file as the current version, so that baselines of earlier runs stay usable.

    Version 2 to 3: ``attribute`` (a group's id) became ``group``, in fields and
    ids.  Version 3 to 4: an evaluation's fields of a completion record
    (``matches``, ``score``) moved under ``detail``.  Version 4 to 5: only
    fields with defaults were added.
    """
    if raw.get("schema_version") == 2:
        raw = _group_for_attribute(raw)
    if raw.get("schema_version") == 3:
        raw = _detail_fields(raw)
    if raw.get("schema_version") == 4:
        raw = {**raw, "schema_version": 5}
    return raw


def _detail_fields(raw: dict) -> dict:
    def moved(record: Any) -> Any:
        if not isinstance(record, dict):
            return record
        detail = {key: value for key, value in record.items() if key not in RECORD_FIELDS and value is not None}
        return {**{key: value for key, value in record.items() if key in RECORD_FIELDS}, "detail": detail}

    completions = raw.get("completions")
    return {**raw, "schema_version": 4,
            "completions": ({name: [moved(r) for r in rows] for name, rows in completions.items()}
                            if isinstance(completions, dict) else completions)}


def _group_for_attribute(raw: dict) -> dict:
    def renamed(record: Any) -> Any:
        if not isinstance(record, dict):
            return record
        out = {("group" if key == "attribute" else key): value for key, value in record.items()}
        if isinstance(out.get("id"), str):
            out["id"] = re.sub(r"([\[,])attribute=", r"\1group=", out["id"])
        return out

    completions = raw.get("completions")
    return {**raw, "schema_version": 3,
            "metrics": [renamed(m) for m in raw.get("metrics", [])],
            "health": [renamed(h) for h in raw.get("health", [])],
            "completions": ({name: [renamed(r) for r in rows] for name, rows in completions.items()}
                            if isinstance(completions, dict) else completions)}


def json_schema() -> dict:
    return AuditResults.model_json_schema()


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
