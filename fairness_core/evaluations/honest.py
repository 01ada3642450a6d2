"""The HONEST evaluation (Nozza et al. 2021): prompts → completions → hurtful matches → counts → metrics.

This module owns everything specific to HONEST: its ``thresholds.yaml``
section (:class:`HonestConfig`), its scored completions, its metrics, the
evidence a violation shows and its plot.  Everything is computed once per
session; audit tests only look results up.

>>> from fairness_core.resources import Prompt
>>> from fairness_core.matching import Match
>>> row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), "優しい。", ())
>>> HonestCompletions((row,), groups=("female", "male")).count(group="female")
Count(hits=0, total=1)
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, zip_longest
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, cast

import numpy as np
from pydantic import Field

from fairness_core.backends.base import Backend, complete
from fairness_core.japanese import normalize
from fairness_core.lexicon import (
    HURTLEX_CATEGORIES,
    UNCATEGORISED,
    Lexicon,
    LexiconLevel,
    load_builtin_lexicon,
    load_lexicon,
)
from fairness_core.locations import missing_file
from fairness_core.matching import HurtfulMatcher, Match
from fairness_core.metrics import honest_disparity, rate_ratio, rate_ratios_to_pooled
from fairness_core.resources import Prompt, honest_templates
from fairness_core.scorecard import Limit, MetricResult, metric_id
from fairness_core.statistics import (
    bootstrap_interval,
    bootstrap_intervals,
    group_vs_rest_rate_pvalues,
    permutation_pvalue,
    wilson_interval,
)
from fairness_core.thresholds import AuditConfig, DecisionRule, GroupRates, Rate, SamplingProtocol
from fairness_core.validation import StrictModel
from fairness_core.violations import Evidence

if TYPE_CHECKING:
    from fairness_core.attribute_sets import AttributeSet
    from fairness_core.audit_options import AuditOptions
    from fairness_core.results import AuditResults, CompletionRecord

Category = Literal[tuple(HURTLEX_CATEGORIES) + (UNCATEGORISED,)]  # type: ignore[valid-type]


class HonestConfig(StrictModel):
    """Limits of the HONEST audit.

    ``max_ratio`` bounds the HONEST-score ratio in both directions: with 2.0 a
    ratio above 2.0 or below 0.5 is a violation.  With two groups the ratio is
    the first group's score over the second's (as declared in the attribute
    set); with more, the highest group's over the lowest's.  The ratio of two
    near-zero rates is noise (1 hurtful completion against 0 gives 3.0), so it
    is judged only once both attributes together have ``min_hits_for_ratio``
    hurtful completions; below that the per-group limits govern.

    ``level_decision_rule`` judges the absolute limits (``max_honest_score``,
    ``max_category_score``) in place of the file's ``decision_rule``.  A fair
    model's hurtful rate can be anywhere, right at 0.10 included, and the point
    rule fails a group at its limit in half the runs: ``confident`` (fail only
    when the whole 95% interval is above) keeps the suite's false alarms within
    budget on models near a limit (docs/gate.md), at the cost of passing a
    group whose rate is above the limit by less than its interval's half-width
    (about 0.008 at 6,000 completions and a rate of 0.10).
    """

    protocol: SamplingProtocol = SamplingProtocol()
    lexicon_level: LexiconLevel = "conservative"
    max_honest_score: GroupRates
    max_template_score: Rate
    max_ratio: Annotated[float, Field(ge=1.0)]
    min_hits_for_ratio: Annotated[int, Field(ge=0)] = 10
    max_category_score: dict[Category, Rate] = {}  # type: ignore[valid-type]
    level_decision_rule: DecisionRule = "confident"


@dataclass(frozen=True)
class ScoredCompletion:
    prompt: Prompt
    completion: str
    matches: tuple[Match, ...]

    @property
    def hurtful(self) -> bool:
        return bool(self.matches)

    def hurtful_in(self, category: str | None) -> bool:
        """Hurtful at all (``category=None``) or through an entry of ``category``."""
        return any(category is None or m.category == category for m in self.matches)


@dataclass(frozen=True)
class Count:
    """How many of ``total`` completions were hurtful; ``rate`` is the HONEST score."""

    hits: int
    total: int

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0


@dataclass(frozen=True)
class HonestCompletions:
    rows: tuple[ScoredCompletion, ...]
    groups: tuple[str, ...]

    def select(self, *, group: str | None = None, template_id: str | None = None,
               category: str | None = None) -> list[ScoredCompletion]:
        """Rows of one group/template, in row order; with ``category``, only rows hurtful in that category."""
        rows = self._cells.get((group, template_id), [])
        return list(rows) if category is None else [row for row in rows if row.hurtful_in(category)]

    @functools.cached_property
    def _cells(self) -> dict[tuple[str | None, str | None], list[ScoredCompletion]]:
        """The rows of every (group, template) cell and margin, in one pass: the metrics ask for each
        cell of every group and template, and scanning all rows each time grew as groups x rows."""
        cells: dict[tuple[str | None, str | None], list[ScoredCompletion]] = defaultdict(list)
        for row in self.rows:
            group, template_id = row.prompt.group, row.prompt.template_id
            for key in ((group, template_id), (group, None), (None, template_id), (None, None)):
                cells[key].append(row)
        return dict(cells)

    def count(self, *, group: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        """Hurtful completions among those of ``group``/``template_id``.

        With ``category``, a completion counts as a hit when it matches an entry of that category.
        """
        pool = self.select(group=group, template_id=template_id)
        return Count(sum(row.hurtful_in(category) for row in pool), len(pool))


def _prompt_counts(results: HonestCompletions, group: str) -> list[tuple[int, int]]:
    """(hurtful, total) per prompt of ``group``: the bootstrap's resampling unit."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in results.select(group=group):
        cell = counts[row.prompt.text]
        cell[0] += row.hurtful
        cell[1] += 1
    return [(hits, total) for hits, total in counts.values()]


def _pooled_rate(units: Sequence[tuple[int, int]]) -> float:
    return sum(h for h, _ in units) / sum(t for _, t in units)


def honest_metrics(results: HonestCompletions, limits: HonestConfig, *, groups: Sequence[str],
                   seed: int = 0) -> list[MetricResult]:
    """Every HONEST number: per group (overall, per template, per category) and the disparity between groups."""
    out = []
    for group in groups:
        count = results.count(group=group)
        out.append(MetricResult(
            metric_id("honest", "honest_score", group=group), "honest", "honest_score",
            value=count.rate, interval=wilson_interval(count.hits, count.total),
            limit=Limit(limits.max_honest_score[group], rule=limits.level_decision_rule),
            group=group, aggregate=True, sample=f"{count.hits} hurtful of {count.total} completions",
        ))
        for template_id in dict.fromkeys(r.prompt.template_id for r in results.rows):
            cell = results.count(group=group, template_id=template_id)
            out.append(MetricResult(
                metric_id("honest", "honest_score", template=template_id, group=group), "honest",
                "honest_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(limits.max_template_score), group=group, template_id=template_id,
                sample=f"{cell.hits} hurtful of {cell.total} completions",
            ))
        for category in (*HURTLEX_CATEGORIES, UNCATEGORISED):
            cell = results.count(group=group, category=category)
            threshold = limits.max_category_score.get(category)
            out.append(MetricResult(
                metric_id("honest", "category_score", category=category, group=group), "honest",
                "category_score", value=cell.rate, interval=wilson_interval(cell.hits, cell.total),
                limit=Limit(threshold, rule=limits.level_decision_rule) if threshold is not None else None,
                group=group, category=category, aggregate=threshold is not None,
                sample=f"{cell.hits} of {cell.total} completions hurtful in {category}",
            ))
    out.append(_honest_ratio(results, limits, groups=groups, seed=seed))
    out += _pool_ratios(results, groups=groups, seed=seed)
    return out


def _pool_ratios(results: HonestCompletions, *, groups: Sequence[str], seed: int) -> list[MetricResult]:
    """Each group's HONEST score over the pooled score, with Holm-adjusted permutation p-values (group vs rest).

    With many groups the headline ratio names only the two ends; these say which
    groups stand out, and Holm's correction keeps the chance of naming any group
    by accident at the nominal level however many groups there are.
    """
    units = {g: _prompt_counts(results, g) for g in groups}
    ratios = rate_ratios_to_pooled({g: _totals(u) for g, u in units.items()})
    p_values = group_vs_rest_rate_pvalues(units, seed=seed)
    intervals = bootstrap_intervals(_pool_ratios_of, list(units.values()), seed=seed)
    return [MetricResult(
        metric_id("honest", "pool_ratio", group=g), "honest", "pool_ratio", value=ratios[g],
        interval=interval, p_value=p_values[g], limit=None, group=g,
        sample=f"{_totals(units[g])[0]} of {_totals(units[g])[1]} completions hurtful; p-value Holm-adjusted "
               f"over {len(groups)} groups",
    ) for g, interval in zip(groups, intervals)]


def _pool_ratios_of(*groups: Sequence[tuple[int, int]]) -> list[float]:
    """Every group's ratio to the pool, in group order (one resample's values)."""
    return list(rate_ratios_to_pooled({str(i): _totals(g) for i, g in enumerate(groups)}).values())


def _totals(units: Sequence[tuple[int, int]]) -> tuple[int, int]:
    return sum(h for h, _ in units), sum(t for _, t in units)


def _disparity(*groups: Sequence[tuple[int, int]]) -> float:
    """The HONEST ratio: first group over second with two groups (its sign kept), highest over lowest with more."""
    if len(groups) == 2:
        (hits_a, total_a), (hits_b, total_b) = map(_totals, groups)
        return rate_ratio(hits_a=hits_a, total_a=total_a, hits_b=hits_b, total_b=total_b)
    return honest_disparity({str(i): _totals(g) for i, g in enumerate(groups)}).value


def _rate_spread(*groups: Sequence[tuple[int, int]]) -> float:
    """The permutation statistic: first minus second rate with two groups, highest minus lowest with more."""
    rates = [_pooled_rate(g) for g in groups]
    return rates[0] - rates[1] if len(rates) == 2 else max(rates) - min(rates)


def _honest_ratio(results: HonestCompletions, limits: HonestConfig, *, groups: Sequence[str], seed: int) -> MetricResult:
    counts = [results.count(group=g) for g in groups]
    hits = sum(c.hits for c in counts)
    sample = ", ".join(f"{g} {c.hits}/{c.total}" for g, c in zip(groups, counts)) + " hurtful completions"
    ratio_id = metric_id("honest", "honest_ratio")
    if hits < limits.min_hits_for_ratio:
        return MetricResult(ratio_id, "honest", "honest_ratio", value=None, interval=None,
                            limit=None, sample=sample, aggregate=True,
                            skip_reason=f"only {hits} hurtful completions in all (< "
                                        f"min_hits_for_ratio={limits.min_hits_for_ratio}): too few for a ratio")
    units = [_prompt_counts(results, g) for g in groups]
    if len(groups) > 2:
        ends = honest_disparity({g: _totals(u) for g, u in zip(groups, units)})
        sample += f"; highest {ends.highest}, lowest {ends.lowest}"
    return MetricResult(
        ratio_id, "honest", "honest_ratio", value=_disparity(*units),
        interval=bootstrap_interval(_disparity, units, seed=seed),
        p_value=permutation_pvalue(_rate_spread, *units, seed=seed),
        limit=Limit(limits.max_ratio, 1 / limits.max_ratio), sample=sample, aggregate=True,
    )



def across_templates(rows: Sequence[ScoredCompletion]) -> list[ScoredCompletion]:
    """``rows`` reordered round-robin over their templates: the first of each template, then the second, ...

    Rows come in template order, so the first dozen (all the evidence a
    violation shows) of an aggregate metric such as the HONEST ratio would all
    be one template's.  Within a template the order is kept.

    >>> from fairness_core.resources import Prompt
    >>> rows = [ScoredCompletion(Prompt(t, "female", "母", "母は"), c, ()) for t, c in
    ...         [("t1", "a"), ("t1", "b"), ("t1", "c"), ("t2", "d"), ("t3", "e"), ("t3", "f")]]
    >>> [row.completion for row in across_templates(rows)]
    ['a', 'd', 'e', 'b', 'f', 'c']
    """
    by_template: dict[str, list[ScoredCompletion]] = {}
    for row in rows:
        by_template.setdefault(row.prompt.template_id, []).append(row)
    return [row for row in chain.from_iterable(zip_longest(*by_template.values())) if row is not None]


def hurtful_evidence(rows: Sequence[ScoredCompletion]) -> list[Evidence]:
    """The hurtful completions among ``rows``, taken across templates (:func:`across_templates`), highlighted.

    Each comes with its matched words' lemma and category.
    """
    return [
        Evidence(row.prompt.text, normalize(row.completion),
                 tuple((m.start, m.end) for m in row.matches if m.start is not None and m.end is not None),
                 ", ".join(f"{m.surface} ({m.lemma}, {m.category}: {HURTLEX_CATEGORIES.get(m.category, 'plain word list')})"
                           for m in row.matches))
        for row in across_templates([row for row in rows if row.hurtful])
    ]



def honest_figure(results: AuditResults):
    """Horizontal bars: HONEST score of each template per group, with the per-template limit."""
    from fairness_core.plots import PALETTE, pyplot

    plt = pyplot()
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    threshold = None
    for m in results.metrics:
        if m.evaluation == "honest" and m.metric == "honest_score" and m.template_id and m.value is not None:
            rates[m.group or ""][m.template_id] = m.value
            threshold = m.limit_upper
    groups = list(rates)
    template_ids = list(dict.fromkeys(t for per_group in rates.values() for t in per_group))
    positions = np.arange(len(template_ids))
    height = 0.8 / max(len(groups), 1)
    figure, axes = plt.subplots(figsize=(7, (0.14 + 0.07 * len(groups)) * len(template_ids) + 1.4))
    for index, group in enumerate(groups):
        offset = (index - (len(groups) - 1) / 2) * height
        axes.barh(positions + offset, [rates[group].get(t, 0.0) for t in template_ids], height=height,
                  label=group, color=PALETTE[index % len(PALETTE)])
    if threshold is not None:
        axes.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"max_template_score {threshold:g}")
    axes.set_yticks(positions, template_ids, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("HONEST score (share of completions with a hurtful word)")
    # Beside the axes, so that the legend never hides the bars that cross the threshold.
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure



def evaluate_honest(
    backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, matcher: HurtfulMatcher,
    *, groups: Sequence[str],
) -> HonestCompletions:
    """Complete every prompt ``protocol.num_samples`` times and match each completion."""
    return HonestCompletions(tuple(
        ScoredCompletion(prompt, completion.text, tuple(matcher.find(completion.text)))
        for prompt, completion in complete(backend, prompts, protocol, evaluation="honest")
    ), groups=tuple(groups))


class HonestEvaluation:
    """HONEST (Nozza et al. 2021): share of completions with a hurtful word, per group, template and category."""

    name: ClassVar[str] = "honest"
    config_model: ClassVar[type[HonestConfig]] = HonestConfig
    parameters: ClassVar[tuple[str, ...]] = ("template_id", "category")
    metric_names: ClassVar[tuple[str, ...]] = ("honest_score", "honest_ratio", "category_score", "pool_ratio")

    def __init__(self, config: AuditConfig, attributes: AttributeSet):
        self.limits = cast(HonestConfig, config.section(self.name))
        self.groups = attributes.groups
        self.protocol = self.limits.protocol
        self.prompts = attributes.honest_prompts(honest_templates())
        self.templates = {t.id: t for t in honest_templates() if any(p.template_id == t.id for p in self.prompts)}
        self.lexicon: Lexicon | None = None
        self.level: LexiconLevel = self.limits.lexicon_level

    @classmethod
    def supports(cls, attributes: AttributeSet) -> bool:
        return attributes.supports(cls.name)

    @classmethod
    def config_problems(cls, section: HonestConfig, attributes: AttributeSet, *, where: str) -> list[str]:
        return group_problems(section, attributes.groups, where=where, set_name=attributes.name)

    @classmethod
    def input_problems(cls, options: AuditOptions) -> list[str]:
        found = missing_file("--lexicon", options.lexicon) if options.lexicon else None
        return [found] if found else []

    def test_parameters(self) -> dict[str, list[str]]:
        return {"template_id": list(self.templates), "category": sorted(self.limits.max_category_score)}

    def gated_metrics(self) -> list[str]:
        return [*(metric_id("honest", "honest_score", group=g) for g in self.groups),
                metric_id("honest", "honest_ratio")]

    def prompt_units(self, records: Sequence[CompletionRecord]) -> dict[str, dict[str, tuple[int, int]]]:
        """Per group, each prompt's (hurtful, total) completions, by prompt id: the paired regression test's unit."""
        units: dict[str, dict[str, tuple[int, int]]] = {g: {} for g in self.groups}
        for record in records:
            hits, total = units[record.group].get(record.prompt_id, (0, 0))
            units[record.group][record.prompt_id] = (hits + bool(record.matches), total + 1)
        return units

    def gated_values(self, units: Sequence[Sequence[tuple[int, int]]]) -> dict[str, float]:
        """The gated metrics from one list of prompt units per group, in group order, as :meth:`metrics` has them."""
        values = {metric_id("honest", "honest_score", group=g): _pooled_rate(u) for g, u in zip(self.groups, units)}
        values[metric_id("honest", "honest_ratio")] = _disparity(*units)
        return values

    def load(self, options: AuditOptions) -> None:
        self.level = options.lexicon_level or self.limits.lexicon_level
        source = load_lexicon(options.lexicon) if options.lexicon else load_builtin_lexicon()
        self.lexicon = source.at_level(self.level)

    def _loaded_lexicon(self) -> Lexicon:
        if self.lexicon is None:
            raise RuntimeError("HonestEvaluation.load() must run before the evaluation is used")
        return self.lexicon

    def run(self, backend: Backend) -> HonestCompletions:
        matcher = HurtfulMatcher(self._loaded_lexicon().entries)
        return evaluate_honest(backend, self.prompts, self.protocol, matcher, groups=self.groups)

    def metrics(self, results: HonestCompletions, *, seed: int) -> list[MetricResult]:
        return honest_metrics(results, self.limits, groups=self.groups, seed=seed)

    def completion_records(self, results: HonestCompletions) -> list[CompletionRecord]:
        from fairness_core.results import CompletionRecord, MatchRecord

        return [CompletionRecord(template_id=r.prompt.template_id, group=r.prompt.group, term=r.prompt.term,
                                 prompt=r.prompt.text, completion=r.completion,
                                 matches=[MatchRecord(**vars(m)) for m in r.matches]) for r in results.rows]

    def provenance(self) -> dict[str, Any]:
        lexicon = self._loaded_lexicon()
        return {"protocol": self.protocol.model_dump(), "templates": list(self.templates),
                "lexicon": {"source": lexicon.source, "level": self.level, "entries": len(lexicon.entries),
                            "sha256": lexicon.fingerprint}}

    def describe(self) -> str:
        lexicon = self._loaded_lexicon()
        unmatched = len(lexicon.self_check_failures)
        check = f"; {unmatched} entries fail to match themselves in context" if unmatched else ""
        return (f"HONEST: {len(self.prompts)} prompts x {self.protocol.num_samples} samples, "
                f"lexicon {lexicon.source} ({self.level}, {len(lexicon.entries)} entries{check}); "
                f"group and category limits by the {self.limits.level_decision_rule} rule")

    @staticmethod
    def plots(results: AuditResults) -> list[tuple[str, str]]:
        from fairness_core.plots import png

        return [("HONEST score per template and group", png(honest_figure(results)))]


def group_problems(limits: HonestConfig, groups: tuple[str, ...], *, where: str, set_name: str = "<set>") -> list[str]:
    """How the per-group limits of ``config`` disagree with the attribute set's ``groups``.

    The groups come from the attribute set, not from the thresholds file, so this
    check runs once both are known; each problem names the dotted key.
    """
    problems = []
    rates = limits.max_honest_score
    missing = [g for g in groups if g not in rates]
    unknown = [g for g in rates if g not in groups]
    if missing:
        example = ", ".join(f"{g}: 0.10" for g in groups)
        problems.append(f"{where}: honest.max_honest_score has no limit for the group(s) {missing}; "
                        f"give one per group: {', '.join(groups)}. For your own attribute set, write them in your "
                        f"own thresholds file (a copy of the shipped one) and pass --thresholds=my-thresholds.yaml, "
                        f"with: attributes: {{{set_name}: {{honest: {{max_honest_score: {{{example}}}}}}}}}")
    if unknown:
        problems.append(f"{where}: honest.max_honest_score names unknown group(s) {unknown}; "
                        f"the groups are {', '.join(groups)}")
    return problems
