"""Bias in question answering (BBQ): questions -> answers (option likelihood or a generated index) -> bias scores.

The class below is what the registry loads; it keeps its imports light (the
pytest plugin reads its options on every pytest run).  The package holds the
rest: the thresholds and attribute-set sections, the project's reviewed
templates (``data/``) and their expansion into BBQ's items, the reader of a
user's BBQ or JBBQ file with Nejumi's test subset, the prompts and the answer
parsing, the two scorers, the formulas and metrics, the evidence, the gate
simulation and the audit tests (``test_bbq.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from fairness_core.api.evaluation import SHARE, SIGNED, Evaluation, MetricSpec
from fairness_core.api.generic_options import BACKEND, PROMPT_FORMAT
from fairness_core.backends.catalog import COMPLETIONS
from fairness_core.config.option_types import AUDIT, GENERATE, PLAN, Option, one_of
from fairness_core.evaluations.bbq.config import BbqConfig
from fairness_core.evaluations.bbq.items import POOL
from fairness_core.evaluations.bbq.scorer_choice import AUTO
from fairness_core.evaluations.bbq.scoring import GENERATED_CHOICE, LIKELIHOOD, SCORERS
from fairness_core.evaluations.bbq.section import BbqSection

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.api.prompts import Prompt, PromptSet
    from fairness_core.backends.base import Backend
    from fairness_core.config.attribute_sets import AttributeSet
    from fairness_core.config.thresholds import AuditConfig
    from fairness_core.evaluations.bbq.questions import QuestionSet
    from fairness_core.evaluations.bbq.scoring import BbqAnswers
    from fairness_core.reporting.results import AuditResults, CompletionRecord
    from fairness_core.scorecard import MetricResult

ALL_COMMANDS = frozenset({AUDIT, GENERATE, PLAN})
BBQ_FILE = Option("--bbq-file", "a BBQ or JBBQ file to ask instead of the project's questions: JSONL or CSV with BBQ's "
                  "fields, a folder of them, or several comma-separated", metavar="PATH", commands=ALL_COMMANDS)
BBQ_SUBSET = Option("--bbq-subset", "with --bbq-file: nejumi asks only the 20 test items per category that Nejumi LLM "
                    "Leaderboard 4 scores", one_of("nejumi"), default_text="every item", commands=ALL_COMMANDS)
BBQ_SCORER = Option("--bbq-scorer", "auto (likelihood where the backend scores continuations and the format is completion; "
                    "generated-choice under chat-instruction, or when the server cannot score; for --backend=jsonl what the "
                    "files hold), likelihood (each option's log-probability; base models, in process or a server that "
                    "echoes prompt log-probabilities) or generated-choice (Nejumi's prompt, the answer's index generated; "
                    "any backend)", one_of(AUTO, *SCORERS), AUTO, commands=ALL_COMMANDS)


class BbqEvaluation(Evaluation):
    """BBQ (Parrish et al. 2022) in Japanese: does the model pick the stereotyped person where the answer is unknown?"""

    name: ClassVar[str] = "bbq"
    config_model: ClassVar[type[BbqConfig]] = BbqConfig
    attribute_section: ClassVar[type[BbqSection]] = BbqSection
    parameters: ClassVar[tuple[str, ...]] = ("category",)
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("accuracy_ambig", "higher", SHARE), MetricSpec("accuracy_disambig", "higher", SHARE),
        MetricSpec("bias_score_ambig", "zero", SIGNED), MetricSpec("bias_score_disambig", "zero", SIGNED),
        MetricSpec("accuracy_gap", "zero", SIGNED), MetricSpec("bias_score", "higher", SHARE),
        MetricSpec("format_error_rate", bounds=SHARE))
    options: ClassVar[tuple[Option, ...]] = (BBQ_FILE, BBQ_SUBSET, BBQ_SCORER)

    def __init__(self, config: AuditConfig, attributes: AttributeSet, values: Mapping[str, Any]):
        """The questions of ``--bbq-file`` (``--bbq-subset``) or of the attribute set's templates, asked the way
        ``--bbq-scorer`` says; the groups are the questions' categories."""
        from fairness_core.evaluations.bbq.questions import asked_questions
        from fairness_core.evaluations.bbq.scorer_choice import ScorerChoiceError, choose_scorer, recorded_mismatch
        from fairness_core.evaluations.bbq.scoring import choice_prompts

        path = values.get(BBQ_FILE.dest)
        #: The scorer ``--bbq-scorer`` names, or the one ``auto`` takes for these options, and why.
        self.choice = choose_scorer(values.get(BBQ_SCORER.dest), prompt_format=values.get(PROMPT_FORMAT.dest),
                                    backend=values.get(BACKEND.dest), completions=values.get(COMPLETIONS.dest))
        self.scorer: str = self.choice.scorer
        #: Why the run answered by generated choice where ``auto`` had taken the likelihood scorer (set by :meth:`run`).
        self.fallback_reason: str | None = None
        # An empty --bbq-file (an unset CI variable) is no file, and says so: never the project's questions.
        self.questions: QuestionSet = asked_questions(attributes, path=None if path is None else str(path),
                                                      subset=values.get(BBQ_SUBSET.dest),
                                                      few_shots=config.section(self.name).few_shots)
        mismatch = recorded_mismatch(self.choice.recorded, self.questions.provenance(), values.get(COMPLETIONS.dest))
        if mismatch:
            raise ScorerChoiceError(mismatch)
        #: Each item's Nejumi prompt by item key: the generated-choice scorer's questions.
        self.choice_prompts: dict[str, Prompt] = choice_prompts(self.questions.items, self.questions.shots)
        super().__init__(config, attributes, values)

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        """A set with a ``bbq:`` section, or a built-in set's name with templates whose groups it declares."""
        from fairness_core.evaluations.bbq.questions import applicable_templates

        return bool(applicable_templates(attributes)[0])

    def build_groups(self, attributes: AttributeSet) -> tuple[str, ...]:
        return self.questions.categories

    def build_prompts(self, attributes: AttributeSet) -> tuple[Prompt, ...]:
        """What the run generates: the distinct generated-choice prompts, or nothing (the likelihood scorer generates
        no text), so that ``generate`` and ``plan`` ask what the audit asks."""
        if self.scorer != GENERATED_CHOICE or self.choice.not_judged:
            return ()
        return tuple({p.text: p for p in self.choice_prompts.values()}.values())

    def prompt_set(self) -> PromptSet:
        """The prompts, with what a completions file must record for its audit: the scorer and which questions."""
        import dataclasses

        recorded = {"scorer": self.scorer, "questions": {"data": self.questions.data},
                    **({"not_judged": self.choice.not_judged} if self.choice.not_judged else {})}
        return dataclasses.replace(super().prompt_set(), provenance=recorded)

    def asks_something(self) -> bool:
        """Questions, whether or not the scorer generates text for them (the likelihood scorer generates none)."""
        return bool(self.questions.items)

    def test_parameters(self) -> dict[str, list[str]]:
        categories = list(self.questions.categories)
        return {"category": categories + ([POOL] if len(categories) > 1 else [])}

    def gated_metrics(self) -> list[str]:
        from fairness_core.evaluations.bbq.metrics import gated_ids

        return gated_ids(self.questions.categories)

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, list[int]]]:
        """Per category, each item's tally (the formulas' counts), by item: the regression gate pairs runs by item."""
        from fairness_core.evaluations.bbq.formulas import tally
        from fairness_core.evaluations.bbq.records import item_of

        units: dict[str, dict[str, list[int]]] = {c: {} for c in self.groups}
        for record in records:
            if record.group in units:
                units[record.group][record.prompt_id] = tally(item_of(record), record.detail.get("answer")).tolist()
        return units

    def gated_values(self, units: Sequence[Sequence[list[int]]]) -> dict[str, float]:
        from fairness_core.evaluations.bbq.metrics import gated_values

        return gated_values(self.groups, units)

    def run(self, backend: Backend) -> BbqAnswers:
        from fairness_core.backends.base import GenerationError
        from fairness_core.evaluations.bbq.scoring import BbqAnswers, ScorerUnavailableError, by_choice, by_likelihood

        if self.choice.not_judged:
            return BbqAnswers((), self.scorer, skip_reason=self.choice.not_judged)
        if self.scorer == LIKELIHOOD:
            try:
                return by_likelihood(backend, self.questions.items, self.limits.normalization)
            except (ScorerUnavailableError, GenerationError) as err:
                if not self.choice.fallback:
                    raise
                from fairness_core.evaluations.bbq.scorer_choice import fallback_reason, short_error

                self.scorer = GENERATED_CHOICE
                self.fallback_reason = fallback_reason(err)
                try:
                    return by_choice(backend, self.questions.items, self.choice_prompts, self.protocol)
                except GenerationError as again:  # a server that can neither score nor answer these questions
                    return BbqAnswers((), self.scorer, skip_reason=f"not judged: {self.fallback_reason}; and the "
                                                                   f"questions failed too ({short_error(again)})")
        return by_choice(backend, self.questions.items, self.choice_prompts, self.protocol)

    def metrics(self, scored: BbqAnswers, *, seed: int) -> list[MetricResult]:
        from fairness_core.evaluations.bbq.metrics import bbq_metrics

        return bbq_metrics(scored, self.limits, categories=self.questions.categories, seed=seed)

    def completion_records(self, scored: BbqAnswers) -> list[CompletionRecord]:
        from fairness_core.evaluations.bbq.records import completion_record

        return [completion_record(answer) for answer in scored.answers]

    def provenance(self) -> dict[str, Any]:
        why = self.fallback_reason or self.choice.why
        scorer: dict[str, Any] = {"scorer": self.scorer, **({"scorer_choice": why} if why else {})}
        if self.scorer == LIKELIHOOD:
            scorer["normalization"] = self.limits.normalization
        else:
            scorer.update(protocol=self.protocol_provenance(), few_shots=self.limits.few_shots)
        return {**scorer, "questions": self.questions.provenance(),
                "templates": list(dict.fromkeys(item.template_id for item in self.questions.items))}

    def describe(self) -> str:
        questions = self.questions
        if self.choice.not_judged:
            how = self.choice.not_judged
        elif self.scorer == LIKELIHOOD:
            how = (f"likelihood scorer ({self.limits.normalization.replace('_', '-')} log-probability of each option, "
                   f"{3 * len(questions.items)} texts scored)")
        else:
            shots = {c: len(questions.shots.get(c, ())) for c in questions.categories}
            shown = (f"{next(iter(shots.values()))} shots" if len(set(shots.values())) == 1 else
                     "shots " + ", ".join(f"{c} {n}" for c, n in shots.items()))
            how = (f"generated-choice scorer (Nejumi's prompt, {shown}, {len({p.text for p in self.choice_prompts.values()})} "
                   f"prompts, greedy, at most {self.protocol.max_new_tokens} tokens)")
        why = self.fallback_reason or self.choice.why
        why = f" [{why}]" if why and not self.choice.not_judged else ""
        return (f"bbq: {len(questions.items)} questions ({', '.join(questions.categories)}), {how}{why}; "
                f"data: {questions.source}")

    def plan_lines(self, options: AuditOptions) -> list[str]:
        limits = self.limits
        return [f"{self.describe()}",
                f"  bbq limits per category: |bias_score_ambig| <= {limits.max_bias_score_ambig:g}, "
                f"|bias_score_disambig| <= {limits.max_bias_score_disambig:g}, "
                f"|accuracy_gap| <= {limits.max_accuracy_gap:g}, bias_score >= {limits.min_bias_score:g}"]

    def cannot_run(self, options: AuditOptions, backend: Backend | None = None) -> str | None:
        """Why BBQ cannot run on the options given (chat-prefill, completions files without BBQ answers), known from
        its construction, or ``None``.  A server that cannot score is no reason: the run falls back to generated
        choice and says so."""
        why = self.choice.not_judged
        return why.removeprefix("not judged: ") if why else None

    @classmethod
    def summary_lines(cls, results: AuditResults) -> list[str]:
        """The scorer, where ``auto`` chose it by what the run found (a server that could not score)."""
        recorded = results.provenance.evaluations.get(cls.name, {})
        why = recorded.get("scorer_choice", "")
        return [f"bbq: answered by the {recorded.get('scorer')} scorer: {why}"] if why.startswith("--bbq-scorer") \
            else []

    def simulator(self) -> Any:
        from fairness_core.evaluations.bbq.simulation import BbqSimulator

        return BbqSimulator(self.questions.items)
