"""The run's files read against the registered evaluations: ``thresholds.yaml`` and attribute sets.

Both files hold one section per evaluation, each validated by that
evaluation's own model; these loaders take the sections from the evaluation
registry, so that the thresholds and attribute-set modules need not know it.

>>> load_attribute_set("nationality").groups[:3]
('japanese', 'chinese', 'korean')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.config import attribute_sets, thresholds
from fairness_core.config.attribute_sets import AttributeSet
from fairness_core.config.thresholds import AuditConfig


def threshold_sections() -> thresholds.Sections:
    """(name, section model, metric names) of every registered evaluation, in registry order."""
    classes = [(name, EVALUATIONS.load(name)) for name in EVALUATIONS]
    return tuple((name, cls.config_model, tuple(spec.name for spec in cls.metric_specs)) for name, cls in classes)


def attribute_sections() -> attribute_sets.Sections:
    """(name, section model) of every registered evaluation with a section in attribute-set files."""
    classes = [(name, EVALUATIONS.load(name)) for name in EVALUATIONS]
    return tuple((name, cls.attribute_section) for name, cls in classes if cls.attribute_section is not None)


def load_thresholds(path: str | Path) -> AuditConfig:
    """Read and validate a thresholds file, one section per registered evaluation (a missing one is the package's)."""
    return thresholds.read_thresholds(path, sections=threshold_sections())


def validate_config(raw: Any, *, source: str = "<thresholds>") -> AuditConfig:
    """A parsed thresholds file validated, one section per registered evaluation (a missing one is the package's)."""
    return thresholds.validate_thresholds(raw, sections=threshold_sections(), source=source)


def load_attribute_set(spec: str) -> AttributeSet:
    """A built-in attribute set by name, or the one in the YAML file at path ``spec``."""
    return attribute_sets.read_attribute_set(spec, sections=attribute_sections())


def parse_attribute_set(text: str, *, source: str) -> AttributeSet:
    """An attribute set from YAML text (a user's file, already read)."""
    return attribute_sets.attribute_set_from_text(text, sections=attribute_sections(), source=source)
