"""Name-based answer fairness (first-person fairness, Eloundou et al. 2025): the same request, different users' names.

Every task (a chat request of ``data/tasks_ja.yaml``) is asked with every
name of every group, and each answer is read for five signals
(:mod:`.signals`): the occupations it suggests (with the share of women among
their workers), refusals, hurtful words, sentiment and length.  The gaps
between the groups' answers are the metrics (:mod:`.metrics`).

Under a chat format the request is the user's turn as it is (framing
``as-is``) and the model opens its answer (``chat-instruction``); under
``chat-prefill`` it is not judged, as a reply to a request has no sentence to
prefill.  A base model (``completion``) is asked the plain-text dialogue
:data:`DIALOGUE`, and continues it as the assistant.

The class below is what the registry loads; it keeps its imports light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from fairness_core.api.evaluation import SHARE, SIGNED, Evaluation, MetricSpec
from fairness_core.api.generic_options import PROMPT_FORMAT
from fairness_core.api.prompts import Prompt
from fairness_core.api.withheld import WITHHELD_SPECS
from fairness_core.backends.prompt_formats import COMPLETION, PromptFormat
from fairness_core.evaluations.names.config import NamesConfig
from fairness_core.evaluations.names.section import NamesSection
from fairness_core.scorecard import metric_id

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.backends.base import Backend
    from fairness_core.config.attribute_sets import AttributeSet
    from fairness_core.config.thresholds import AuditConfig
    from fairness_core.evaluations.names.scoring import NamesCompletions
    from fairness_core.evaluations.names.signals import SignalReaders
    from fairness_core.reporting.results import CompletionRecord
    from fairness_core.scorecard import MetricResult

#: How a base model is asked (``--prompt-format=completion``): the request as the user's line of a dialogue, and
#: the assistant's line opened for the model to write.
DIALOGUE = "ユーザー: {request}\nアシスタント: "
#: The five gaps, in the order the audit tests and the report show them.
GAPS = ("occupation_share_gap", "refusal_gap", "sentiment_gap", "hurtful_gap", "length_ratio")


def people_of(attributes: AttributeSet) -> NamesSection | None:
    """The names of the set's groups: its file's ``names:`` section, or the project's for a built-in set whose
    groups they name; ``None`` when neither."""
    from fairness_core.evaluations.names.tasks import builtin_people

    own = attributes.section("names")
    if own is not None:
        return own
    builtin = builtin_people().get(attributes.name)
    if builtin is None or set(builtin["groups"]) != set(attributes.groups):
        return None
    return NamesSection(surname=builtin.get("surname"), people={g: tuple(builtin["groups"][g]) for g in attributes.groups})


class NamesEvaluation(Evaluation):
    """The same requests from users of different groups' names: five gaps between the answers."""

    name: ClassVar[str] = "names"
    config_model: ClassVar[type[NamesConfig]] = NamesConfig
    attribute_section: ClassVar[type[NamesSection]] = NamesSection
    #: Answers end by themselves; 200 tokens is room for them: a model that cannot hold it leaves this evaluation
    #: not judged (the others go on), where a continuation's window is a usage error.
    answers_need_room: ClassVar[bool] = True
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("occupation_share_gap", "zero", SIGNED), MetricSpec("refusal_gap", "zero", SIGNED),
        MetricSpec("sentiment_gap", "zero", SIGNED), MetricSpec("hurtful_gap", "zero", SIGNED),
        MetricSpec("length_ratio", "ratio"), MetricSpec("refusal_rate", bounds=SHARE), *WITHHELD_SPECS)

    def __init__(self, config: AuditConfig, attributes: AttributeSet, values: Mapping[str, Any]):
        from fairness_core.evaluations.names.tasks import builtin_tasks

        self.tasks = builtin_tasks()
        self.dialogue = (values.get(PROMPT_FORMAT.dest) or COMPLETION) == COMPLETION
        section = people_of(attributes)
        if section is None:
            raise ValueError(f"the attribute set {attributes.name!r} has no names")  # supports() turned it down
        full_names = section.full_names()
        self.people: dict[str, tuple[str, ...]] = {g: full_names[g] for g in attributes.groups}
        self.readers: SignalReaders | None = None
        super().__init__(config, attributes, values)

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        return people_of(attributes) is not None

    @classmethod
    def why_unsupported(cls, attributes: AttributeSet) -> str:
        return (f"{attributes.name!r} ({attributes.source}) has no names section, and the project has no names for "
                f"its groups (it has them for gender and nationality): give the set a names: section "
                f"(docs/names.md)")

    def build_prompts(self, attributes: AttributeSet) -> tuple[Prompt, ...]:
        """Every task with every name: for task, for group, for name."""
        return tuple(Prompt(task.id, group, name, self._asked(task.ask(name)))
                     for task in self.tasks for group in attributes.groups for name in self.people[group])

    def _asked(self, request: str) -> str:
        return DIALOGUE.format(request=request) if self.dialogue else request

    def cannot_run(self, options: AuditOptions, backend: Backend | None = None) -> str | None:
        chosen = PromptFormat(options.value(PROMPT_FORMAT.dest) or COMPLETION)
        if chosen.prefills_answer:
            return ("a reply to a request has no sentence to prefill under --prompt-format=chat-prefill: run "
                    "--prompt-format=chat-instruction (the request as the user's turn)")
        return None

    def gated_metrics(self) -> list[str]:
        # Under completion no refusal is read: its refusal gap is not judged, and not gated.
        return [metric_id(self.name, gap) for gap in GAPS if gap != "refusal_gap" or self.answers.detects_refusals]

    def load(self, options: AuditOptions) -> None:
        from fairness_core.evaluations.names.signals import SignalReaders

        self.readers = SignalReaders.builtin()

    def _loaded_readers(self) -> SignalReaders:
        if self.readers is None:
            raise RuntimeError("NamesEvaluation.load() must run before the evaluation is used")
        return self.readers

    def run(self, backend: Backend) -> NamesCompletions:
        from fairness_core.evaluations.names.scoring import evaluate_names

        return evaluate_names(backend, self.prompts, self.protocol, self._loaded_readers(), self.answers, self.people,
                              [task.id for task in self.tasks])

    def metrics(self, scored: NamesCompletions, *, seed: int) -> list[MetricResult]:
        from fairness_core.api.refusals import group_shares
        from fairness_core.api.withheld import withheld_metrics
        from fairness_core.evaluations.names.metrics import gap_metrics

        counts = scored.refusal_counts
        refusal_rates = group_shares(self.name, "refusal_rate", {g: counts.totals(g) for g in counts.groups},
                                     counted="refusals") if self.answers.detects_refusals else []
        return [*gap_metrics(scored.answers, self.limits, scored.people, scored.tasks, seed=seed), *refusal_rates,
                *withheld_metrics(self.name, counts, self.limits.withheld, detected=self.answers.detects_refusals)]

    def completion_records(self, scored: NamesCompletions) -> list[CompletionRecord]:
        from fairness_core.evaluations.names.signals import SIGNAL_OF
        from fairness_core.reporting.results import CompletionRecord

        return [CompletionRecord(
            template_id=a.task, group=a.group, term=a.name, prompt=a.answer.prompt.text, completion=a.answer.raw,
            detail={"sample": a.sample, "occupations": [m.occupation for m in a.occupations],
                    **({"refusal": a.answer.refusal} if a.answer.refusal else {}),
                    **({"withheld": a.answer.withheld} if a.answer.withheld else {}),
                    **{signal: a.value(signal) for signal in SIGNAL_OF.values()}})
            for a in scored.answers]

    def provenance(self) -> dict[str, Any]:
        return {"protocol": self.protocol_provenance(), "templates": [task.id for task in self.tasks],
                "people": {g: list(n) for g, n in self.people.items()},
                "asked_as": "dialogue" if self.dialogue else "user turn",
                "signals": self._loaded_readers().description}

    def _size(self) -> str:
        names = sum(map(len, self.people.values()))
        return (f"{len(self.tasks)} tasks x {names} names ({', '.join(f'{g} {len(n)}' for g, n in self.people.items())})"
                f" x {self.protocol.num_samples} samples = {len(self.prompts) * self.protocol.num_samples} answers")

    def describe(self) -> str:
        asked = "as a plain-text dialogue (completion)" if self.dialogue else "as the user's turn"
        return f"names: {self._size()}, asked {asked}; {self._loaded_readers().description}"

    def plan_lines(self, options: AuditOptions) -> list[str]:
        limits = self.limits
        return [f"{self.name}: {self._size()} of up to {self.protocol.max_new_tokens} tokens; gaps within "
                f"occupation share {limits.max_occupation_share_gap:g}, refusals {limits.max_refusal_gap:g}, sentiment "
                f"{limits.max_sentiment_gap:g}, hurtful {limits.max_hurtful_gap:g}; length ratio within "
                f"[1/{limits.max_length_ratio:g}, {limits.max_length_ratio:g}]"]

    def simulator(self) -> Any:
        from fairness_core.evaluations.names.simulation import NamesSimulator

        return NamesSimulator(self.prompts, {task.id: task.domain for task in self.tasks}, self.people,
                              self.protocol.num_samples)
