"""Lexicon loading: HurtLex TSV quirks, plain word lists, levels and the built-in lexicon."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from fairness_core.evaluations.honest.lexicon import (
    BUILTIN_LEXICON,
    HURTLEX_CATEGORIES,
    HURTLEX_COLUMNS,
    UNCATEGORISED,
    Lexicon,
    LexiconEntry,
    LexiconError,
    clean_lemma,
    load_builtin_lexicon,
    load_lexicon,
)
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.japanese.morphology import lemma_keys

HEADER = "\t".join(HURTLEX_COLUMNS)
NOT_JAPANESE = "not Japanese (untranslated or empty)"


def write_tsv(folder: Path, rows: list[tuple[str, ...]], *, header: str = HEADER, name="hurtlex.tsv") -> Path:
    path = folder / name
    path.write_text("\n".join([header, *("\t".join(row) for row in rows)]) + "\n", encoding="utf-8")
    return path


def row(lemma: str, category: str = "cds", level: str = "conservative", id_: str = "JA1") -> tuple[str, ...]:
    return (id_, "n", category, "no", lemma, level)


# --- clean_lemma ---------------------------------------------------------------

@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("自 己 愛", "自己愛"),
        ("自　己　愛", "自己愛"),  # ideographic spaces
        ("盗み聴き+する", "盗み聴き"),
        ("盗み聴き＋する", "盗み聴き"),  # full-width plus, NFKC'd first
        ("  馬鹿。 ", "馬鹿"),
        ("ﾊﾞｶ", "バカ"),
        ("馬鹿", "馬鹿"),
    ],
)
def test_clean_lemma_repairs(raw, cleaned):
    assert clean_lemma(raw) == cleaned


@pytest.mark.parametrize("raw", ["muggins", "dumb ass", "", "   ", "。", "馬鹿 idiot"])
def test_clean_lemma_rejects_untranslated_or_empty(raw):
    assert clean_lemma(raw) is None


# --- HurtLex TSV ---------------------------------------------------------------

def test_hurtlex_rows_are_repaired_and_skips_counted_by_reason(tmp_path):
    path = write_tsv(tmp_path, [
        row("自 己 愛", "dmc"),
        row("盗み聴き+する", "re"),
        row("殺す", "re", "inclusive"),
        row("muggins", "cds"),               # untranslated English
        row("", "cds"),                      # empty lemma
        row("殺す", "re"),                    # duplicate of (殺す, re)
        row("殺す", "dmc"),                   # same lemma, other category: kept
        row("馬鹿", "xyz"),                   # unknown category
        row("阿呆", "cds", "moderate"),       # unknown level
        row("阿呆", "ddf", ""),               # missing level
    ])
    lexicon = load_lexicon(path)
    assert lexicon.source == str(path)
    assert [(e.lemma, e.category, e.level) for e in lexicon.entries] == [
        ("自己愛", "dmc", "conservative"),
        ("盗み聴き", "re", "conservative"),
        ("殺す", "re", "inclusive"),
        ("殺す", "dmc", "conservative"),
    ]
    assert lexicon.skipped == {NOT_JAPANESE: 2, "duplicate": 1, "unknown category": 1, "unknown level": 2}


def test_hurtlex_entry_keys_are_unidic_lemmas(tmp_path):
    lexicon = load_lexicon(write_tsv(tmp_path, [row("売春婦", "pr"), row("ﾊﾞｶ", "ddf")]))
    assert {e.lemma: e.key for e in lexicon.entries} == {"売春婦": ("売春", "婦"), "バカ": ("馬鹿",)}


def test_the_part_of_speech_column_is_kept_as_unidic_names_it(tmp_path):
    rows = [row("馬鹿"), ("JA2", "v", "cds", "no", "殺す", "conservative"), ("JA3", "x", "cds", "no", "糞", "conservative")]
    lexicon = load_lexicon(write_tsv(tmp_path, rows))
    assert {e.lemma: e.pos for e in lexicon.entries} == {"馬鹿": "名詞", "殺す": "動詞", "糞": ""}
    assert {e.lemma: e.pos for e in load_builtin_lexicon().entries if e.lemma in ("ハゲ", "死ね", "キモい")} == {
        "ハゲ": "名詞", "死ね": "動詞", "キモい": "形容詞"}


def test_the_homograph_column_names_the_other_word_and_is_part_of_the_fingerprint(tmp_path):
    header = HEADER + "\tform\treading\thomograph"
    plain = load_lexicon(write_tsv(tmp_path, [(*row("ハゲ", "ddp"), "", "yes")], header=header, name="plain.tsv"))
    marked = load_lexicon(write_tsv(tmp_path, [(*row("ハゲ", "ddp"), "", "yes", "剥げ")], header=header))
    assert [e.homograph for e in marked.entries] == ["剥げ"]
    assert plain.fingerprint != marked.fingerprint
    assert {e.lemma: e.homograph for e in load_builtin_lexicon().entries if e.lemma in ("ハゲ", "オカマ", "バカ")} == {
        "ハゲ": "剥げ", "オカマ": "お釜", "バカ": ""}


def test_at_the_inclusive_level_no_entry_keeps_its_homograph():
    marked = LexiconEntry("ハゲ", "ddp", "conservative", ("禿げ",), homograph="剥げ")
    lexicon = Lexicon("test", (marked,))
    assert [e.homograph for e in lexicon.at_level("conservative").entries] == ["剥げ"]
    assert [e.homograph for e in lexicon.at_level("inclusive").entries] == [""]


def test_hurtlex_columns_may_come_in_any_order_and_comments_are_ignored(tmp_path):
    path = tmp_path / "reordered.tsv"
    path.write_text("# a comment\n\nlemma\tlevel\tcategory\n馬鹿\tconservative\tddf\n# another\n", encoding="utf-8")
    lexicon = load_lexicon(path)
    assert [(e.lemma, e.category, e.level) for e in lexicon.entries] == [("馬鹿", "ddf", "conservative")]
    assert lexicon.skipped == {}


def test_hurtlex_header_missing_columns_is_an_error_naming_them(tmp_path):
    path = write_tsv(tmp_path, [("JA1", "n", "cds", "馬鹿")], header="id\tpos\tcategory\tlemma")
    with pytest.raises(LexiconError, match=r"looks tab-separated but its header .* lacks \['level'\]") as err:
        load_lexicon(path)
    assert str(path) in str(err.value)
    assert "id', 'pos', 'category', 'stereotype', 'lemma', 'level'" in str(err.value)


def test_hurtlex_without_a_header_is_an_error(tmp_path):
    path = tmp_path / "noheader.tsv"
    path.write_text("JA1\tn\tcds\tno\t馬鹿\tconservative\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"lacks \['category', 'lemma', 'level'\]"):
        load_lexicon(path)


def test_hurtlex_with_only_skipped_rows_is_an_error_listing_the_skips(tmp_path):
    path = write_tsv(tmp_path, [row("muggins"), row("馬鹿", "xyz")])
    with pytest.raises(LexiconError, match=r"has no usable entries \(skipped: \{.*'unknown category': 1.*\}\)"):
        load_lexicon(path)


# --- plain word lists ----------------------------------------------------------

def test_word_list(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("# my words\n馬鹿\n\n殺す\nﾊﾞｶ\n馬鹿\nidiot\n 自 己 愛 \n", encoding="utf-8")
    lexicon = load_lexicon(path)
    assert [e.lemma for e in lexicon.entries] == ["馬鹿", "殺す", "バカ", "自己愛"]
    assert {e.category for e in lexicon.entries} == {UNCATEGORISED}
    assert {e.level for e in lexicon.entries} == {"conservative"}
    assert lexicon.entries[1].key == lemma_keys("殺す")
    assert lexicon.skipped == {"duplicate": 1, NOT_JAPANESE: 1}


def test_word_list_saved_with_a_byte_order_mark(tmp_path):
    """Editors on Windows save UTF-8 with a BOM; the first word must still be found."""
    path = tmp_path / "bom.txt"
    path.write_text("馬鹿\n阿呆\n", encoding="utf-8-sig")
    lexicon = load_lexicon(path)
    assert [(e.lemma, e.key) for e in lexicon.entries] == [("馬鹿", ("馬鹿",)), ("阿呆", ("阿呆",))]


def test_hurtlex_saved_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_text("lemma\tcategory\tlevel\n馬鹿\tddf\tconservative\n", encoding="utf-8-sig")
    assert [(e.lemma, e.category) for e in load_lexicon(path).entries] == [("馬鹿", "ddf")]


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n", "idiot\nmoron\n"])
def test_empty_lexicon_is_an_error(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(LexiconError, match=r"has no usable entries .*Expected a HurtLex TSV with the header"):
        load_lexicon(path)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(LexiconError, match=r"The lexicon file '.*nope\.txt' does not exist or is not a file\."):
        load_lexicon(tmp_path / "nope.txt")


def test_a_directory_is_not_a_lexicon(tmp_path):
    with pytest.raises(LexiconError, match="is a folder; give the path of a lexicon file in it"):
        load_lexicon(tmp_path)


def test_non_utf8_file_is_an_error(tmp_path):
    path = tmp_path / "sjis.txt"
    path.write_bytes("馬鹿\n".encode("shift_jis"))
    with pytest.raises(LexiconError, match="is not UTF-8 text"):
        load_lexicon(path)


# --- levels --------------------------------------------------------------------

def _lexicon(*levels: str) -> Lexicon:
    entries = tuple(LexiconEntry(f"語{i}", "cds", level, (f"語{i}",)) for i, level in enumerate(levels))
    return Lexicon("test", entries, {"duplicate": 3})


def test_at_level_conservative_keeps_conservative_only():
    kept = _lexicon("conservative", "inclusive", "conservative").at_level("conservative")
    assert [e.lemma for e in kept.entries] == ["語0", "語2"]
    assert kept.source == "test" and kept.skipped == {"duplicate": 3}


def test_at_level_inclusive_keeps_everything():
    assert len(_lexicon("conservative", "inclusive").at_level("inclusive").entries) == 2


def test_at_level_with_no_entries_is_an_error():
    with pytest.raises(LexiconError, match=r"The lexicon test has no 'conservative' entries \(2 entries in all\); "
                                           r"choose another --lexicon-level or lexicon\."):
        _lexicon("inclusive", "inclusive").at_level("conservative")


def test_at_level_unknown_level_is_an_error():
    with pytest.raises(LexiconError, match=r"must be one of conservative, inclusive\. Got 'strict' instead\."):
        _lexicon("conservative").at_level("strict")  # type: ignore[arg-type]


def test_categories_are_sorted_and_unique():
    entries = (LexiconEntry("a", "re", "conservative", ("a",)), LexiconEntry("b", "cds", "conservative", ("b",)),
               LexiconEntry("c", "re", "conservative", ("c",)))
    assert Lexicon("x", entries).categories == ("cds", "re")


# --- the built-in lexicon --------------------------------------------------------

def test_builtin_lexicon_file_is_package_data():
    assert (resources.files("fairness_core.evaluations.honest") / "data" / BUILTIN_LEXICON).is_file()


def test_builtin_lexicon_loads_cleanly_with_at_least_400_entries():
    lexicon = load_builtin_lexicon()
    assert lexicon.source == f"builtin:{BUILTIN_LEXICON}"
    assert len(lexicon.entries) >= 400
    assert lexicon.skipped == {}, "every row of the project's own lexicon should be usable"
    assert set(lexicon.categories) <= set(HURTLEX_CATEGORIES)
    assert all(e.key for e in lexicon.entries)
    assert len(lexicon.at_level("conservative").entries) < len(lexicon.entries)


def test_builtin_lexicon_matches_the_documented_examples():
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("inclusive").entries)
    lemmas = {m.lemma for m in matcher.find("あいつはﾊﾞｶだ。")}
    assert lemmas & {"馬鹿", "バカ"}
    assert not matcher.find("犬歯が痛いので歯医者に行った。")
