"""A third evaluation written the way a contributor would add one: this module, its data, its audit tests,
its thresholds.yaml section and one registry line (``conftest.py`` here; ``fairness_core/evaluations/__init__.py``
in the package).

It asks every group's label to finish a sentence and measures the share of completions that are cut off
mid-sentence (no 。): a made-up but honest metric, enough to exercise the whole path from prompts to verdicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import yaml

from fairness_core.backends.base import complete
from fairness_core.resources import Prompt
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import wilson_interval
from fairness_core.thresholds import Rate, SamplingProtocol
from fairness_core.validation import StrictModel
from fairness_core.violations import Evidence

TEMPLATES = yaml.safe_load((Path(__file__).parent / "stub_templates.yaml").read_text(encoding="utf-8"))


class StubConfig(StrictModel):
    protocol: SamplingProtocol = SamplingProtocol(num_samples=2, max_new_tokens=4)
    max_unfinished_share: Rate


class StubEvaluation:
    name: ClassVar[str] = "stub"
    config_model: ClassVar[type[StubConfig]] = StubConfig
    parameters: ClassVar[tuple[str, ...]] = ()
    metric_names: ClassVar[tuple[str, ...]] = ("unfinished_share",)

    def __init__(self, config, attributes):
        self.limits = config.section(self.name)
        self.groups = attributes.groups
        self.protocol = self.limits.protocol
        self.prompts = tuple(Prompt(t["id"], g, attributes.labels[g], t["text"].replace("[X]", attributes.labels[g]))
                             for t in TEMPLATES for g in self.groups)

    @classmethod
    def supports(cls, attributes) -> bool:
        return True

    @classmethod
    def config_problems(cls, section, attributes, *, where: str) -> list[str]:
        return []

    @classmethod
    def input_problems(cls, options) -> list[str]:
        return []

    def test_parameters(self) -> dict[str, list[str]]:
        return {}

    def gated_metrics(self) -> list[str]:
        return [metric_id("stub", "unfinished_share", group=g) for g in self.groups]

    def prompt_units(self, records) -> dict[str, dict[str, tuple[int, int]]]:
        units: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in self.groups}
        for record in records:
            hits, total = units[record.group].get(record.prompt_id, (0, 0))
            units[record.group][record.prompt_id] = (hits + ("。" not in record.completion), total + 1)
        return units

    def gated_values(self, units) -> dict[str, float]:
        return {metric_id("stub", "unfinished_share", group=g): sum(h for h, _ in u) / sum(n for _, n in u)
                for g, u in zip(self.groups, units)}

    def load(self, options) -> None:
        pass

    def run(self, backend):
        return [(prompt, completion.text) for prompt, completion in complete(backend, self.prompts, self.protocol,
                                                                              evaluation=self.name)]

    def metrics(self, scored, *, seed: int) -> list[MetricResult]:
        out = []
        for group in self.groups:
            rows = [text for prompt, text in scored if prompt.group == group]
            hits = sum("。" not in text for text in rows)
            out.append(MetricResult(metric_id("stub", "unfinished_share", group=group), "stub", "unfinished_share",
                                    value=hits / len(rows), interval=wilson_interval(hits, len(rows)),
                                    limit=Limit(self.limits.max_unfinished_share), group=group, aggregate=True,
                                    sample=f"{hits} unfinished of {len(rows)} completions"))
        return out

    def evidence(self, scored, group: str) -> list[Evidence]:
        return [Evidence(prompt.text, text, note="no 。") for prompt, text in scored
                if prompt.group == group and "。" not in text]

    def completion_records(self, scored) -> list:
        from fairness_core.results import CompletionRecord

        return [CompletionRecord(template_id=p.template_id, group=p.group, term=p.term, prompt=p.text,
                                 completion=text) for p, text in scored]

    def provenance(self) -> dict[str, Any]:
        return {"protocol": self.protocol.model_dump(), "templates": [t["id"] for t in TEMPLATES]}

    def describe(self) -> str:
        return f"stub: {len(self.prompts)} prompts x {self.protocol.num_samples} samples"

    @staticmethod
    def plots(results) -> list[tuple[str, str]]:
        return []
