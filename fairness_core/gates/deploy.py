"""What the deploy gate can detect under the thresholds in force: the header's ``gate:`` line and ``ja-fairness-audit plan``.

The deploy gate is the audit's limits judged on one run (``thresholds.yaml``);
the regression gate (:mod:`fairness_core.gates.regression`) compares a run with
a baseline.  The deploy gate's false-alarm rate and the smallest effects it
finds with 90% power are those that ``benchmarks/operating_characteristics.py``
measured on simulated runs of the shipped ``thresholds.yaml``
(``data/operating_characteristics.yaml``).  They are stored by a fingerprint
of each attribute set's limits and protocols, so that a changed thresholds
file is never described by another file's figures: it gets a line that says
how to measure its own.

>>> from fairness_core.config.package_data import default_thresholds_path
>>> from fairness_core.api.user_files import load_thresholds
>>> gate_line(load_thresholds(default_thresholds_path()), "gender").startswith("gate: <= 5% false alarms")
True
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from typing import TYPE_CHECKING

import yaml
from pydantic import TypeAdapter

from fairness_core.config.thresholds import AuditConfig
from fairness_core.config.validation import FrozenModel
from fairness_core.sampling import ADAPTIVE, FIXED

if TYPE_CHECKING:
    from fairness_core.api.evaluation import Evaluation
    from fairness_core.api.options import AuditOptions


class Characteristics(FrozenModel):
    """One attribute set's measured operating characteristics (simulated, shipped thresholds)."""

    fingerprint: str
    false_alarms: str
    detects: tuple[str, ...]


@functools.cache
def measured() -> dict[str, Characteristics]:
    """The measured characteristics by attribute set (``data/operating_characteristics.yaml``)."""
    text = (resources.files("fairness_core.data") / "operating_characteristics.yaml").read_text(encoding="utf-8")
    return TypeAdapter(dict[str, Characteristics]).validate_python(yaml.safe_load(text))


def fingerprint(config: AuditConfig, attributes: str) -> str:
    """A short hash of everything a set's verdicts depend on: its limits, rule and protocols."""
    # The regression section (tolerances, alpha, what an undecided certification does against --baseline) is no
    # part of the deploy gate's verdicts.
    dumped = config.for_attribute_set(attributes).model_dump(mode="json", exclude={"attributes": True, "regression": True})
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:16]


def gate_line(config: AuditConfig, attributes: str) -> str:
    """The header's one line on what this gate can detect, or how to measure it for these thresholds."""
    found = measured().get(attributes)
    if found is None or found.fingerprint != fingerprint(config, attributes):
        return (f"gate: operating characteristics not measured for these thresholds and --attributes={attributes} "
                f"(python benchmarks/operating_characteristics.py --thresholds=FILE --attributes {attributes})")
    return (f"gate: <= 5% false alarms for a fair model (simulated {found.false_alarms}); detects "
            f"{' and '.join(found.detects)} with 90% power")


def plan_lines(config: AuditConfig, attributes: str, evaluations: dict[str, Evaluation], not_run: dict[str, str],
               options: AuditOptions, *, sampling: str = FIXED) -> list[str]:
    """``ja-fairness-audit plan``: each evaluation's prompts and limits, what is not run and why, and the gate line.

    ``attributes`` is the attribute set's name (the key of its limits and of
    its measured characteristics).  An option of an evaluation that is not run
    is named, so that its question does not go unanswered without a word.
    ``sampling`` is the ``--sampling`` mode planned for.
    Reads the attribute set and the thresholds only: no model, no lexicon, no scorer.
    """
    from fairness_core.api.discovery import EVALUATIONS

    prompt_format = options.settings.prompt_format
    lines = [f"--attributes={attributes}, decision rule {config.decision_rule}",
             f"--prompt-format={prompt_format.name}: max_new_tokens " + ", ".join(
                 f"{name} {prompt_format.sampled(evaluation.protocol).max_new_tokens}"
                 for name, evaluation in evaluations.items())]
    if sampling == ADAPTIVE:
        stops = [name for name, evaluation in evaluations.items() if evaluation.sequential_test() is not None]
        lines.append(f"--sampling={ADAPTIVE}: " + "; ".join(
            f"{name} draws rounds until its verdict is settled, at most the samples below" if name in stops
            else f"{name} runs its fixed protocol (no sequential test)" for name in evaluations))
    lines += [f"  {line}" for evaluation in evaluations.values() for line in evaluation.plan_lines(options)]
    for name, why in not_run.items():
        asked = [option.flag for option in EVALUATIONS.load(name).options if options.values.get(option.dest) is not None]
        lines.append(f"  {name}: {why}" + (f"; {', '.join(asked)} has nothing to answer" if asked else ""))
    lines.append(f"  {gate_line(config, attributes)}")
    return lines
