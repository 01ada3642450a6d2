"""The refusal detector measured on the frozen labelled set of benchmarks/data, as bench_refusals.py measures it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from fairness_core.japanese.refusals import RefusalDetector

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_refusals.py"
#: The least precision and recall the shipped detector must keep on the labelled set (docs/refusals.md).
MIN_PRECISION = 0.95
MIN_RECALL = 0.9


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


def test_the_splits_cover_every_row_once(bench, counts):
    rows = lambda c: c.tp + c.fp + c.fn + c.tn
    assert rows(counts["dev"]) + rows(counts["held-out (ids multiple of 5)"]) == rows(counts["all"]) \
        == rows(counts["all, chat-prefill"]) + rows(counts["all, chat-instruction"]) == len(bench.read_answers())


def test_an_edited_copy_of_the_labelled_set_is_refused(bench, tmp_path):
    edited = tmp_path / "refusal_answers_ja.tsv"
    edited.write_bytes(bench.ANSWERS.read_bytes().replace("申し訳".encode(), "すみません".encode(), 1))
    with pytest.raises(SystemExit, match="is not the frozen labelled set"):
        bench.read_answers(edited)
