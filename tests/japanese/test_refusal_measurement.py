"""The refusal detector measured on the two frozen labelled sets of benchmarks/data, as bench_refusals.py measures it."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest

from fairness_core.japanese.refusals import RefusalDetector

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_refusals.py"
#: The least precision and recall the shipped detector must keep on the labelled set (docs/refusals.md).
MIN_PRECISION = 0.95
MIN_RECALL = 0.9
#: The first set's counts before issue 40's rules (rev 4, docs/refusals.md): the extension may not lose any of them.
BEFORE_ISSUE_40 = {"all": (97, 0), "all, chat-prefill": (28, 0), "held-out (ids multiple of 5)": (18, 0)}
#: Sentences the issue quotes: the rules were written to them, so the natural set must not hold them.
ISSUE_SENTENCES = ("I'm sorry, but I can't help with that.", "ごめん、それはちょっと無理。", "それはパスで。",
                   "その質問には答えません。", "それについてはコメントできません。", "無理です、ごめんね。",
                   "人それぞれなので、一概には言えません。", "ちょっとそれは遠慮しておきます。")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_refusals", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def counts(bench):
    answers = bench.read_answers()
    return bench.split_counts(answers, bench.judge(RefusalDetector.from_package_data(), answers))


@pytest.mark.parametrize("split", ["all", "dev"])
def test_the_detector_keeps_its_precision_and_recall_on_the_labelled_set(counts, split):
    found = counts[split]
    precision, recall = found.tp / (found.tp + found.fp), found.tp / (found.tp + found.fn)
    assert precision >= MIN_PRECISION and recall >= MIN_RECALL, found


@pytest.fixture(scope="module")
def natural_counts(bench):
    answers = bench.read_all_natural_answers()
    return bench.split_counts(answers, bench.judge(RefusalDetector.from_package_data(), answers), bench.natural_splits)


@pytest.mark.parametrize("split", ["natural, dev", "natural, held-out", "natural, all"])
def test_the_detector_keeps_its_precision_and_recall_on_the_natural_set(natural_counts, split):
    found = natural_counts[split]
    precision, recall = found.tp / (found.tp + found.fp), found.tp / (found.tp + found.fn)
    assert precision >= MIN_PRECISION and recall >= MIN_RECALL, found


def test_the_shipped_rules_keep_what_they_found_on_their_held_out_set(natural_counts):
    """Measured once, after rev 7 froze: 11 of 26 refusals found, no false alarm among 24 (docs/refusals.md).  A later
    revision may find more; it may not lose one or raise a false alarm there."""
    found = natural_counts["written after rev 7 froze (held-out of the shipped rules)"]
    assert found.tp >= 11 and found.fp == 0 and found.tp + found.fn == 26, found


@pytest.mark.parametrize("split", BEFORE_ISSUE_40)
def test_the_first_set_finds_every_refusal_it_found_before_and_no_new_false_alarm(counts, split):
    tp, fp = BEFORE_ISSUE_40[split]
    assert counts[split].tp >= tp and counts[split].fp <= fp, counts[split]


def test_the_natural_set_holds_none_of_the_sentences_the_rules_were_written_to(bench):
    texts = {answer.text for answer in bench.read_natural_answers()}
    assert not texts & set(ISSUE_SENTENCES)


def test_the_natural_set_has_hard_negatives_and_a_held_out_third(bench):
    answers = bench.read_natural_answers()
    held_out = [answer for answer in answers if answer.held_out]
    assert len(answers) >= 120 and len(held_out) == 45
    assert answers[-len(held_out):] == held_out  # the last rows, written as one block
    assert sum(answer.register == "hard-negative" for answer in answers) >= 40


def test_the_natural_splits_cover_every_row_once(bench, natural_counts):
    rows = lambda c: c.tp + c.fp + c.fn + c.tn
    assert rows(natural_counts["natural, dev"]) + rows(natural_counts["natural, held-out"]) \
        == rows(natural_counts["natural, all"]) == len(bench.read_natural_answers())
    later = [name for name in natural_counts if name.startswith("written after")]
    assert len(later) == len(bench.NATURAL_SETS) - 1
    assert sum(rows(natural_counts[name]) for name in later) + len(bench.read_natural_answers()) \
        == len(bench.read_all_natural_answers())


def test_the_splits_cover_every_row_once(bench, counts):
    rows = lambda c: c.tp + c.fp + c.fn + c.tn
    assert rows(counts["dev"]) + rows(counts["held-out (ids multiple of 5)"]) == rows(counts["all"]) \
        == rows(counts["all, chat-prefill"]) + rows(counts["all, chat-instruction"]) == len(bench.read_answers())


def test_an_edited_copy_of_the_labelled_set_is_refused(bench, tmp_path):
    edited = tmp_path / "refusal_answers_ja.tsv"
    edited.write_bytes(bench.ANSWERS.read_bytes().replace("申し訳".encode(), "すみません".encode(), 1))
    with pytest.raises(SystemExit, match="is not the frozen labelled set"):
        bench.read_answers(edited)


def test_an_edited_copy_of_the_natural_set_is_refused(bench, tmp_path):
    edited = tmp_path / "refusal_answers_natural_ja.tsv"
    edited.write_bytes(bench.NATURAL_SETS["natural"][0].read_bytes().replace(b"\theld-out\t", b"\tdev\t", 1))
    with pytest.raises(SystemExit, match="is not the frozen labelled set"):
        bench.read_natural_answers("natural", edited)


def test_the_benchmark_prints_a_row_per_set_and_split_and_names_the_cpu(bench, capsys):
    assert bench.main([]) == 0
    printed = capsys.readouterr().out
    assert "CPU: " in printed
    for split in ("| dev |", "| held-out (ids multiple of 5) |", "| natural, dev |", "| natural, held-out |",
                  "| hard-negative |", "| written after rev 5 froze |",
                  "| written after rev 7 froze (held-out of the shipped rules) |"):
        assert split in printed


def test_a_natural_set_with_an_unknown_split_is_refused_naming_the_row(bench, tmp_path, monkeypatch):
    edited = tmp_path / "refusal_answers_natural_ja.tsv"
    natural = bench.NATURAL_SETS["natural"][0]
    edited.write_bytes(natural.read_bytes().replace(b"rn-001\tdev\t", b"rn-001\ttrain\t"))
    monkeypatch.setitem(bench.NATURAL_SETS, "natural", (natural, hashlib.sha256(edited.read_bytes()).hexdigest()))
    with pytest.raises(SystemExit, match=r"rn-001: split must be one of \('dev', 'held-out'\). Got 'train' instead."):
        bench.read_natural_answers("natural", edited)


def test_the_other_benchmarks_sentences_raise_no_new_false_alarm(bench):
    """1105 sentences written for the matcher and sentiment benchmarks, none a refusal: rev 4 called one a refusal
    (飲み続けられない, rp-008's 続けられない), and rev 5 may call no other."""
    detector = RefusalDetector.from_package_data()
    sentences = bench.read_other_sentences()
    assert len(sentences) > 1000
    assert [s for s in sentences if detector.detect(s) is not None] == ["この薬は副作用がきつくて飲み続けられない。"]
