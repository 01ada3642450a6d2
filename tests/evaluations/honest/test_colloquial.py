"""Colloquial rewritings: each rule on its own, the span map, and the matcher using them.

Every example is checked against what unidic-lite does with the real fugashi tagger.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairness_core.evaluations.honest.colloquial import (
    CONTEMPT_KUSARU,
    EE_CONTRACTION,
    ELONGATION,
    RANK_DIGITS,
    RULES,
    SMALL_TSU_TRUNCATION,
    colloquial_variants,
)
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon, make_entry
from fairness_core.evaluations.honest.matching import SPELLING_RULES, HurtfulMatcher
from fairness_core.evaluations.honest.rewriting import Variant, apply_rule


def rewritten(rule, text: str) -> str:
    return apply_rule(rule, Variant.of(text)).text


@pytest.mark.parametrize(("text", "expected"), [
    ("うざーい", "うざい"), ("しねええ", "しね"), ("しねぇ", "しね"), ("きもーーい", "きもい"), ("ハゲー", "ハゲ"),
    # one plain vowel and one ー inside katakana are spelling, not lengthening
    ("おばあさん", "おばあさん"), ("おじいさん", "おじいさん"), ("かわいい", "かわいい"), ("ゲーム", "ゲーム"),
])
def test_elongation_drops_lengthening_only(text, expected):
    assert rewritten(ELONGATION, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("うぜー", "うざい"), ("うるせえ", "うるさい"), ("ダセー", "ダサイ"), ("うぜーな", "うざいな"),
    ("うぜーよ", "うざいよ"), ("ねえさん", "ねえさん"),  # not at the end of a word
])
def test_ee_contraction_gives_back_the_ai_ending(text, expected):
    assert rewritten(EE_CONTRACTION, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("キモっ", "キモイ"), ("うざっ", "うざい"), ("だっさ", "ださい"), ("うっざ", "うざい"), ("きっも", "きもい"),
    ("キモいっ", "キモいっ"),  # already an adjective
    ("ちょっと待って", "ちょっと待って"),  # っ inside a word
])
def test_small_tsu_truncation_completes_the_adjective(text, expected):
    assert rewritten(SMALL_TSU_TRUNCATION, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("舐めくさっとる", "舐め腐っとる"), ("ふざけくさって", "ふざけ腐って"),
    ("くさい", "くさい"), ("くさっ", "くさっ"),  # the adjective 臭い
])
def test_kusaru_is_written_as_the_verb_unidic_knows(text, expected):
    assert rewritten(CONTEMPT_KUSARU, text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("3流大学", "三流大学"), ("2流の人間", "二流の人間"), ("3流国", "三流国"),
    ("3流派", "3流派"), ("2流体", "2流体"),  # 流派 and 流体 are nouns of their own
    ("13流", "13流"),  # no rank is written with two digits
])
def test_rank_digits_become_the_kanji_numeral(text, expected):
    assert rewritten(RANK_DIGITS, text) == expected


def test_a_variant_maps_its_spans_back_to_what_was_written():
    variants = colloquial_variants(Variant.of("お前うぜーな"))
    elongated, contracted = variants["elongation"], variants["ee_contraction"]
    assert contracted.text == "お前うざいな"
    assert contracted.span_in_original(2, 5) == (2, 5)  # うざい stands for うぜー
    assert elongated.text == "お前うぜな"
    assert elongated.span_in_original(2, 4) == (2, 5)  # うぜ ends where the ー did


@pytest.mark.parametrize(("text", "lemma", "surface"), [
    ("うぜー", "うざい", "うぜー"), ("キモっ", "キモい", "キモっ"), ("まじうざーい", "うざい", "うざーい"),
    ("舐めくさっとる", "舐めくさる", "舐めくさっ"),
])
def test_the_matcher_finds_colloquial_spellings_where_they_are_written(text, lemma, surface):
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    assert [(m.lemma, m.surface) for m in matcher.find(text)] == [(lemma, surface)]


def test_without_spelling_rules_the_colloquial_spelling_is_missed():
    entries = [make_entry("うざい", "cds", "conservative", failures={})]
    assert HurtfulMatcher(entries, spelling_rules=()).find("うぜー") == []
    assert [m.lemma for m in HurtfulMatcher(entries).find("うぜー")] == ["うざい"]


KANA = st.sampled_from(list("あいうえおかきくけこさしすせそなにぬねのまみむめもらりるれろアイウエオカキクケコサシスセソっッーぁぇ～"))
TEXT = st.lists(st.one_of(KANA, st.sampled_from(list("前犬だ。、 A"))), max_size=16).map("".join)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_every_rule_maps_each_character_into_the_original(text):
    for rule in RULES.values():
        variant = apply_rule(rule, Variant.of(text))
        assert len(variant.starts) == len(variant.ends) == len(variant.text)
        assert all(0 <= s < e <= len(text) for s, e in zip(variant.starts, variant.ends))
        assert list(variant.starts) == sorted(variant.starts)


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_spelling_rules_only_add_matches(text):
    entries = load_builtin_lexicon().at_level("conservative").entries
    plain = {(m.lemma, m.start, m.end) for m in _matcher(entries, ()).find(text)}
    ruled = {(m.lemma, m.start, m.end) for m in _matcher(entries, SPELLING_RULES).find(text)}
    assert plain <= ruled


_MATCHERS: dict[tuple[str, ...], HurtfulMatcher] = {}


def _matcher(entries, spelling_rules: tuple[str, ...]) -> HurtfulMatcher:
    if spelling_rules not in _MATCHERS:
        _MATCHERS[spelling_rules] = HurtfulMatcher(entries, spelling_rules=spelling_rules)
    return _MATCHERS[spelling_rules]
