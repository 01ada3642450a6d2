"""Interrupted in-process generation keeps its work: finished batches are journalled and not made again.

The per-request seeds make a resumed run's completions those of an
uninterrupted one; these tests check that on a tiny GPT-2, in process (an
interrupt raised from inside the engine) and as a user does it (SIGINT to a
running ``pytest audits``, then the same command again).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from audit_support import output, run_audit, setup_audits, thresholds, write_thresholds
from engine_support import REQUESTS, SAMPLING

from fairness_core.backends.base import Request
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


# --- a journal that cannot be written: a read-only cache, a full disk ---------------------------------------------

NOT_KEPT = (r"generation journal: {folder} cannot be written \({reason}\); finished samples are not journalled, so an "
            r"interrupted run generates them again")


def test_a_read_only_journal_folder_costs_only_the_resumption_and_is_said_once(tiny_models, tmp_path, make_read_only):
    model, tokenizer = tiny_models["bpe"]
    expected = HFBackend(model, tokenizer, seed=3, batch_size=4).generate(REQUESTS, SAMPLING)
    cache = tmp_path / "cache"
    cache.mkdir()
    make_read_only(cache)
    backend = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=cache / "journals")
    assert backend.generate(REQUESTS, SAMPLING) == expected
    backend.generate(REQUESTS[:4], SAMPLING.model_copy(update={"max_new_tokens": 5}))  # a second evaluation's call
    [note] = backend.summary_lines()
    assert re.fullmatch(NOT_KEPT.format(folder=re.escape(str(cache / "journals")), reason=".+"), note), note


def test_a_full_disk_stops_the_journal_not_the_generation(tiny_models, full_disk):
    """The disk fills up part of the way through: what was journalled is read back once there is room again."""
    model, tokenizer = tiny_models["bpe"]
    requests = [Request(r.prompt, sample) for r in REQUESTS[::3] for sample in range(8)]
    expected = HFBackend(model, tokenizer, seed=3, batch_size=4).generate(requests, SAMPLING)
    folder = full_disk(free=4096) / "journals"
    first = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=folder)
    interrupt_after(first, len(requests) // 4 - 1)  # the last batch is interrupted
    with pytest.raises(Interrupted):
        first.generate(requests, SAMPLING)
    [note] = first.summary_lines()
    assert re.fullmatch(NOT_KEPT.format(folder=re.escape(str(folder)), reason="No space left on device"), note), note
    journalled = len(Journal(folder, first.fingerprint, SAMPLING).read())
    assert 0 < journalled < len(requests) - 4

    (folder.parent / ".filler").unlink()
    again = HFBackend(model, tokenizer, seed=3, batch_size=4, journal_dir=folder)
    assert again.generate(requests, SAMPLING) == expected
    assert again.usage["resumed"] == journalled and again.summary_lines() == []


@pytest.mark.parametrize("cache_kind", ["read-only", "full"])
def test_an_audit_on_a_cache_that_cannot_store_its_miss_runs_and_says_so_once(
        pytester, tiny_model_dirs, tmp_path, request, cache_kind):
    """``pytest audits --cache-dir=<read-only or full> --seed=1``: generated, nothing stored, the journal said once."""
    setup_audits(pytester, modules=("test_honest.py",))
    if cache_kind == "read-only":
        cache = tmp_path / "warm-cache"
        cache.mkdir()
        request.getfixturevalue("make_read_only")(cache)
        reason = ".+"
    else:
        cache = request.getfixturevalue("full_disk")(free=0)
        reason = "No space left on device"
    result = run_audit(pytester, tiny_model_dirs["sentencepiece"], thresholds(lax=True), f"--cache-dir={cache}",
                       "--seed=1", "--audit-json=results.json", cache=True)
    text = output(result)
    assert result.ret == pytest.ExitCode.OK, text
    note = NOT_KEPT.format(folder=re.escape(str(cache / "journals")), reason=reason)
    assert len(re.findall(note, text)) == 1, text
    assert "generation cache: 1 entry generated but not stored:" in text
    notes = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))["notes"]
    assert [line for line in notes if re.fullmatch(note, line)], notes
    assert "Traceback" not in text and "INTERNALERROR" not in text
