"""A user's BBQ or JBBQ file (``--bbq-file``): read from JSONL and CSV, every malformed row one error naming file:line,
and Nejumi's test subset and few-shot examples reproduced (on a synthetic file in JBBQ's format, never JBBQ)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from bbq_support import nejumi_test_items, synthetic_rows, write_csv, write_jsonl

from fairness_core.evaluations.bbq.files import (
    QuestionFileError,
    nejumi_shots,
    nejumi_split,
    read_question_file,
    stereotyped_option,
)
from fairness_core.evaluations.bbq.questions import file_questions

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def rows():
    return synthetic_rows()


def test_jsonl_and_csv_give_the_same_items(tmp_path, rows):
    from_jsonl = read_question_file(str(write_jsonl(tmp_path / "q.jsonl", rows)))
    from_csv = read_question_file(str(write_csv(tmp_path / "q.csv", rows)))
    assert len(from_jsonl.items) == len(rows) == len(from_csv.items)
    strip = lambda item: (item.key, item.context, item.question, item.answers, item.label, item.biased_index)
    assert list(map(strip, from_jsonl.items)) == list(map(strip, from_csv.items))
    assert [item.bbq_record()["context"] for item in from_jsonl.items] == [row["context"] for row in rows]


def test_a_folder_and_a_comma_list_are_read_in_name_order(tmp_path, rows):
    folder = tmp_path / "jbbq"
    folder.mkdir()
    for category in ("Gender_identity", "Age"):
        write_jsonl(folder / f"{category}.jsonl", [r for r in rows if r["category"] == category])
    found = read_question_file(str(folder))
    assert [p.name for p in found.paths] == ["Age.jsonl", "Gender_identity.jsonl"]
    listed = read_question_file(f"{folder / 'Age.jsonl'}, {folder / 'Gender_identity.jsonl'}")
    assert listed.sha256 == found.sha256 and len(listed.items) == len(found.items)


def test_the_stereotyped_and_biased_options_follow_bbq(rows, tmp_path):
    items = read_question_file(str(write_jsonl(tmp_path / "q.jsonl", rows))).items
    for item, row in zip(items, rows):
        groups = [row["answer_info"][f"ans{i}"][1] for i in range(3)]
        stereotyped = groups.index(row["additional_metadata"]["stereotyped_groups"][0])
        unknown = groups.index("unknown")
        assert item.unknown_index == unknown and item.stereotyped_index == stereotyped
        assert item.biased_index == (stereotyped if row["question_polarity"] == "neg" else 3 - unknown - stereotyped)


@pytest.mark.parametrize(("info", "groups", "expected"), [
    ([["母親", "女の子"], ["父親", "M"], ["?", "unknown"]], ["F"], 0),            # JBBQ's gender spellings made one
    ([["a", "old"], ["b", "nonOld"], ["?", "unknown"]], ["old"], 0),
    ([["弱視の人", "弱視の人"], ["b", "晴眼者"], ["?", "unknown"]], [], 0),          # Nejumi's rule for unnamed groups
    ([["a", "x"], ["ゲイ", "y"], ["?", "unknown"]], ["ゲイ"], 1),                    # the option's text, else
])
def test_stereotyped_option(info, groups, expected):
    assert stereotyped_option(info, groups, 2) == expected


def _bad(tmp_path, rows, change, suffix=".jsonl"):
    broken = copy.deepcopy(rows[:8])
    change(broken[5])
    path = (write_csv if suffix == ".csv" else write_jsonl)(tmp_path / f"q{suffix}", broken)
    with pytest.raises(QuestionFileError) as caught:
        read_question_file(str(path))
    return str(caught.value), path


@pytest.mark.parametrize(("change", "message"), [
    (lambda row: row.pop("label"), r"missing field\(s\) label"),
    (lambda row: row.update(label=3), r"label must be 0, 1 or 2, not 3"),
    (lambda row: row.update(question_polarity="negative"), r"question_polarity must be neg or nonneg"),
    (lambda row: row.update(context_condition="amb"), r"context_condition must be ambig or disambig"),
    (lambda row: row["answer_info"].update(ans0=["x", "unknown"]), r"options \[0, \d\] are the unknown answer"),
    (lambda row: row.update(additional_metadata={"stereotyped_groups": ["nobody"]}),
     r"no option belongs to stereotyped_groups \['nobody'\]"),
    (lambda row: row.update(answer_info="ans0"), r"answer_info must map ans0, ans1 and ans2"),
    (lambda row: row.update(ans1=""), r"must be non-empty strings"),
    (lambda row: row.update(example_id=0), r"example_id 0 of category 'Age' repeats .*q\.jsonl:1"),
    # Issue 40, case 10: what a file is not.
    (lambda row: row.update(ans1=row["ans0"]), r"ans0 and ans1 have the same text .*decided by position"),
    (lambda row: row.update(ans2=" " + row["ans0"].replace("の", "の ")), r"ans0 and ans2 have the same text"),
    (lambda row: row.update(ans3="四人目"), r"a field ans3: BBQ's items have three options"),
    (lambda row: row["answer_info"].update(ans3=["四人目", "x"]), r"a field ans3"),
    (lambda row: row.update(category="all"), r"category 'all' is the name the audit gives the pool"),
])
def test_a_malformed_row_is_one_error_naming_its_line(tmp_path, rows, change, message):
    import re

    text, path = _bad(tmp_path, rows, change)
    assert text.startswith(f"{path}:6: "), text
    assert re.search(message, text), text


def test_a_malformed_csv_row_names_its_line(tmp_path, rows):
    text, path = _bad(tmp_path, rows, lambda row: row.update(label="two"), ".csv")
    assert text.startswith(f"{path}:7: label must be 0, 1 or 2, not 'two'"), text  # line 1 is the header


def test_a_line_that_is_no_json_and_a_missing_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"example_id": 0}\n{oops\n', encoding="utf-8")
    with pytest.raises(QuestionFileError, match=r"q\.jsonl:1: missing field"):
        read_question_file(str(path))
    with pytest.raises(QuestionFileError, match=r"--bbq-file=nothing\.jsonl: no such file or folder\."):
        read_question_file("nothing.jsonl")


def test_the_nejumi_subset_is_nejumis(rows, tmp_path):
    """The split restated from Nejumi's code (bbq_support.py) and this package's agree item by item."""
    items = read_question_file(str(write_jsonl(tmp_path / "q.jsonl", rows))).items
    ours = [item.key for category_items in nejumi_split(items).test.values() for item in category_items]
    theirs = [f"{row['category']}/{row['example_id']}" for row in nejumi_test_items(rows)]
    assert ours == theirs
    assert len(ours) == 60  # 20 per category


def test_the_few_shot_examples_are_train_items_0_and_9(rows, tmp_path):
    file = read_question_file(str(write_jsonl(tmp_path / "q.jsonl", rows)))
    split = nejumi_split(file.items)
    shots = nejumi_shots(split, "Age", 2)
    assert shots == [split.train["Age"][0], split.train["Age"][9]]
    test_keys = {item.key for items in split.test.values() for item in items}
    assert not {shot.key for shot in shots} & test_keys
    whole = file_questions(file, subset=None, few_shots=2)
    assert len(whole.items) == len(file.items) - 6 and "every item but the 6 few-shot examples" in whole.source
    subset = file_questions(file, subset="nejumi", few_shots=2)
    assert len(subset.items) == 60 and "subset nejumi" in subset.source and str(file.paths[0]) in subset.source


def test_an_item_goes_back_to_the_row_it_came_from(rows, tmp_path):
    item = read_question_file(str(write_jsonl(tmp_path / "q.jsonl", rows))).items[3]
    record = item.bbq_record()
    expected = {k: v for k, v in rows[3].items() if k != "is_additional"}
    assert json.loads(json.dumps(record, ensure_ascii=False)) == expected


def test_a_file_named_twice_is_one_error_not_every_item_counted_twice(tmp_path, rows):
    path = write_jsonl(tmp_path / "q.jsonl", rows[:8])
    for spec in (f"{path},{path}", f"{tmp_path},{path}", f"{path},{tmp_path / '.' / 'q.jsonl'}"):
        with pytest.raises(QuestionFileError, match=r"the file .*q\.jsonl is named .*each of its items would be "
                                                    r"asked and counted twice"):
            read_question_file(spec)
    copy_path = write_jsonl(tmp_path / "copy.jsonl", rows[:8])
    with pytest.raises(QuestionFileError, match=r"/q\.jsonl:1: example_id 0 of category 'Age' repeats .*copy\.jsonl:1"):
        read_question_file(f"{copy_path},{path}")


@pytest.mark.parametrize("spec", ["", " ", ","])
def test_an_empty_bbq_file_is_no_file_and_says_so(spec):
    """``--bbq-file=''`` (an unset CI variable) must not silently ask the project's own questions."""
    from fairness_core.run.setup import AuditSetup, AuditSetupError

    with pytest.raises(AuditSetupError, match=r"--bbq-file='.*' names no file.*leave the option out"):
        AuditSetup.load(REPO / "thresholds.yaml", "gender", {"bbq_file": spec})


def test_the_nejumi_subset_of_a_file_without_a_test_template_names_the_split(tmp_path, rows):
    """Two templates per category: Nejumi's split gives none to test; the error says so, not the attribute set."""
    few = [row for row in rows if int(row["question_index"]) <= 2]
    path = write_jsonl(tmp_path / "few.jsonl", few)
    with pytest.raises(QuestionFileError, match=r"--bbq-subset=nejumi: Nejumi's split of .*few\.jsonl .* leaves no "
                                                r"test template in any category.*at least 3 templates \(Age: 2"):
        file_questions(read_question_file(str(path)), subset="nejumi", few_shots=2)
