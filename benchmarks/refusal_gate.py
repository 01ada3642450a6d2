"""The refusal limit's operating characteristics: false alarms for a fair chat model, power at a planted gap.

Runs the project's own metric and decision code
(:func:`fairness_core.api.refusals.refusal_metrics`, ``MetricResult.verdict``)
on simulated refusal flags, over the range of refusal rates chat models show
(from none to half of all answers).  The simulated model refuses a prompt with
probability ``logit⁻¹(logit(base) + template effect + prompt effect)``: refusals
cluster by template (a question about careers is declined more than one about
hobbies) and by prompt, the same for every group in a fair model.  A planted
disparity raises one group's rate by ``gap`` (on the probability scale, by a
shift of its log-odds found by bisection).  The prompts are the HONEST prompts
of the attribute set at the shipped protocol (20 samples a prompt), the
evaluation with the most refusals to count; sentiment's single sample per
prompt gives wider intervals and is measured with ``--samples 1``.

``--recognised`` is the share of refusals the reader recognises (each one
independently; the others are read as answers).  1.0 assumes every refusal is
seen; a natural refusal cut at a 10-token window is not (docs/chat-models.md:
the share measured on the labelled refusals, in the window alone and read to
the sentence end within ``chat.refusal_window``, ``benchmarks/refusal_window.py``).

    python benchmarks/refusal_gate.py [--runs 200] [--attributes gender nationality] [--samples 20] [--base-rates ...]
                                      [--recognised 1.0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import expit, logit
from scipy.stats import beta

from fairness_core.api.answers import Answer
from fairness_core.api.refusals import RefusalCounts, RefusalLimits, refusal_metrics
from fairness_core.api.user_files import load_attribute_set, load_thresholds
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.evaluations.honest.section import honest_prompts

BASE_RATES = (0.0, 0.01, 0.05, 0.2, 0.5)
TEMPLATE_SD = 1.0
PROMPT_SD = 0.5
GAPS = (0.2, 0.3)


def clopper_pearson(failures: int, runs: int) -> tuple[float, float]:
    low = beta.ppf(0.025, failures, runs - failures + 1) if failures else 0.0
    high = beta.ppf(0.975, failures + 1, runs - failures) if failures < runs else 1.0
    return float(low), float(high)


def shift_for(rates: np.ndarray, gap: float) -> float:
    """The log-odds shift that raises the mean of ``rates`` by ``gap`` (bisection)."""
    target = min(rates.mean() + gap, 0.999)
    low, high = 0.0, 20.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if expit(logit(np.clip(rates, 1e-9, 1 - 1e-9)) + middle).mean() < target else (low, middle)
    return (low + high) / 2


def one_run(prompts, groups, limits, base, samples, rng, *, gap=0.0, seed=0, recognised=1.0) -> bool:
    templates = sorted({p.template_id for p in prompts})
    template_effect = dict(zip(templates, rng.normal(0, TEMPLATE_SD, len(templates))))
    log_odds = np.array([(logit(base) if base > 0 else -np.inf) + template_effect[p.template_id]
                         + rng.normal(0, PROMPT_SD) for p in prompts])
    rates = expit(log_odds)
    if gap:
        planted = np.array([p.group == groups[0] for p in prompts])
        rates[planted] = expit(logit(np.clip(rates[planted], 1e-9, 1 - 1e-9)) + shift_for(rates[planted], gap))
    refused_counts = rng.binomial(rng.binomial(samples, rates), recognised)  # the refusals the reader sees
    answered, refused = [], []
    for prompt, count in zip(prompts, refused_counts):
        refused += [Answer(prompt, "", "", "simulated")] * int(count)
        answered += [prompt] * int(samples - count)
    counts = RefusalCounts(answered, refused, groups)
    gap_metric = refusal_metrics("honest", counts, limits, detected=True, seed=seed)[-1]
    return gap_metric.verdict("point") is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--attributes", nargs="+", default=["gender", "nationality"])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--base-rates", type=float, nargs="+", default=list(BASE_RATES))
    parser.add_argument("--recognised", type=float, default=1.0, help="share of refusals the reader recognises")
    args = parser.parse_args()
    config = load_thresholds(default_thresholds_path())
    print(f"refusal gap limit; {args.runs} runs a cell; {args.samples} samples a prompt; template sd {TEMPLATE_SD}, "
          f"prompt sd {PROMPT_SD}; refusals recognised {args.recognised}")
    for name in args.attributes:
        attributes = load_attribute_set(name)
        limits: RefusalLimits = config.for_attribute_set(name).section("honest").refusals
        prompts = honest_prompts(attributes)
        print(f"\n{name}: {len(attributes.groups)} groups, {len(prompts)} prompts; max_gap {limits.max_gap} "
              f"({limits.decision_rule})")
        print("| base refusal rate | fair runs failed [95% CI] | " + " | ".join(f"power at gap {g}" for g in GAPS) + " |")
        print("|---|---|" + "---|" * len(GAPS))
        for base in args.base_rates:
            started = time.perf_counter()
            rng = np.random.default_rng(int(base * 1000) + 7)
            fair = sum(one_run(prompts, attributes.groups, limits, base, args.samples, rng, seed=i,
                               recognised=args.recognised) for i in range(args.runs))
            low, high = clopper_pearson(fair, args.runs)
            powers = []
            for gap in GAPS:
                hits = sum(one_run(prompts, attributes.groups, limits, base, args.samples, rng, gap=gap, seed=i,
                                   recognised=args.recognised) for i in range(args.runs))
                powers.append(f"{hits / args.runs:.2f}")
            print(f"| {base} | {fair / args.runs:.3f} [{low:.3f}, {high:.3f}] | " + " | ".join(powers)
                  + f" |  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
