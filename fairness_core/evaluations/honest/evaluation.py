"""The HONEST evaluation (Nozza et al. 2021): prompts -> completions -> hurtful matches -> counts -> metrics.

The class below is what the registry loads; it keeps its imports light (the
pytest plugin reads its options on every pytest run) and imports the matcher,
the metrics and the plots when an audit uses them.  The package holds
everything else that is HONEST's own: its thresholds section
(:mod:`~fairness_core.evaluations.honest.config`), its attribute-set section,
its templates and lexicon, the matcher, the metrics, the evidence a violation
shows, its plot, its gate simulation and its audit tests (``test_honest.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from fairness_core.api.evaluation import SHARE, Evaluation, MetricSpec
from fairness_core.api.refusals import REFUSAL_SPECS, gated_refusal_gap
from fairness_core.api.withheld import WITHHELD_SPECS
from fairness_core.config.option_types import AUDIT, PLAN, Option, checked, one_of
from fairness_core.evaluations.honest.config import HonestConfig, group_problems
from fairness_core.evaluations.honest.lexicon import LEXICON_LEVELS, Lexicon, LexiconLevel
from fairness_core.evaluations.honest.section import HonestSection
from fairness_core.evaluations.honest.templates import honest_templates
from fairness_core.scorecard import metric_id

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.api.prompts import Prompt
    from fairness_core.backends.base import Backend
    from fairness_core.config.attribute_sets import AttributeSet
    from fairness_core.config.thresholds import AuditConfig
    from fairness_core.evaluations.honest.scoring import HonestCompletions
    from fairness_core.evaluations.honest.sequential import HonestSequentialTest
    from fairness_core.reporting.results import AuditResults, CompletionRecord
    from fairness_core.scorecard import MetricResult


LEXICON = Option("--lexicon", "hurtful lexicon: a HurtLex TSV or one word a line", Path,
                 default_text="the project's own", commands=frozenset({AUDIT}))
LEXICON_LEVEL = Option("--lexicon-level", "which lexicon entries count", one_of(*LEXICON_LEVELS),
                       default_text="from thresholds.yaml, conservative", commands=frozenset({AUDIT}))
RATIO = Option("--ratio", "also report the samples per prompt for 90% power at this HONEST ratio (above 1)",
               lambda text: checked(text, float, lambda v: 0 < v < float("inf") and v != 1,
                                    "a number above 0 other than 1, e.g. 2"),
               metavar="RATIO", commands=frozenset({PLAN}))


class HonestEvaluation(Evaluation):
    """HONEST (Nozza et al. 2021): share of completions with a hurtful word, per group, template and category."""

    name: ClassVar[str] = "honest"
    config_model: ClassVar[type[HonestConfig]] = HonestConfig
    attribute_section: ClassVar[type[HonestSection]] = HonestSection
    parameters: ClassVar[tuple[str, ...]] = ("template_id", "category")
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("honest_score", bounds=SHARE), MetricSpec("honest_ratio", "ratio"),
        MetricSpec("category_score", bounds=SHARE), MetricSpec("pool_ratio", "ratio"), *REFUSAL_SPECS, *WITHHELD_SPECS)
    options: ClassVar[tuple[Option, ...]] = (LEXICON, LEXICON_LEVEL, RATIO,)

    def __init__(self, config: AuditConfig, attributes: AttributeSet, values: Mapping[str, Any]):
        super().__init__(config, attributes, values)
        self.templates = {t.id: t for t in honest_templates() if any(p.template_id == t.id for p in self.prompts)}
        self.lexicon: Lexicon | None = None
        self._built_matcher: Any = None
        self.level: LexiconLevel = self.limits.lexicon_level

    def build_prompts(self, attributes: AttributeSet) -> tuple[Prompt, ...]:
        section = cast(HonestSection, attributes.section(self.name))
        return section.prompts(attributes.groups, honest_templates())

    @classmethod
    def config_problems(cls, section: HonestConfig, attributes: AttributeSet, *, where: str) -> list[str]:
        return group_problems(section, attributes.groups, where=where, set_name=attributes.name)

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        from fairness_core.config.locations import missing_file

        lexicon = options.value(LEXICON.dest)
        found = missing_file("--lexicon", lexicon) if lexicon else None
        return [found] if found else []

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates), "category": sorted(self.limits.max_category_score)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id(self.name, "honest_score", group=g) for g in self.groups),
                metric_id(self.name, "honest_ratio"), *gated_refusal_gap(self.name, self.answers)]

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, tuple[int, int]]]:
        """Per group, each prompt's (hurtful, total) completions, by prompt id: the paired regression test's unit."""
        units: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in self.groups}
        for record in records:
            if "refusal" in record.detail or "withheld" in record.detail:  # the HONEST score is over answers
                continue
            hits, total = units[record.group].get(record.prompt_id, (0, 0))
            units[record.group][record.prompt_id] = (hits + bool(record.detail.get("matches")), total + 1)
        return units

    def gated_values(self, units: Sequence[Sequence[tuple[int, int]]]) -> dict[str, float]:
        """The gated metrics from one list of prompt units per group, in group order, as :meth:`metrics` has them."""
        from fairness_core.evaluations.honest.metrics import disparity, pooled_rate

        values = {metric_id(self.name, "honest_score", group=g): pooled_rate(u) for g, u in zip(self.groups, units)}
        values[metric_id(self.name, "honest_ratio")] = disparity(*units)
        return values

    def load(self, options: AuditOptions) -> None:
        from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon, load_lexicon

        self.level = options.value(LEXICON_LEVEL.dest) or self.limits.lexicon_level
        path = options.value(LEXICON.dest)
        source = load_lexicon(path) if path else load_builtin_lexicon()
        self.lexicon = source.at_level(self.level)
        self._built_matcher = None

    def _loaded_lexicon(self) -> Lexicon:
        if self.lexicon is None:
            raise RuntimeError("HonestEvaluation.load() must run before the evaluation is used")
        return self.lexicon

    def _matcher(self):
        from fairness_core.evaluations.honest.matching import HurtfulMatcher

        if self._built_matcher is None:
            self._built_matcher = HurtfulMatcher(self._loaded_lexicon().entries)
        return self._built_matcher

    def run(self, backend: Backend) -> HonestCompletions:
        from fairness_core.evaluations.honest.scoring import evaluate_honest

        return evaluate_honest(backend, self.prompts, self.protocol, self._matcher(), groups=self.groups,
                               reader=self.answers)

    def sequential_test(self) -> HonestSequentialTest:
        from fairness_core.evaluations.honest.sequential import HonestSequentialTest

        return HonestSequentialTest(self.prompts, self.groups, self.limits)

    def run_samples(self, backend: Backend, samples: range) -> HonestCompletions:
        from fairness_core.evaluations.honest.scoring import evaluate_honest

        return evaluate_honest(backend, self.prompts, self.protocol, self._matcher(), groups=self.groups,
                               reader=self.answers, samples=samples)

    def merge(self, parts: Sequence[Any]) -> HonestCompletions:
        """Real rounds (:class:`HonestCompletions`) or simulated ones (``HonestRound``) as one run."""
        return type(parts[0]).merged(parts)

    def metrics(self, scored: HonestCompletions, *, seed: int) -> list[MetricResult]:
        from fairness_core.api.refusals import refusal_metrics
        from fairness_core.api.withheld import withheld_metrics
        from fairness_core.evaluations.honest.metrics import honest_metrics

        return [*honest_metrics(scored, self.limits, groups=self.groups, seed=seed),
                *refusal_metrics(self.name, scored.refusal_counts, self.limits.refusals,
                                 detected=self.answers.detects_refusals, seed=seed),
                *withheld_metrics(self.name, scored.refusal_counts, self.limits.withheld,
                                  detected=self.answers.detects_refusals)]

    def completion_records(self, scored: HonestCompletions) -> list[CompletionRecord]:
        from fairness_core.reporting.results import CompletionRecord

        return [CompletionRecord(template_id=r.prompt.template_id, group=r.prompt.group, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion,
                                 detail={"matches": [vars(m) for m in r.matches], "sample": r.sample})
                for r in scored.rows] + [
            CompletionRecord(template_id=a.prompt.template_id, group=a.prompt.group, term=a.prompt.term,
                             prompt=a.prompt.text, completion=a.raw,
                             detail={"matches": [], "refusal": a.refusal, "sample": a.sample})
            for a in scored.refused] + [
            CompletionRecord(template_id=a.prompt.template_id, group=a.prompt.group, term=a.prompt.term,
                             prompt=a.prompt.text, completion=a.raw,
                             detail={"matches": [], "withheld": a.withheld, "sample": a.sample})
            for a in scored.withheld]

    def provenance(self) -> dict[str, Any]:
        lexicon = self._loaded_lexicon()
        return {"protocol": self.protocol_provenance(), "templates": list(self.templates),
                "lexicon": {"source": lexicon.source, "level": self.level, "entries": len(lexicon.entries),
                            "sha256": lexicon.fingerprint}}

    def describe(self) -> str:
        lexicon = self._loaded_lexicon()
        unmatched = len(lexicon.self_check_failures)
        check = f"; {unmatched} entries fail to match themselves in context" if unmatched else ""
        return (f"HONEST: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"lexicon {lexicon.source} ({self.level}, {len(lexicon.entries)} entries{check}); "
                f"group and category limits by the {self.limits.level_decision_rule} rule")

    def plan_lines(self, options: AuditOptions) -> list[str]:
        from fairness_core.evaluations.honest.metrics import ratio_design
        from fairness_core.evaluations.honest.power import plan_table, samples_line

        limits = self.limits
        lines = [f"{self.name}: {len(self.prompts)} prompts x {self.protocol.num_samples} samples; HONEST ratio within "
                 f"[1/{limits.max_ratio:g}, {limits.max_ratio:g}], group scores <= "
                 f"{max(limits.max_honest_score.values()):g} ({limits.level_decision_rule} rule)"]
        groups = len(self.groups)
        design = ratio_design(limits, groups=groups, prompts_per_group=len(self.prompts) // groups,
                              terms_per_group=len({(p.group, p.term) for p in self.prompts}) // groups)
        lines += plan_table(design, samples=self.protocol.num_samples, term_sd=limits.term_spread)
        ratio = options.value(RATIO.dest)
        return lines + ([samples_line(design, ratio, term_sd=limits.term_spread)] if ratio is not None else [])

    @classmethod
    def summary_lines(cls, results: AuditResults) -> list[str]:
        """The groups whose HONEST score stands out from the pool (Holm-adjusted p below 0.05), one line each."""
        return [f"pool comparison: {m.group} stands out: HONEST score {m.value:.2f}x the pooled score, "
                f"Holm-adjusted p {m.p_value:.3g}"
                for m in results.metrics
                if m.evaluation == cls.name and m.metric == "pool_ratio" and m.p_value is not None
                and m.p_value < 0.05 and m.value is not None]

    @classmethod
    def plots(cls, results: AuditResults) -> list[tuple[str, str]]:
        from fairness_core.evaluations.honest.plots import honest_figure
        from fairness_core.reporting.plots import png

        return [("HONEST score per template and group", png(honest_figure(results)))]

    def simulator(self) -> Any:
        from fairness_core.evaluations.honest.simulation import HonestSimulator

        return HonestSimulator(self.prompts, self.groups, self.protocol.num_samples)
