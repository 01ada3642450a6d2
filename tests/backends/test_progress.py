"""Generation progress: a tqdm bar on a terminal, plain lines in a CI log; no library bars in pytest's header."""

from __future__ import annotations

import io
import sys

from tqdm import tqdm
from transformers.utils import logging as transformers_logging

from fairness_core.backends.base import Request
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.progress import PlainProgress, progress_bar, quiet_library_bars
from fairness_core.config.thresholds import SamplingProtocol


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_tenth_of_the_work():
    clock, log = Clock(), io.StringIO()
    progress = PlainProgress(100, desc="generating", unit="completion", stream=log, clock=clock)
    for _ in range(20):
        clock.now += 1
        progress.update(5)
    lines = log.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0] == "generating: 10/100 completions (10%), 5.0 completions/s, ETA 18s"
    assert lines[-1] == "generating: 100/100 completions (100%), 5.0 completions/s, ETA 0s"


def test_a_line_at_least_every_30_seconds():
    clock, log = Clock(), io.StringIO()
    progress = PlainProgress(6400, desc="generating", unit="completion", stream=log, clock=clock)
    clock.now = 29
    progress.update(64)
    assert log.getvalue() == ""
    clock.now = 32
    progress.update(64)
    assert log.getvalue() == "generating: 128/6400 completions (2%), 4.0 completions/s, ETA 26m 08s\n"


def test_progress_bar_is_tqdm_on_a_terminal_and_plain_lines_elsewhere():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(progress_bar(10, desc="d", unit="u", stream=Terminal()), tqdm)
    assert isinstance(progress_bar(10, desc="d", unit="u", stream=io.StringIO()), PlainProgress)


def test_generation_prints_plain_progress_when_stderr_is_not_a_terminal(tiny_models, monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", log)
    model, tokenizer = tiny_models["bpe"]
    requests = [Request("母は", i) for i in range(8)]
    HFBackend(model, tokenizer, batch_size=4).generate(requests, SamplingProtocol(num_samples=8, max_new_tokens=3))
    lines = log.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["generating: 4/8 completions (50%)",
                                                      "generating: 8/8 completions (100%)"]


def test_quiet_library_bars_restores_the_setting():
    assert transformers_logging.is_progress_bar_enabled()
    with quiet_library_bars():
        assert not transformers_logging.is_progress_bar_enabled()
    assert transformers_logging.is_progress_bar_enabled()


def test_loading_a_model_prints_no_progress_bar(tiny_model_dirs, capfd):
    capfd.readouterr()
    load_model(str(tiny_model_dirs["bpe"]), device="cpu")
    assert "Loading weights" not in capfd.readouterr().err
