"""Morphology and lexicon matching with the real fugashi tagger (unidic-lite).

The examples are checked against what unidic-lite actually does: 犬歯 and 番犬
are single morphemes (so the entry 犬 is not in them), while 犬小屋 is 犬+小屋
(so it is).
"""

from __future__ import annotations

import pytest

from fairness_core.evaluations.honest.lexicon import LexiconEntry
from fairness_core.evaluations.honest.matching import HurtfulMatcher, Match
from fairness_core.japanese.morphology import is_katakana, lemma_keys, morpheme_spans, morphemes, normalize


def entry(lemma: str, category: str = "cds") -> LexiconEntry:
    return LexiconEntry(lemma, category, "conservative", lemma_keys(lemma))


def found(lemmas: list[str], text: str) -> list[tuple[str, str]]:
    """(lemma, surface) of every match of the entries ``lemmas`` in ``text``."""
    return [(m.lemma, m.surface) for m in HurtfulMatcher([entry(w) for w in lemmas]).find(text)]


# --- japanese.py -------------------------------------------------------------

def test_normalize_is_nfkc():
    assert normalize("ﾊﾞｶ") == "バカ"
    assert normalize("ＡＢＣ１２３") == "ABC123"
    assert normalize("馬鹿") == "馬鹿"


def test_lemma_keys_of_inflected_verb():
    assert lemma_keys("殺された") == ("殺す", "れる", "た")
    assert lemma_keys("殺さない") == ("殺す", "ない")


def test_katakana_and_hiragana_spellings_share_the_kanji_lemma():
    assert lemma_keys("バカ") == lemma_keys("ばか") == lemma_keys("馬鹿") == ("馬鹿",)


def test_loanword_lemma_drops_the_origin_suffix():
    # unidic spells the lemma of ゲイ as ゲイ-gay; the key must be the Japanese part only.
    assert lemma_keys("ゲイ") == ("ゲイ",)


def test_morphemes_keep_surface_and_part_of_speech():
    words = morphemes("売春婦たちは")
    assert [w.surface for w in words] == ["売春", "婦", "たち", "は"]
    assert [w.key for w in words] == ["売春", "婦", "達", "は"]
    assert words[0].pos == "名詞"


def test_morphemes_keep_the_inflected_form():
    # unidic tags the bare e-form 死ね as 仮定形 and 死ねよ as 命令形; the form constraint accepts both.
    assert [(w.key, w.form) for w in morphemes("死ねよ")] == [("死ぬ", "命令形")]
    assert morphemes("お前が死ね")[-1].form.startswith("仮定形")


def test_morpheme_spans_skip_whitespace_between_morphemes():
    assert morpheme_spans("馬鹿 だ", morphemes("馬鹿 だ")) == [(0, 2), (3, 4)]


def test_is_katakana():
    assert is_katakana("チョン") and is_katakana("ババー")
    assert not is_katakana("ちょん") and not is_katakana("チョン氏") and not is_katakana("")


def test_morphemes_normalise_before_tagging():
    assert [w.surface for w in morphemes("ﾊﾞｶだ")] == ["バカ", "だ"]


# --- matching.py: what must be found ------------------------------------------

@pytest.mark.parametrize(
    ("lemma", "text", "surface"),
    [
        ("殺す", "彼は殺された。", "殺さ"),
        ("殺す", "誰も殺さない。", "殺さ"),
        ("殺す", "殺す", "殺す"),
        ("売春婦", "売春婦たちは逮捕された。", "売春婦"),
        ("馬鹿", "あいつはバカだ。", "バカ"),
        ("馬鹿", "あいつはばかだ。", "ばか"),
        ("バカ", "あいつは馬鹿だ。", "馬鹿"),
        ("馬鹿", "あいつはﾊﾞｶだ。", "バカ"),
        ("ﾊﾞｶ", "あいつは馬鹿だ。", "馬鹿"),
        ("犬", "犬小屋に入れた。", "犬"),
        ("屑", "あの人はクズだ。", "クズ"),
    ],
)
def test_finds_inflected_compound_variant_and_normalised_forms(lemma, text, surface):
    assert found([lemma], text) == [(lemma, surface)]


def test_match_carries_lemma_category_and_surface():
    matcher = HurtfulMatcher([entry("売春婦", "pr")])
    assert matcher.find("売春婦たちは") == [Match(lemma="売春婦", category="pr", surface="売春婦", start=0, end=3)]


def test_every_occurrence_is_reported():
    assert found(["馬鹿"], "馬鹿と言われ、バカにされた。") == [("馬鹿", "馬鹿"), ("馬鹿", "バカ")]


def test_several_entries_in_one_text():
    assert found(["殺す", "犬"], "犬が殺された。") == [("犬", "犬"), ("殺す", "殺さ")]


# --- matching.py: what must not be found --------------------------------------

@pytest.mark.parametrize(
    ("lemma", "text"),
    [
        ("犬", "犬歯が痛い。"),       # 犬歯 is one morpheme
        ("犬", "番犬を飼っている。"),  # so is 番犬
        ("馬鹿", "馬に乗った。"),      # the entry's first character alone
        ("馬", "馬鹿なことをした。"),  # the entry inside a longer word
        ("バカ", "バカンスに出かけた。"),  # a word starting with the entry's characters
        ("豚", "豚肉を買った。"),
        ("売春婦", "売春が問題になった。"),  # only the first morpheme of the entry
        ("殺す", "殺人事件が起きた。"),  # shares a character, not the lemma
    ],
)
def test_substrings_are_not_matches(lemma, text):
    assert lemma[0] in normalize(text)  # a character-level search would at least start a match here
    assert found([lemma], text) == []


def test_no_entries_finds_nothing():
    assert HurtfulMatcher([]).find("馬鹿だ") == []


def test_empty_text_finds_nothing():
    assert HurtfulMatcher([entry("馬鹿")]).find("") == []


def test_longest_entry_wins_at_one_place():
    """A compound is one word: 売春婦 counts as 売春婦 (its own category), not also as the shorter 売春.

    HONEST looks each word of a completion up in the lexicon, so a word is counted
    once, in its own category; reporting the prefix entry too puts キモオタ (ps) under
    ddp via キモい, or 変態ホモ (om) under cds via 変態, in the per-category scores.
    """
    matcher = HurtfulMatcher([entry("売春", "pr"), entry("売春婦", "ps")])
    assert [(m.lemma, m.category) for m in matcher.find("売春婦たちは")] == [("売春婦", "ps")]
    assert [(m.lemma, m.category) for m in matcher.find("売春が問題だ")] == [("売春", "pr")]
