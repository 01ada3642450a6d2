"""What the deploy gate can detect under the thresholds in force: the header's ``gate:`` line and ``ja-fairness-audit plan``.

The false-alarm rate and the smallest effects found with 90% power are those
that ``benchmarks/operating_characteristics.py`` measured on simulated runs
of the shipped ``thresholds.yaml``.  They are stored by a fingerprint of each
attribute set's limits and protocol, so that a changed thresholds file is
never described by another file's figures: it gets a line that says how to
measure its own.  The samples per prompt needed for a given ratio are a
normal approximation (:func:`samples_for_power`), quick enough for a header.

>>> from fairness_core.resources import default_thresholds_path
>>> from fairness_core.thresholds import load_thresholds
>>> gate_line(load_thresholds(default_thresholds_path()), "gender").startswith("gate: <= 5% false alarms")
True
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from scipy.stats import norm

from fairness_core.thresholds import AuditConfig

#: The reference world of the simulation: base hurtful rate, and logit sd of term and prompt effects.
REFERENCE_RATE, TERM_SD, PROMPT_SD = 0.05, 0.3, 0.3
POWER = 0.9


@dataclass(frozen=True)
class Characteristics:
    """One attribute set's measured operating characteristics (simulated, shipped thresholds)."""

    fingerprint: str
    false_alarms: str          # suite-wide share of fair runs failed, with its 95% interval
    honest_ratio: float | None  # smallest HONEST ratio of the power curve blocked in >= 90% of runs
    sentiment_gap: float | None  # smallest sentiment mean gap of the power curve blocked in >= 90% of runs


#: Written from the output of ``python benchmarks/operating_characteristics.py`` (see docs/gate.md).
MEASURED: dict[str, Characteristics] = {
    "gender": Characteristics("7be9056799c00560", "0 of 1000 [0.000, 0.004]; 0 of 100 at every other grid point",
                              honest_ratio=2.0, sentiment_gap=0.2),
    "nationality": Characteristics("b0f8b254fb7ea79e", "1 of 1000 [0.000, 0.006]; 0.020 at most over the grid",
                                   honest_ratio=2.0, sentiment_gap=0.2),
    "occupation": Characteristics("3b7a5efec9466386", "0 of 1000 [0.000, 0.004]; 0.020 at most over the grid",
                                  honest_ratio=None, sentiment_gap=0.2),
}


def fingerprint(config: AuditConfig, attributes: str) -> str:
    """A short hash of everything a set's verdicts depend on: its limits, rule and protocols."""
    dumped = config.for_attribute_set(attributes).model_dump(mode="json", exclude={"attributes"})
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:16]


def gate_line(config: AuditConfig, attributes: str) -> str:
    """The header's one line on what this gate can detect, or how to measure it for these thresholds."""
    measured = MEASURED.get(attributes)
    if measured is None or measured.fingerprint != fingerprint(config, attributes):
        return (f"gate: operating characteristics not measured for these thresholds and --attributes={attributes} "
                f"(python benchmarks/operating_characteristics.py --thresholds=FILE --attributes {attributes})")
    found = [f"an HONEST ratio >= {measured.honest_ratio:g}" if measured.honest_ratio else None,
             f"a sentiment gap >= {measured.sentiment_gap:g}" if measured.sentiment_gap else None]
    return (f"gate: <= 5% false alarms for a fair model (simulated {measured.false_alarms}); detects "
            f"{' and '.join(f for f in found if f)} with 90% power")


def samples_for_power(ratio: float, *, max_ratio: float, groups: int, prompts_per_group: int, terms_per_group: int,
                      rate: float = REFERENCE_RATE, power: float = POWER) -> int | None:
    """Samples per prompt for the ratio test to fail with ``power`` when one group is ``ratio`` times as hurtful.

    A normal approximation on the log scale: a group's log HONEST score has
    variance ``(1 - p) / (n P p)`` (binomial) plus ``term_sd² / T + prompt_sd² / P``
    (which terms and prompts the set has; more samples do not shrink it).  With
    k groups the ratio is the shifted group over the lowest of the other k - 1,
    whose expected shortfall is the expected maximum of k - 1 standard normals.
    ``None`` when no number of samples reaches the power (term variation alone
    hides the effect).

    >>> samples_for_power(2.0, max_ratio=1.6, groups=2, prompts_per_group=960, terms_per_group=30)
    1
    """
    if ratio <= max_ratio:
        return None
    shortfall = _expected_maximum(groups - 1)
    needed = float(norm.ppf(power))
    for samples in range(1, 1001):
        group_sd = math.sqrt((1 - rate) / (samples * prompts_per_group * rate)
                             + TERM_SD ** 2 / terms_per_group + PROMPT_SD ** 2 / prompts_per_group)
        if (math.log(ratio) + shortfall * group_sd - math.log(max_ratio)) / (math.sqrt(2) * group_sd) >= needed:
            return samples
    return None


def _expected_maximum(count: int) -> float:
    """E[max of ``count`` standard normals], by quadrature (0 for one)."""
    if count <= 1:
        return 0.0
    grid = [i / 100 for i in range(-800, 801)]
    return sum(x * count * norm.pdf(x) * norm.cdf(x) ** (count - 1) for x in grid) / 100


def plan_lines(config: AuditConfig, attributes: str, *, ratio: float | None = None) -> list[str]:
    """``ja-fairness-audit plan``: each evaluation's prompts and limits, the gate line, and the samples for ``ratio``.

    Reads the attribute set and the thresholds only: no model, no lexicon, no scorer.
    """
    from fairness_core.plan import audit_plan

    config_here = config.for_attribute_set(attributes)
    honest, sentiment = config_here.section("honest"), config_here.section("sentiment")
    plans = {plan.evaluation: plan for plan in audit_plan(config, attributes=attributes)}
    lines = [f"--attributes={attributes}, decision rule {config.decision_rule}"]
    limits = {"honest": f"HONEST ratio within [1/{honest.max_ratio:g}, {honest.max_ratio:g}], "
                        f"group scores <= {max(honest.max_honest_score.values()):g} "
                        f"({honest.level_decision_rule} rule)",
              "sentiment": f"mean gap <= {sentiment.max_mean_gap:g}, group W1 <= "
                           f"{sentiment.max_group_distance:g}"}
    for name, plan in plans.items():
        lines.append(f"  {name}: {len(plan.prompts)} prompts x {plan.protocol.num_samples} samples; {limits[name]}")
    lines.append(f"  {gate_line(config, attributes)}")
    if ratio is not None and "honest" in plans:
        prompts = plans["honest"].prompts
        groups = {p.group for p in prompts}
        terms = {(p.group, p.term) for p in prompts}
        needed = samples_for_power(ratio, max_ratio=honest.max_ratio, groups=len(groups),
                                   prompts_per_group=len(prompts) // len(groups),
                                   terms_per_group=len(terms) // len(groups))
        lines.append(f"  samples per prompt for 90% power at an HONEST ratio of {ratio:g}: "
                     + (str(needed) if needed else f"not reachable (limit {honest.max_ratio:g}; "
                                                   f"term-to-term variation alone hides it)")
                     + f" (normal approximation at a base rate of {REFERENCE_RATE:g})")
    return lines
