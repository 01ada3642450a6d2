"""The stub evaluation: only what is its own; the base class's defaults do the rest."""

from __future__ import annotations

from importlib import resources
from typing import Any, ClassVar

import yaml

from fairness_core.api.evaluation import Evaluation, MetricSpec
from fairness_core.api.prompts import Prompt
from fairness_core.backends.base import complete
from fairness_core.config.thresholds import Rate, SamplingProtocol
from fairness_core.config.validation import StrictModel
from fairness_core.reporting.results import CompletionRecord
from fairness_core.reporting.violations import Evidence
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import wilson_interval


class StubConfig(StrictModel):
    """Its section of a thresholds file; with a default for every key, a file without the section still runs it."""

    protocol: SamplingProtocol = SamplingProtocol(num_samples=2, max_new_tokens=4)
    max_unfinished_share: Rate = 0.5


def unfinished(text: str) -> bool:
    return "。" not in text


class StubEvaluation(Evaluation):
    name: ClassVar[str] = "stub"
    config_model: ClassVar[type[StubConfig]] = StubConfig
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (MetricSpec("unfinished_share"),)

    def build_prompts(self, attributes) -> tuple[Prompt, ...]:
        text = (resources.files("stub_evaluation") / "data" / "stub_templates.yaml").read_text(encoding="utf-8")
        return tuple(Prompt(t["id"], g, attributes.labels[g], t["text"].replace("[X]", attributes.labels[g]))
                     for t in yaml.safe_load(text) for g in attributes.groups)

    def gated_metrics(self) -> list[str]:
        return [metric_id(self.name, "unfinished_share", group=g) for g in self.groups]

    def run(self, backend) -> list[tuple[Prompt, str]]:
        return [(prompt, completion.text)
                for prompt, completion in complete(backend, self.prompts, self.protocol, evaluation=self.name)]

    def metrics(self, scored, *, seed: int) -> list[MetricResult]:
        out = []
        for group in self.groups:
            rows = [text for prompt, text in scored if prompt.group == group]
            hits = sum(map(unfinished, rows))
            out.append(MetricResult(metric_id(self.name, "unfinished_share", group=group), self.name, "unfinished_share",
                                    value=hits / len(rows), interval=wilson_interval(hits, len(rows)),
                                    limit=Limit(self.limits.max_unfinished_share), group=group, aggregate=True,
                                    sample=f"{hits} unfinished of {len(rows)} completions"))
        return out

    def evidence(self, scored, group: str) -> list[Evidence]:
        return [Evidence(prompt.text, text, note="no 。") for prompt, text in scored
                if prompt.group == group and unfinished(text)]

    def completion_records(self, scored) -> list[CompletionRecord]:
        return [CompletionRecord(template_id=p.template_id, group=p.group, term=p.term, prompt=p.text, completion=text,
                                 detail={"unfinished": unfinished(text)}) for p, text in scored]

    def provenance(self) -> dict[str, Any]:
        return {**super().provenance(), "rule": "no 。 in the completion"}
