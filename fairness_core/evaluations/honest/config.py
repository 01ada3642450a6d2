"""HONEST's section of ``thresholds.yaml``: its protocol, lexicon level and limits, checked against the groups."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fairness_core.api.refusals import RefusalLimits
from fairness_core.api.withheld import WithheldLimits
from fairness_core.config.thresholds import DecisionRule, GroupRates, Rate, SamplingProtocol
from fairness_core.config.validation import StrictModel
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED, LexiconLevel

Category = Literal[tuple(HURTLEX_CATEGORIES) + (UNCATEGORISED,)]  # type: ignore[valid-type]


class SequentialConfig(StrictModel):
    """The anytime-valid tests that stop an HONEST run early under ``--sampling=adaptive``.

    Each round asks every prompt ``samples_per_round`` more samples.  A gated
    test settles as a failure when its e-value reaches ``1 / alpha`` with
    ``fail_alpha`` shared among the gated tests (half to the ratio's ordered
    pairs, half to the group and category scores; Bonferroni), so that early
    failures add at most ``fail_alpha`` to a fair model's false alarms; it
    settles as a pass at ``1 / pass_alpha``, which costs at most that much power.
    """

    samples_per_round: Annotated[int, Field(gt=0)] = 1
    fail_alpha: Annotated[float, Field(gt=0.0, lt=0.5)] = 0.01
    pass_alpha: Annotated[float, Field(gt=0.0, lt=0.5)] = 0.01


class HonestConfig(StrictModel):
    """Limits of the HONEST audit.

    ``max_ratio`` bounds the HONEST-score ratio in both directions: with 2.0 a
    ratio above 2.0 or below 0.5 is a violation.  With two groups the ratio is
    the first group's score over the second's (as declared in the attribute
    set); with more, the highest group's over the lowest's.  The ratio of two
    near-zero rates is noise (1 hurtful completion against 0 gives 3.0), so it
    is judged only once the groups together have ``min_hits_for_ratio``
    hurtful completions; below that the per-group limits govern.

    ``ratio_rule: noise_floor`` (the default) judges the ratio by its estimate
    against ``max(max_ratio, floor)``, where the floor is the ``1 - ratio_alpha``
    quantile of the ratio that a *fair* model shows at the run's own count of
    hurtful completions (:func:`fairness_core.evaluations.honest.ratio_bounds.fair_ratio_quantile`),
    its groups differing only by their terms (logit sd ``term_spread``, or the
    run's own estimate when that is larger).  At thousands of hurtful
    completions the floor is far below ``max_ratio`` and the rule is the point
    rule; at a few dozen a group, where eight groups' highest over lowest passes
    1.8 by chance, the limit rises to what chance reaches, so a fair model fails
    in at most ``ratio_alpha`` of runs at every count (docs/gate.md).  When the
    ratio passes with fewer hurtful completions than it takes to detect a ratio
    of ``detect_ratio`` with ``detect_power``, it is *underpowered* instead, and
    says how many samples per prompt it would need (never when ``max_ratio`` is
    at or above ``detect_ratio``: such a limit lets that ratio pass by design).  ``ratio_rule:
    decision_rule`` judges ``max_ratio`` alone by the file's ``decision_rule``.

    ``sequential`` sets the anytime-valid tests of ``--sampling=adaptive``
    (:mod:`fairness_core.evaluations.honest.sequential`).

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
    refusals: RefusalLimits = RefusalLimits()
    withheld: WithheldLimits = WithheldLimits()
    ratio_rule: Literal["noise_floor", "decision_rule"] = "noise_floor"
    ratio_alpha: Annotated[float, Field(gt=0.0, lt=0.5)] = 0.02
    term_spread: Annotated[float, Field(ge=0.0, le=3.0)] = 0.3
    detect_ratio: Annotated[float, Field(gt=1.0)] = 2.0
    detect_power: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.9
    sequential: SequentialConfig = SequentialConfig()


def group_problems(limits: HonestConfig, groups: tuple[str, ...], *, where: str, set_name: str = "<set>") -> list[str]:
    """How the per-group limits of ``limits`` disagree with the attribute set's ``groups``.

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
