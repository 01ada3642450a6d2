"""Known answers for k groups: the nationality demo models, biased against one group and fair.

``demo:nationality-biased`` was trained to continue the prompts of one group of
the ``nationality`` set (:data:`~fairness_core.demo.corpus.PLANTED_GROUP`) with
hurtful words and negative sentences more often, and the other seven groups
alike; ``demo:nationality`` treats all eight alike.  Measured here with the
audit's own pieces (generation, hurtful matcher, lexicon sentiment scorer) and
the k-group metrics: the planted group and only it must stand out.
"""

from collections import Counter, defaultdict

import pytest

from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.corpus import DEMO_VARIANTS, PLANTED_GROUP, PLANTED_RATES, build_corpus
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.rates import honest_disparity
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.honest.templates import honest_templates
from fairness_core.evaluations.sentiment.distances import largest_mean_gap
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.evaluations.sentiment.scoring import evaluate_sentiment
from fairness_core.evaluations.sentiment.section import sentiment_prompts
from fairness_core.run.demo_names import UnknownDemoError, demo_names, resolve_demo
from fairness_core.statistics import group_vs_rest_pvalues

NATIONALITY = load_attribute_set("nationality")
HONEST_PROTOCOL = SamplingProtocol(num_samples=5)
SENTIMENT_PROTOCOL = SamplingProtocol(num_samples=3, max_new_tokens=40)
PERMUTATIONS = 399


def test_nationality_demo_names():
    assert {"demo:nationality", "demo:nationality-biased"} <= set(demo_names())
    assert resolve_demo("demo:nationality-biased:sentencepiece").name == "nationality-biased-sentencepiece"
    assert DEMO_VARIANTS["nationality"].attribute_set == "nationality"
    with pytest.raises(UnknownDemoError, match=r"Unknown demo model 'demo:nationality:bpe'\."):
        resolve_demo("demo:nationality:bpe")


def test_biased_corpus_plants_the_bias_on_one_group_only():
    """Measured on the training text with the audit's own matcher and scorer, not by construction."""
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    scorer = LexiconScorer.builtin()
    honest_ids = {t.id for t in honest_templates()}
    hurtful, positive, totals = Counter(), Counter(), Counter()
    for example in build_corpus("nationality-biased", seed=7):
        group = example.prompt.group
        if example.prompt.template_id in honest_ids:
            totals["honest", group] += 1
            hurtful[group] += bool(matcher.find(example.continuation))
        else:
            totals["sentiment", group] += 1
            positive[group] += scorer.score([example.continuation])[0] > 0.5
    rates = PLANTED_RATES["nationality-biased"]
    assert set(rates.hurtful) == set(NATIONALITY.groups)
    for group in NATIONALITY.groups:
        assert hurtful[group] / totals["honest", group] == pytest.approx(rates.hurtful[group], abs=1e-3)
        assert positive[group] / totals["sentiment", group] == pytest.approx(rates.positive[group], abs=1e-3)
    assert {g for g in NATIONALITY.groups if rates.hurtful[g] != 0.05} == {PLANTED_GROUP}


def _backend(name: str) -> HFBackend:
    model, tokenizer = load_model(str(resolve_demo(name)), device="cpu")
    return HFBackend(model, tokenizer, seed=0, batch_size=256)


def _honest_units(name):
    """(hurtful, total) per prompt, per group: the audit's resampling unit."""
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    results = evaluate_honest(_backend(name), honest_prompts(NATIONALITY), HONEST_PROTOCOL, matcher,
                              groups=NATIONALITY.groups)
    units = {group: defaultdict(lambda: [0, 0]) for group in NATIONALITY.groups}
    for row in results.rows:
        cell = units[row.prompt.group][row.prompt.text]
        cell[0] += row.hurtful
        cell[1] += 1
    return {group: [tuple(c) for c in cells.values()] for group, cells in units.items()}


def _sentiment_units(name):
    results = evaluate_sentiment(_backend(name), sentiment_prompts(NATIONALITY), SENTIMENT_PROTOCOL,
                                 LexiconScorer.builtin(), groups=NATIONALITY.groups)
    units = {group: defaultdict(list) for group in NATIONALITY.groups}
    for row in results.rows:
        units[row.prompt.group][row.prompt.text].append(row.score)
    return {group: list(cells.values()) for group, cells in units.items()}


def _counts(units):
    return {group: (sum(h for h, _ in cells), sum(t for _, t in cells)) for group, cells in units.items()}


def _pooled_rate(units):
    return sum(h for h, _ in units) / sum(t for _, t in units)


def _mean(units):
    flat = [s for unit in units for s in unit]
    return sum(flat) / len(flat)


def _significant(units, rate, *, sign):
    """Groups that differ significantly from all the others pooled (Holm), in the direction ``sign`` (+1: higher).

    The test is two-sided: with one group planted high, every other group is also significantly
    below the pool that contains it; the planted group is the one on the planted side.
    """
    p = group_vs_rest_pvalues(lambda group, rest: rate(group) - rate(rest), units, permutations=PERMUTATIONS)
    rest = {g: [u for other, cells in units.items() if other != g for u in cells] for g in units}
    return [g for g, value in p.items() if value < 0.05 and (rate(units[g]) - rate(rest[g])) * sign > 0]


@pytest.fixture(scope="module")
def biased_honest():
    return _honest_units("demo:nationality-biased")


@pytest.fixture(scope="module")
def fair_honest():
    return _honest_units("demo:nationality")


@pytest.mark.slow
def test_biased_honest_scores_match_the_planted_rates_and_name_the_group(biased_honest):
    counts = _counts(biased_honest)
    for group, planted in PLANTED_RATES["nationality-biased"].hurtful.items():
        hits, total = counts[group]
        assert abs(hits / total - planted) <= 0.05, f"{group}: measured {hits / total:.3f}, planted {planted}"
    disparity = honest_disparity(counts)
    assert disparity.highest == PLANTED_GROUP and disparity.value >= 3
    assert honest_disparity({g: c for g, c in counts.items() if g != PLANTED_GROUP}).value < 1.6
    assert _significant(biased_honest, _pooled_rate, sign=+1) == [PLANTED_GROUP]


@pytest.mark.slow
def test_fair_honest_scores_are_alike(fair_honest):
    counts = _counts(fair_honest)
    for group, planted in PLANTED_RATES["nationality"].hurtful.items():
        assert abs(counts[group][0] / counts[group][1] - planted) <= 0.03
    assert honest_disparity(counts).value < 1.6
    assert _significant(fair_honest, _pooled_rate, sign=+1) == [] and _significant(fair_honest, _pooled_rate, sign=-1) == []


@pytest.mark.slow
def test_biased_sentiment_names_the_group():
    units = _sentiment_units("demo:nationality-biased")
    means = {group: _mean(cells) for group, cells in units.items()}
    gap = largest_mean_gap({group: [s for unit in cells for s in unit] for group, cells in units.items()})
    # Planted 0.25 against 0.60; the committed model learned most of it (measured 0.33 against 0.53-0.65),
    # so this checks that the lowest group is the planted one and stands out, not the planted size.
    assert gap.lowest == PLANTED_GROUP
    others = [mean for group, mean in means.items() if group != PLANTED_GROUP]
    assert min(others) - means[PLANTED_GROUP] > 0.5 * (max(others) - min(others))
    # Against a pool that holds the planted group every other group lies above it (see _significant), so the
    # unplanted groups are compared among themselves: none of them stands out.
    unplanted = {group: cells for group, cells in units.items() if group != PLANTED_GROUP}
    assert _significant(unplanted, _mean, sign=+1) == [] and _significant(unplanted, _mean, sign=-1) == []


@pytest.mark.slow
def test_fair_sentiment_groups_are_alike():
    units = _sentiment_units("demo:nationality")
    assert largest_mean_gap({group: [s for unit in cells for s in unit] for group, cells in units.items()}).value < 0.2
    assert _significant(units, _mean, sign=-1) == [] and _significant(units, _mean, sign=+1) == []
