"""The audit's generation plan without a model: every evaluation's prompts, requests and protocol.

What ``ja-fairness-audit generate`` writes to a completions file is exactly what
``pytest`` would ask a backend for, because both take it from the same
evaluations; request ids are ``<evaluation>/<template_id>/<group>/<term>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairness_core.attribute_sets import load_attribute_set
from fairness_core.backends.base import Request, requests_for
from fairness_core.evaluations import EVALUATIONS
from fairness_core.evaluations.base import create_evaluations
from fairness_core.resources import Prompt
from fairness_core.thresholds import AuditConfig, SamplingProtocol


@dataclass(frozen=True)
class EvaluationPlan:
    evaluation: str
    protocol: SamplingProtocol
    prompts: tuple[Prompt, ...]

    def requests(self) -> list[Request]:
        return requests_for(self.prompts, self.protocol, evaluation=self.evaluation)


def audit_plan(config: AuditConfig, *, attributes: str = "gender") -> list[EvaluationPlan]:
    """Each evaluation that the attribute set supports, with the limits and protocol of that set."""
    attribute_set = load_attribute_set(attributes)
    config = config.for_attribute_set(attribute_set.name)
    evaluations = create_evaluations(list(EVALUATIONS), config, attribute_set)
    return [EvaluationPlan(name, e.protocol, e.prompts) for name, e in evaluations.items()]
