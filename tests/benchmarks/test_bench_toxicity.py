"""The toxicity-set reader of benchmarks/bench_toxicity.py, on a file written here (never the real set)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_toxicity.py"
HEADER = "id,text,Not Toxic,Hard to Say,Toxic,Very Toxic,annotation_num\n"


def bench():
    spec = importlib.util.spec_from_file_location("bench_toxicity", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_comments_are_split_by_annotator_votes(tmp_path: Path):
    path = tmp_path / "subset.csv"
    # Written for this test: the vote columns of the inspection-ai japanese-toxic-dataset, made-up rows.
    path.write_text(HEADER + "1,ありがとう,5,0,0,0,5\n"  # non-toxic: 5 of 5 Not Toxic
                    "2,しね,1,0,1,1,3\n"  # toxic: 2 toxic votes against 1
                    "3,微妙,2,2,0,0,4\n"  # neither: Not Toxic is no majority, no toxic vote
                    "4,ばか,2,0,1,1,4\n", encoding="utf-8")  # neither: 2 against 2
    toxic, clean = bench().read_toxicity(path)
    assert toxic == ["しね"]
    assert clean == ["ありがとう"]


def test_a_file_without_the_vote_columns_is_refused(tmp_path: Path):
    path = tmp_path / "other.csv"
    path.write_text("text,label\nしね,1\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"must have the columns .*Got \['text', 'label'\] instead"):
        bench().read_toxicity(path)
