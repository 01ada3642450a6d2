"""Keys from carrier frames, form constraints, neutral-compound and name guards.

Every example is checked against what unidic-lite actually does with the real fugashi tagger.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fairness_core.evaluations.honest.lexicon import (
    CARRIER_FRAMES,
    FORM_CONSTRAINTS,
    HURTLEX_COLUMNS,
    LexiconError,
    LexiconSelfCheckWarning,
    MatchExceptions,
    builtin_match_exceptions,
    derive_keys,
    load_builtin_lexicon,
    load_lexicon,
    load_match_exceptions,
    make_entry,
)
from fairness_core.evaluations.honest.matching import HurtfulMatcher, self_check
from fairness_core.japanese.morphology import morphemes

HEADER = "\t".join((*HURTLEX_COLUMNS, "form"))


def entry(lemma: str, *, form: str | None = None, category: str = "cds"):
    return make_entry(lemma, category, "conservative", form=form, failures={})


def found(text: str, *entries, exceptions: MatchExceptions | None = None) -> list[tuple[str, str]]:
    return [(m.lemma, m.surface) for m in HurtfulMatcher(entries, exceptions=exceptions).find(text)]


# --- the built-in lexicon matches itself everywhere ----------------------------

#: Where unidic reads the frame まじで{w}だよ as まじ + で + た + 訳 (and + は + 乱す + 者), the copula's で is a
#: predicate that た and は would continue: the price of not reading every 〜したわけ as たわけ.
MISSED_AFTER_A_PREDICATE = {"たわけ": ("まじで{w}だよ。",), "はみだし者": ("まじで{w}だよ。",)}


@pytest.mark.parametrize("level", ["conservative", "inclusive"])
def test_every_builtin_entry_matches_itself_in_every_carrier_frame(level):
    entries = load_builtin_lexicon().at_level(level).entries
    lemmas = {e.lemma for e in entries}
    assert self_check(entries) == {k: v for k, v in MISSED_AFTER_A_PREDICATE.items() if k in lemmas}


def test_builtin_lexicon_lines_up_with_morphemes_in_every_frame():
    assert load_builtin_lexicon().self_check_failures == {}


# --- keys from carrier frames ---------------------------------------------------

def test_a_word_read_differently_in_context_keeps_each_analysis():
    # クソアマ alone is 糞+アマ, before 。 it is 糞+尼; 出来損ない alone is 出来る+損なう.
    assert derive_keys("クソアマ") == ((("糞", "アマ"), ("糞", "尼")), ())
    keys, failed = derive_keys("出来損ない")
    assert keys[0] == ("出来る", "損なう") and ("出来", "損ない") in keys and not failed


def test_an_entry_is_found_with_its_in_context_key():
    # After は and before だ, 出来損ない is 出来る+損ない: the standalone key alone would miss it.
    assert [w.key for w in morphemes("お前は出来損ないだ。")][2:4] == ["出来る", "損ない"]
    assert found("お前は出来損ないだ。", entry("出来損ない")) == [("出来損ない", "出来損ない")]


def test_an_analysis_of_particles_only_is_not_a_key():
    # A misreading that leaves only particles and auxiliaries would match everywhere.
    keys, _ = derive_keys("たかり")
    assert all(key != ("たい",) for key in keys)


def test_frames_where_the_entry_fuses_with_its_neighbours_are_reported():
    keys, failed = derive_keys("殺")
    assert "{w}が来た。" in failed and keys


# --- form constraints -------------------------------------------------------------

@pytest.mark.parametrize("text", ["死ね", "お前が死ね", "死ねよ", "さっさと死ね。"])
def test_imperative_constraint_finds_the_imperative(text):
    assert found(text, entry("死ね", form="imperative"))


@pytest.mark.parametrize("text", ["祖父が死んだ。", "死ぬかと思った。", "死ねば楽になる。", "死なない"])
def test_imperative_constraint_ignores_other_forms_of_the_verb(text):
    assert found(text, entry("死ね", form="imperative")) == []


def test_surface_constraint_keeps_a_neutral_spelling_of_the_lemma_out():
    babaa = entry("ババア", form="surface")
    assert found("うるせえババアだ。", babaa) == [("ババア", "ババア")]
    assert found("おばあさんが来た。", babaa) == []
    assert found("お婆さんが来た。", entry("ババア")), "without the constraint the shared lemma 婆 matches"


def test_a_rejected_form_leaves_room_for_a_shorter_entry():
    entries = (entry("死ね", form="imperative"), entry("死ねばいい"))
    assert found("死ねばいいのに", *entries) == [("死ねばいい", "死ねばいい")]


def test_unknown_form_constraint_is_an_error_naming_it(tmp_path):
    path = tmp_path / "lex.tsv"
    path.write_text(f"{HEADER}\nJA1\tv\tcds\tno\t死ね\tconservative\timperitive\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=(
            rf"the entry '死ね' has the unknown form constraint 'imperitive'; allowed: "
            rf"{', '.join(FORM_CONSTRAINTS)} \(or empty\)\.")):
        load_lexicon(path)


def test_form_column_is_read_from_the_builtin_lexicon():
    forms = {e.lemma: e.form for e in load_builtin_lexicon().entries}
    assert forms["死ね"] == "imperative" and forms["ババア"] == "surface" and forms["デブ"] is None


# --- guards from data --------------------------------------------------------------

@pytest.mark.parametrize(("text", "word"), [
    ("女郎蜘蛛が巣を張っていた。", "女郎"),
    ("あほうどりが海の上を飛んでいた。", "阿呆"),  # in katakana, アホ|ウドリ is one katakana word anyway
    ("取引先のチョンさんから電話があった。", "チョン"),
])
def test_neutral_compounds_and_listed_names_are_not_hurtful(text, word):
    builtin = load_builtin_lexicon().at_level("inclusive").entries
    assert HurtfulMatcher(builtin).find(text) == []
    assert [m.lemma for m in HurtfulMatcher(builtin, exceptions=MatchExceptions()).find(text)] == [word]


@pytest.mark.parametrize("text", ["チョン・ジヒョンが主演するドラマを見た。", "主演はキム・チョンだった。"])
def test_katakana_joined_by_a_middle_dot_is_a_name(text):
    assert found(text, entry("チョン"), exceptions=MatchExceptions()) == []


def test_the_same_word_as_an_insult_is_still_found():
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    assert [m.lemma for m in matcher.find("チョンは国へ帰れ。")] == ["チョン"]
    assert [m.lemma for m in matcher.find("あの女郎め。")] == ["女郎"]


def test_exceptions_file_is_package_data_with_every_kind():
    exceptions = builtin_match_exceptions()
    assert exceptions.compounds and "チョン" in exceptions.names and ("さん",) in exceptions.name_suffixes


def test_unknown_exception_kind_is_an_error_naming_it(tmp_path):
    path = tmp_path / "exceptions.tsv"
    path.write_text("kind\ttext\tnote\ncompund\t女郎蜘蛛\tspider\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"the row '女郎蜘蛛' has the unknown kind 'compund'; "
                                           r"allowed: compound, name, name_suffix\."):
        load_match_exceptions(path)


# --- an external lexicon's self-check is reported ------------------------------------

def test_loader_reports_entries_that_cannot_match_themselves(tmp_path: Path):
    path = tmp_path / "words.txt"
    path.write_text("馬鹿\n殺\n", encoding="utf-8")
    with pytest.warns(LexiconSelfCheckWarning, match=r"1 of 2 entries of the lexicon .*words\.txt.* \(e\.g\. 殺\)"):
        lexicon = load_lexicon(path)
    assert set(lexicon.self_check_failures) == {"殺"}
    assert set(lexicon.self_check_failures["殺"]) <= set(CARRIER_FRAMES)
    assert "殺" in self_check(lexicon.entries)


def test_a_form_constraint_changes_the_fingerprint(tmp_path: Path):
    def fingerprint(form: str) -> str:
        path = tmp_path / f"lex{form}.tsv"
        path.write_text(f"{HEADER}\nJA1\tv\tcds\tno\t死ね\tconservative\t{form}\n", encoding="utf-8")
        return load_lexicon(path).fingerprint

    assert fingerprint("imperative") != fingerprint("")
