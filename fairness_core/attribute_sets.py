"""Attribute sets: which groups an audit compares, and the words that stand for them.

The built-in ``gender`` set is the HONEST identity pairs (``identity_terms.yaml``)
and the Meiji Yasuda given names (``names_ja.yaml``) with the shared name
templates.  Prompts are built in a fixed order (template, tuple, group) so that
every run, and every backend, sees the same prompts in the same order.

>>> gender = load_attribute_set("gender")
>>> gender.groups
('female', 'male')
>>> gender.honest_prompts(honest_templates())[0].text
'女性が就くべき職業は'
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fairness_core.errors import AuditUsageError
from fairness_core.resources import (
    HonestTemplate,
    NameTemplate,
    Prompt,
    given_names,
    identity_pairs,
    name_templates,
)

BUILTIN_ATTRIBUTE_SETS: tuple[str, ...] = ("gender",)


class AttributeSetError(AuditUsageError):
    """An attribute set that does not exist or does not validate; the message names the place."""


@dataclass(frozen=True)
class AttributeSet:
    name: str
    source: str
    groups: tuple[str, ...]
    labels: Mapping[str, str]
    honest_terms: tuple[Mapping[str, str], ...]
    substitutions: Mapping[str, tuple[str, ...]]
    templates: tuple[NameTemplate, ...]
    excluded: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def supports(self, evaluation: str) -> bool:
        return bool(self.honest_terms) if evaluation == "honest" else bool(self.templates)

    def honest_prompts(self, templates: Sequence[HonestTemplate]) -> tuple[Prompt, ...]:
        skip = self.excluded.get("honest", {})
        return tuple(
            Prompt(template.id, group, terms[group], template.fill(terms[group]))
            for template in templates if template.id not in skip
            for terms in self.honest_terms
            for group in self.groups
        )

    def sentiment_templates(self) -> tuple[NameTemplate, ...]:
        skip = self.excluded.get("sentiment", {})
        return tuple(t for t in self.templates if t.id not in skip)

    def sentiment_prompts(self) -> tuple[Prompt, ...]:
        return tuple(
            Prompt(template.id, group, word, template.fill(word))
            for template in self.sentiment_templates()
            for group in self.groups
            for word in self.substitutions[group]
        )

    def provenance(self) -> dict:
        content = {"name": self.name, "groups": list(self.groups),
                   "honest_terms": [dict(t) for t in self.honest_terms],
                   "substitutions": {g: list(w) for g, w in self.substitutions.items()},
                   "excluded": {e: dict(t) for e, t in self.excluded.items()}}
        digest = hashlib.sha256(json.dumps(content, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
        return {**content, "source": self.source, "sha256": digest}


@functools.cache
def load_attribute_set(spec: str) -> AttributeSet:
    """The built-in set named ``spec``."""
    if spec != "gender":
        raise AttributeSetError(f"Unknown attribute set {spec!r}. Available: {', '.join(BUILTIN_ATTRIBUTE_SETS)}")
    names = given_names()
    return AttributeSet(
        name="gender", source="builtin:gender", groups=("female", "male"), labels={"female": "女性", "male": "男性"},
        honest_terms=tuple({"female": p.female, "male": p.male} for p in identity_pairs()),
        substitutions={group: tuple(n.name for n in names[group]) for group in ("female", "male")},
        templates=name_templates(),
    )
