"""HONEST metrics: edge cases with exact messages, and properties checked with hypothesis."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairness_core.api.prompts import Prompt
from fairness_core.backends.base import Completion, Request
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.honest.lexicon import LexiconEntry
from fairness_core.evaluations.honest.matching import HurtfulMatcher, Match
from fairness_core.evaluations.honest.rates import rate_ratio
from fairness_core.evaluations.honest.scoring import Count, HonestCompletions, ScoredCompletion, evaluate_honest
from fairness_core.japanese.morphology import lemma_keys

# --- rate_ratio --------------------------------------------------------------------

def test_rate_ratio_both_zero_is_one():
    assert rate_ratio(hits_a=0, total_a=100, hits_b=0, total_b=100) == 1.0

ATTRIBUTES = ("female", "male")


def test_rate_ratio_equal_counts_is_one():
    assert rate_ratio(hits_a=7, total_a=40, hits_b=7, total_b=40) == 1.0


def test_rate_ratio_zero_denominator_hits_is_finite():
    value = rate_ratio(hits_a=1, total_a=100, hits_b=0, total_b=100)
    assert math.isfinite(value)
    assert value == pytest.approx(3.0)  # the noise HonestConfig.min_hits_for_ratio guards against
    assert rate_ratio(hits_a=0, total_a=100, hits_b=1, total_b=100) == pytest.approx(1 / 3)


def test_rate_ratio_all_hits():
    assert rate_ratio(hits_a=10, total_a=10, hits_b=10, total_b=10) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(hits_a=5, total_a=3, hits_b=0, total_b=1), "hits_a=5, total_a=3"),
        (dict(hits_a=-1, total_a=3, hits_b=0, total_b=1), "hits_a=-1, total_a=3"),
        (dict(hits_a=0, total_a=0, hits_b=0, total_b=1), "hits_a=0, total_a=0"),
        (dict(hits_a=0, total_a=1, hits_b=2, total_b=1), "hits_b=2, total_b=1"),
        (dict(hits_a=0, total_a=1, hits_b=0, total_b=-4), "hits_b=0, total_b=-4"),
    ],
)
def test_rate_ratio_invalid_counts_raise_naming_the_group(kwargs, message):
    name = message[5]
    expected = (f"rate_ratio needs 0 <= hits_{name} <= total_{name} and total_{name} > 0. "
                f"Got {message} instead.")
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        rate_ratio(**kwargs)


def test_rate_ratio_is_keyword_only():
    with pytest.raises(TypeError):
        rate_ratio(1, 10, 1, 10)  # type: ignore[misc]


@st.composite
def group(draw, *, min_total: int = 1, max_total: int = 10_000, min_hits: int = 0):
    total = draw(st.integers(min_total, max_total))
    hits = draw(st.integers(min(min_hits, total), total))
    return hits, total


@given(group(), group())
def test_rate_ratio_is_antisymmetric(a, b):
    forward = rate_ratio(hits_a=a[0], total_a=a[1], hits_b=b[0], total_b=b[1])
    backward = rate_ratio(hits_a=b[0], total_a=b[1], hits_b=a[0], total_b=a[1])
    assert forward > 0 and math.isfinite(forward)
    assert forward * backward == pytest.approx(1.0, rel=1e-12)


@given(group(min_total=2), group())
def test_rate_ratio_grows_with_hits_a(a, b):
    hits, total = a
    if hits == total:
        hits -= 1
    lower = rate_ratio(hits_a=hits, total_a=total, hits_b=b[0], total_b=b[1])
    higher = rate_ratio(hits_a=hits + 1, total_a=total, hits_b=b[0], total_b=b[1])
    assert higher > lower


@given(group(), group(min_total=2))
def test_rate_ratio_falls_with_hits_b(a, b):
    hits, total = b
    if hits == total:
        hits -= 1
    assert (rate_ratio(hits_a=a[0], total_a=a[1], hits_b=hits + 1, total_b=total)
            < rate_ratio(hits_a=a[0], total_a=a[1], hits_b=hits, total_b=total))


@given(group(min_total=200, min_hits=50), group(min_total=200, min_hits=50))
def test_rate_ratio_is_close_to_the_plain_ratio_for_large_counts(a, b):
    plain = (a[0] / a[1]) / (b[0] / b[1])
    assert rate_ratio(hits_a=a[0], total_a=a[1], hits_b=b[0], total_b=b[1]) == pytest.approx(plain, rel=0.03)


# --- HonestCompletions -------------------------------------------------------------------

CATEGORIES = ("re", "pr", "cds")
TEMPLATE_IDS = ("trait-01", "trait-02", "desire-01")


@st.composite
def scored_rows(draw):
    rows = []
    for _ in range(draw(st.integers(0, 40))):
        group = draw(st.sampled_from(ATTRIBUTES))
        template_id = draw(st.sampled_from(TEMPLATE_IDS))
        categories = draw(st.lists(st.sampled_from(CATEGORIES), max_size=3))
        matches = tuple(Match(f"語{i}", c, f"語{i}") for i, c in enumerate(categories))
        prompt = Prompt(template_id, group, "母" if group == "female" else "父", "母は")
        rows.append(ScoredCompletion(prompt, "…", matches))
    return HonestCompletions(tuple(rows), groups=ATTRIBUTES)


@given(scored_rows())
def test_honest_counts_are_consistent(results):
    total = results.count()
    assert total.total == len(results.rows)
    assert total.hits == sum(row.hurtful for row in results.rows)
    by_group = [results.count(group=a) for a in ATTRIBUTES]
    assert sum(c.total for c in by_group) == total.total
    assert sum(c.hits for c in by_group) == total.hits
    by_template = [results.count(template_id=t) for t in TEMPLATE_IDS]
    assert sum(c.total for c in by_template) == total.total
    assert sum(c.hits for c in by_template) == total.hits
    for group in ATTRIBUTES:
        overall = results.count(group=group)
        cells = [results.count(group=group, template_id=t) for t in TEMPLATE_IDS]
        assert sum(c.hits for c in cells) == overall.hits
        # a share over no completions is undefined, not 0
        assert (overall.rate is None) if overall.total == 0 else (0.0 <= overall.rate <= 1.0)
        assert len(results.select(group=group)) == overall.total
        for category in CATEGORIES:
            in_category = results.count(group=group, category=category)
            assert in_category.total == overall.total
            assert in_category.hits <= overall.hits
            assert in_category.hits == len(results.select(group=group, category=category))


def test_count_rate():
    assert Count(hits=1, total=4).rate == 0.25
    assert Count(hits=0, total=0).rate is None  # a share of no completions is undefined, not 0


# --- evaluate_honest with a fake backend ----------------------------------------------

class EchoBackend:
    """Answers every request with a text naming its prompt and sample, so order mistakes show."""

    description = {"model": "echo"}

    def __init__(self):
        self.calls: list[list[Request]] = []

    def generate(self, requests, protocol):
        self.calls.append(list(requests))
        return [Completion(f"{r.prompt}#{r.sample_index}{'、馬鹿だ' if r.sample_index == 0 else ''}", 3)
                for r in requests]


def test_evaluate_honest_asks_each_prompt_num_samples_times_and_keeps_order():
    prompts = [Prompt("trait-01", "female", "母", "母は"), Prompt("trait-01", "male", "父", "父は")]
    matcher = HurtfulMatcher([LexiconEntry("馬鹿", "cds", "conservative", lemma_keys("馬鹿"))])
    backend = EchoBackend()
    results = evaluate_honest(backend, prompts, SamplingProtocol(num_samples=3), matcher, groups=ATTRIBUTES)
    mother, father = "honest/trait-01/female/母", "honest/trait-01/male/父"
    assert backend.calls == [[Request("母は", 0, mother), Request("母は", 1, mother), Request("母は", 2, mother),
                              Request("父は", 0, father), Request("父は", 1, father), Request("父は", 2, father)]]
    assert [(row.prompt.term, row.completion) for row in results.rows] == [
        ("母", "母は#0、馬鹿だ"), ("母", "母は#1"), ("母", "母は#2"),
        ("父", "父は#0、馬鹿だ"), ("父", "父は#1"), ("父", "父は#2"),
    ]
    assert results.count(group="female") == Count(hits=1, total=3)
    assert results.rows[0].matches == (Match("馬鹿", "cds", "馬鹿", 5, 7),)
