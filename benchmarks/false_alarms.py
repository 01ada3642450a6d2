"""False-alarm rate of the default thresholds on a fair demo model.

A fair demo model has equal planted rates for every group, so every aggregate
audit that fails on it is a false alarm.  This runs the full default protocol
for several sampling seeds and prints, per seed, the aggregate metrics and
which of them fail, then the share of seeds with any failing aggregate.

    python benchmarks/false_alarms.py [--seeds 10] [--model demo]
    python benchmarks/false_alarms.py --attributes nationality --model demo:nationality

``gender`` (the default) runs the audit session itself with ``thresholds.yaml``.
Another attribute set runs the same generation, matcher and scorer with the
k-group metrics (:func:`~fairness_core.metrics.honest_disparity`,
:func:`~fairness_core.metrics.largest_mean_gap`, W1 per group and Average
Group Fairness) against the limits proposed for it in ``docs/attribute-sets.md``
(the ``yaml`` block after ``<!-- proposed-thresholds -->``), until the audit
session takes attribute sets.  It counts false alarms by two rules: ``point``
(an estimate past its limit fails, as ``decision_rule: point``) and ``point and
significant`` (the group must also differ from the others, Holm-adjusted
permutation p < 0.05, or for the spread metrics the k-group permutation p <
0.05).  For ``gender`` both lines show the session's own decisions.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from pathlib import Path

import yaml

from fairness_core.attribute_sets import load_attribute_set
from fairness_core.backends.hf import HFBackend, load_model
from fairness_core.demo.registry import is_demo, resolve_demo
from fairness_core.group_fairness import evaluate_sentiment
from fairness_core.honest import evaluate_honest
from fairness_core.lexicon import load_builtin_lexicon
from fairness_core.matching import HurtfulMatcher
from fairness_core.metrics import average_group_fairness, group_distances, honest_disparity, largest_mean_gap
from fairness_core.resources import honest_templates
from fairness_core.sentiment import LexiconScorer
from fairness_core.statistics import group_vs_rest_pvalues, permutation_pvalue
from fairness_core.thresholds import SamplingProtocol

REPO = Path(__file__).resolve().parents[1]
PROPOSAL = REPO / "docs" / "attribute-sets.md"
ALPHA = 0.05
PERMUTATIONS = 399


def run_seed(model: str, seed: int) -> list[tuple[str, float | None, str]]:
    """The audit session with ``thresholds.yaml`` (two groups, ``gender``)."""
    from fairness_core.session import AuditOptions, AuditSession

    options = AuditOptions(model=model, thresholds=REPO / "thresholds.yaml", device="cpu", seed=seed)
    session = AuditSession(options)
    rule = session.config.decision_rule
    aggregates = session.honest_card.aggregates() + session.sentiment_card.aggregates()
    return [(r.id, r.value, r.decision(rule)) for r in aggregates]


def proposed_limits(attributes: str) -> dict:
    """The limits proposed for ``attributes`` in docs/attribute-sets.md."""
    block = re.search(r"<!-- proposed-thresholds -->\s*```yaml\n(.*?)```", PROPOSAL.read_text(encoding="utf-8"), re.S)
    return yaml.safe_load(block.group(1))["attribute_sets"][attributes]


def _units(rows, value) -> dict[str, list]:
    """Per group, one unit per prompt (the audit's resampling unit) holding ``value(row)`` of its samples."""
    cells: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        cells[row.prompt.attribute][row.prompt.text].append(value(row))
    return {group: list(prompts.values()) for group, prompts in cells.items()}


def _rate(units) -> float:
    return sum(sum(u) for u in units) / sum(len(u) for u in units)


def _spread(*groups) -> float:
    rates = [_rate(g) for g in groups]
    return max(rates) - min(rates)


def _check(results, name, value, limit, p_value):
    past = value > limit
    results.append((name, value, "fail" if past else "pass", "fail" if past and p_value < ALPHA else "pass"))


def run_attribute_set_seed(model: str, attributes: str, seed: int,
                           honest_samples: int | None = None) -> list[tuple[str, float, str, str]]:
    """The k-group aggregates of one seed: (metric, value, point decision, point-and-significant decision).

    ``honest_samples`` overrides the HONEST protocol's samples per prompt (a shorter run on a busy machine).
    """
    attribute_set, limits = load_attribute_set(attributes), proposed_limits(attributes)
    loaded, tokenizer = load_model(str(resolve_demo(model)) if is_demo(model) else model, device="cpu")
    backend = HFBackend(loaded, tokenizer, seed=seed, batch_size=512)
    results: list[tuple[str, float, str]] = []
    if attribute_set.supports("honest"):
        honest = limits["honest"]
        matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
        protocol = SamplingProtocol(**honest["protocol"] | ({"num_samples": honest_samples} if honest_samples else {}))
        rows = evaluate_honest(backend, attribute_set.honest_prompts(honest_templates()), protocol, matcher).rows
        units = _units(rows, lambda row: row.hurtful)
        p = group_vs_rest_pvalues(lambda g, rest: _rate(g) - _rate(rest), units, permutations=PERMUTATIONS, seed=seed)
        for group in attribute_set.groups:
            _check(results, f"honest_score[{group}]", _rate(units[group]), honest["max_honest_score"], p[group])
        counts = {g: (sum(map(sum, u)), sum(map(len, u))) for g, u in units.items()}
        if sum(h for h, _ in counts.values()) >= honest["min_hits_for_ratio"]:
            disparity = honest_disparity(counts)
            _check(results, f"honest_disparity[{disparity.highest}/{disparity.lowest}]", disparity.value,
                   honest["max_disparity"],
                   permutation_pvalue(_spread, *units.values(), permutations=PERMUTATIONS, seed=seed))
    if attribute_set.supports("sentiment"):
        sentiment = limits["sentiment"]
        rows = evaluate_sentiment(backend, attribute_set.sentiment_prompts(),
                                  SamplingProtocol(**sentiment["protocol"]), LexiconScorer.builtin()).rows
        units = _units(rows, lambda row: row.score)
        scores = {g: [s for unit in units[g] for s in unit] for g in attribute_set.groups}
        p = group_vs_rest_pvalues(lambda g, rest: _rate(g) - _rate(rest), units, permutations=PERMUTATIONS, seed=seed)
        for group, distance in group_distances(scores).items():
            _check(results, f"group_distance[{group}]", distance, sentiment["max_group_distance"], p[group])
        spread_p = permutation_pvalue(_spread, *units.values(), permutations=PERMUTATIONS, seed=seed)
        _check(results, "average_group_fairness", average_group_fairness(scores),
               sentiment["max_average_group_fairness"], spread_p)
        gap = largest_mean_gap(scores)
        _check(results, f"mean_gap[{gap.highest}-{gap.lowest}]", gap.value, sentiment["max_mean_gap"], spread_p)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--model", default="demo")
    parser.add_argument("--attributes", default="gender", help="an attribute set (built-in name or path)")
    parser.add_argument("--honest-samples", type=int, help="override the HONEST samples per prompt (not for gender)")
    args = parser.parse_args()
    alarms = {"point": 0, "point and significant": 0}
    for seed in range(args.seeds):
        started = time.perf_counter()
        if args.attributes == "gender":
            results = [(*r, r[2]) for r in run_seed(args.model, seed)]
        else:
            results = run_attribute_set_seed(args.model, args.attributes, seed, honest_samples=args.honest_samples)
        for index, rule in enumerate(alarms, start=2):
            failed = [r[0] for r in results if r[index] == "fail"]
            alarms[rule] += bool(failed)
            print(f"seed {seed} ({rule}): {'FAIL ' + ', '.join(failed) if failed else 'pass'}", flush=True)
        values = ", ".join(f"{r[0]}={r[1]:.3f}" for r in results if r[1] is not None)
        print(f"  ({time.perf_counter() - started:.0f} s) {values}", flush=True)
    for rule, count in alarms.items():
        print(f"{args.model} ({args.attributes}, {rule}): {count} of {args.seeds} seeds with a failing aggregate "
              f"audit (false-alarm rate {count / args.seeds:.0%})")


if __name__ == "__main__":
    main()
