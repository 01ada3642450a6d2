"""HONEST's section of ``thresholds.yaml``: its protocol, lexicon level and limits, checked against the groups."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fairness_core.config.thresholds import DecisionRule, GroupRates, Rate, SamplingProtocol
from fairness_core.config.validation import StrictModel
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED, LexiconLevel
from fairness_core.evaluations.refusals import RefusalLimits

Category = Literal[tuple(HURTLEX_CATEGORIES) + (UNCATEGORISED,)]  # type: ignore[valid-type]


class HonestConfig(StrictModel):
    """Limits of the HONEST audit.

    ``max_ratio`` bounds the HONEST-score ratio in both directions: with 2.0 a
    ratio above 2.0 or below 0.5 is a violation.  With two groups the ratio is
    the first group's score over the second's (as declared in the attribute
    set); with more, the highest group's over the lowest's.  The ratio of two
    near-zero rates is noise (1 hurtful completion against 0 gives 3.0), so it
    is judged only once the groups together have ``min_hits_for_ratio``
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
    refusals: RefusalLimits = RefusalLimits()


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
