"""Interrupted in-process generation keeps its work: finished batches are journalled and not made again.

The per-request seeds make a resumed run's completions those of an
uninterrupted one; these tests check that on a tiny GPT-2, in process (an
interrupt raised from inside the engine) and as a user does it (SIGINT to a
running ``pytest audits``, then the same command again).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from audit_support import setup_audits, thresholds, write_thresholds
from engine_support import REQUESTS, SAMPLING

from fairness_core.backends.hf.engine import HFBackend
from fairness_core.backends.journal import Journal


class Interrupted(KeyboardInterrupt):
    pass


def interrupt_after(backend: HFBackend, batches: int) -> None:
    """Make ``backend`` raise a KeyboardInterrupt as its batch number ``batches + 1`` starts."""
    real = backend._generate_batch
    calls = []

    def batch(*args):
        calls.append(1)
        if len(calls) > batches:
            raise Interrupted
        return real(*args)

    backend._generate_batch = batch


def test_an_interrupted_generation_resumes_and_gives_the_uninterrupted_completions(tiny_models, tmp_path):
    model, tokenizer = tiny_models["bpe"]
    expected = HFBackend(model, tokenizer, seed=3, batch_size=4).generate(REQUESTS, SAMPLING)

    first = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=tmp_path)
    interrupt_after(first, 2)
    with pytest.raises(Interrupted):
        first.generate(REQUESTS, SAMPLING)
    journal = Journal(tmp_path, first.fingerprint, SAMPLING)
    assert len(journal.read()) == 8  # two finished batches of 4

    again = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=tmp_path)
    assert again.generate(REQUESTS, SAMPLING) == expected
    assert again.usage == {"resumed": 8, "generated": len(REQUESTS) - 8}
    assert not journal.path.exists()  # a complete generation leaves no journal behind


def test_a_journal_of_another_seed_or_protocol_is_not_read(tiny_models, tmp_path):
    model, tokenizer = tiny_models["bpe"]
    first = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=tmp_path)
    interrupt_after(first, 1)
    with pytest.raises(Interrupted):
        first.generate(REQUESTS, SAMPLING)
    other_seed = HFBackend(model, tokenizer, seed=4, batch_size=4, journal_dir=tmp_path)
    other_seed.generate(REQUESTS[:4], SAMPLING)
    assert other_seed.usage["resumed"] == 0
    other_protocol = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=tmp_path)
    other_protocol.generate(REQUESTS[:4], SAMPLING.model_copy(update={"max_new_tokens": 5}))
    assert other_protocol.usage["resumed"] == 0


@pytest.mark.slow
def test_ctrl_c_stops_an_audit_within_seconds_and_the_rerun_resumes(pytester, tiny_model_dirs, tmp_path):
    """SIGINT while ``pytest audits`` generates; the same command again finishes from the journal."""
    setup_audits(pytester, modules=("test_honest.py",))
    content = thresholds(lax=True, protocol={"num_samples": 2, "max_new_tokens": 4})
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--device=cpu", "--batch-size=16",
            f"--model={tiny_model_dirs['bpe']}", f"--thresholds={write_thresholds(pytester, content)}",
            f"--lexicon={pytester.path / 'words.txt'}", f"--cache-dir={tmp_path / 'cache'}"]
    journals = tmp_path / "cache" / "journals"
    run = subprocess.Popen([*args, "--audit-json=resumed.json"], cwd=pytester.path, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(_lines(journals)) < 64:
        time.sleep(0.2)
    assert sum(_lines(journals)) >= 64, "the audit did not start generating"
    run.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    run.communicate(timeout=60)
    stopped_after = time.monotonic() - interrupted
    kept = sum(_lines(journals))
    assert stopped_after < 10, f"Ctrl-C took {stopped_after:.1f} s"
    assert run.returncode != 0 and kept >= 64

    again = subprocess.run([*args, "--audit-json=resumed.json"], cwd=pytester.path, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stdout[-3000:]
    fresh = subprocess.run([*args[:-1], f"--cache-dir={tmp_path / 'fresh'}", "--audit-json=fresh.json"],
                           cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stdout[-3000:]
    resumed, uninterrupted = (json.loads((pytester.path / name).read_text()) for name in ("resumed.json", "fresh.json"))
    assert resumed["completions"] == uninterrupted["completions"]
    assert resumed["provenance"]["usage"]["resumed"] >= kept
    total = resumed["provenance"]["usage"]["resumed"] + resumed["provenance"]["usage"]["generated"]
    assert total == uninterrupted["provenance"]["usage"]["generated"]


def _lines(folder) -> list[int]:
    return [len(path.read_text(encoding="utf-8").splitlines()) for path in folder.glob("*.jsonl")] if folder.exists() else []
