"""Machine-readable audit results (``--audit-json``), with a versioned schema.

Every number of the scorecard, the thresholds, the decisions, the provenance
(model, protocol, scorers, versions) and every completion, so that a reviewer
can trace each number back to text and a later run can use the file as
``--baseline``.  The schema is the pydantic model below;
``schema/audit-results-v1.schema.json`` is its JSON Schema, kept in sync by a
test.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from fairness_core.errors import AuditUsageError
from fairness_core.health import confounds, health
from fairness_core.scorecard import MetricResult
from fairness_core.thresholds import DecisionRule
from fairness_core.validation import FrozenModel

SCHEMA_VERSION = 2
SCHEMA_FILE = Path(__file__).parent / "schema" / f"audit-results-v{SCHEMA_VERSION}.schema.json"


class MetricRecord(FrozenModel):
    id: str
    evaluation: str
    metric: str
    attribute: str | None
    template_id: str | None
    category: str | None
    value: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    limit_upper: float | None
    limit_lower: float | None
    decision: Literal["pass", "fail", "skipped"]
    skip_reason: str | None
    aggregate: bool
    sample: str


class MatchRecord(FrozenModel):
    lemma: str
    category: str
    surface: str
    start: int | None
    end: int | None


class CompletionRecord(FrozenModel):
    template_id: str
    attribute: str
    term: str
    prompt: str
    completion: str
    matches: list[MatchRecord] | None = None
    score: float | None = None


class HealthRecord(FrozenModel):
    evaluation: str
    attribute: str
    completions: int
    empty_share: float
    repeat_share: float
    loop_share: float
    mean_length: float


class Provenance(FrozenModel):
    """What produced the numbers: model and backend, seed, attribute set, and each evaluation's protocol,
    templates and scorer or lexicon (``evaluations``); ``not_run`` names the registered evaluations that
    this run did not compute, and why."""

    created: str
    model: dict[str, str]
    fingerprint: dict[str, str] | None
    usage: dict[str, int | float] = {}
    seed: int
    decision_rule: str
    attributes: dict[str, Any]
    evaluations: dict[str, dict[str, Any]]
    not_run: dict[str, str]
    versions: dict[str, str]


class AuditResults(FrozenModel):
    schema_version: Literal[2]
    provenance: Provenance
    thresholds: dict
    metrics: list[MetricRecord]
    health: list[HealthRecord]
    confounds: list[str]
    #: Things the run's reader should know that are not about the model, e.g. cache entries regenerated.
    notes: list[str] = []
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
        id=r.id, evaluation=r.evaluation, metric=r.metric, attribute=r.attribute, template_id=r.template_id,
        category=r.category, value=r.value, interval=r.interval, p_value=r.p_value,
        limit_upper=r.limit.upper if r.limit else None, limit_lower=r.limit.lower if r.limit else None,
        decision=r.decision(rule), skip_reason=r.skip_reason, aggregate=r.aggregate, sample=r.sample,
    )) for r in results]


def build_results(session) -> AuditResults:
    """The results of what ``session`` (an :class:`~fairness_core.session.AuditSession`) has computed."""
    metrics, health_rows, completions, flags = [], [], {}, []
    for name, evaluation in session.evaluations.items():
        metrics += metric_records(session.card(name).results, session.config.decision_rule)
        records = evaluation.completion_records(session.results(name))
        by_group = {g: health([(r.prompt, r.completion) for r in records if r.attribute == g])
                    for g in evaluation.groups}
        health_rows += [HealthRecord(evaluation=name, attribute=g, **vars(h)) for g, h in by_group.items()]
        flags += [f"{name}: {flag}" for flag in confounds(by_group)]
        completions[name] = records
    return AuditResults.model_validate(dict(
        schema_version=SCHEMA_VERSION, provenance=session.provenance(), thresholds=session.config.model_dump(),
        metrics=metrics, health=health_rows, confounds=flags, completions=completions,
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
    if isinstance(raw, dict) and raw.get("schema_version") != SCHEMA_VERSION:
        raise ResultsFileError(f"The audit results file {str(path)!r} has schema_version "
                               f"{raw.get('schema_version')!r}; this version reads {SCHEMA_VERSION}.")
    try:
        return AuditResults.model_validate(raw)
    except ValidationError as err:
        raise ResultsFileError(f"The audit results file {str(path)!r} is not valid audit results:\n{err}") from None


def json_schema() -> dict:
    return AuditResults.model_json_schema()


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
