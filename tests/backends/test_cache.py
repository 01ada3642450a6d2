"""The on-disk generation cache: keys, hits, atomic writes, corrupt entries, concurrent runs, end to end.

Unit tests wrap a counting fake backend (any object with ``description``,
``fingerprint`` and ``generate`` satisfies the Backend protocol); the weights
fingerprint is checked on the tiny GPT-2 of conftest.py; the end-to-end test
runs the real HONEST audit twice on one cache folder.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from audit_support import output, run_audit, setup_audits, thresholds

from fairness_core.backends import cache as cache_module
from fairness_core.backends.base import Backend, Completion, Request
from fairness_core.backends.cache import (
    CACHE_DIR_VARIABLE,
    CachedBackend,
    cache_key,
    completions_checksum,
    default_cache_dir,
    entry_text,
    write_atomically,
)
from fairness_core.backends.hf.engine import HFBackend
from fairness_core.config.thresholds import SamplingProtocol

FINGERPRINT = {"weights": "ab" * 32, "tokenizer": "cd" * 32, "dtype": "torch.float32", "device": "cpu",
               "seed": "0", "engine": "2", "versions": "torch 2, transformers 5"}
REQUESTS = [Request("母は", 0), Request("母は", 1), Request("父の夢は", 0)]
PROTOCOL = SamplingProtocol(num_samples=2, max_new_tokens=5)


class CountingBackend:
    """A fake backend: completion ``"<prompt>#<sample>"``; counts calls."""

    def __init__(self, *, fingerprint=FINGERPRINT, delay: float = 0.0, text=None):
        self.description = {"model": "fake"}
        self.fingerprint = dict(fingerprint)
        self.calls = 0
        self.delay = delay
        self.text = text or (lambda r: f"{r.prompt}#{r.sample_index}")
        self._lock = threading.Lock()

    def generate(self, requests, protocol):
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        return [Completion(self.text(r), r.sample_index + 1) for r in requests]


def expected(requests=REQUESTS) -> list[Completion]:
    return [Completion(f"{r.prompt}#{r.sample_index}", r.sample_index + 1) for r in requests]


def leftovers(folder: Path) -> list[str]:
    """Temporary files left behind by an interrupted write."""
    return sorted(p.name for p in folder.rglob("*.tmp"))


def entries(folder: Path) -> list[Path]:
    """The generation entries (``<2 hex>/<key>.json``), not the kernel choices kept beside them."""
    return sorted(folder.glob("*/*.json"))


# --- cache keys --------------------------------------------------------------------------------------

def test_cache_key_is_stable_for_equal_inputs():
    key = cache_key(FINGERPRINT, REQUESTS, PROTOCOL)
    assert len(key) == 64 and int(key, 16) >= 0
    assert cache_key(dict(FINGERPRINT), [Request(r.prompt, r.sample_index) for r in REQUESTS],
                     SamplingProtocol(num_samples=2, max_new_tokens=5)) == key
    # The order in which the fingerprint was assembled does not matter.
    assert cache_key(dict(reversed(list(FINGERPRINT.items()))), REQUESTS, PROTOCOL) == key


@pytest.mark.parametrize(
    "change",
    [
        {"fingerprint": {**FINGERPRINT, "seed": "1"}},
        {"fingerprint": {**FINGERPRINT, "weights": "ef" * 32}},
        {"fingerprint": {**FINGERPRINT, "tokenizer": "00" * 32}},
        {"fingerprint": {**FINGERPRINT, "dtype": "torch.bfloat16"}},
        {"fingerprint": {**FINGERPRINT, "device": "cuda"}},
        {"fingerprint": {**FINGERPRINT, "versions": "torch 3, transformers 5"}},
        {"fingerprint": {**FINGERPRINT, "engine": "3"}},
        {"fingerprint": {**FINGERPRINT, "extra": "x"}},
        {"protocol": SamplingProtocol(num_samples=3, max_new_tokens=5)},
        {"protocol": SamplingProtocol(num_samples=2, max_new_tokens=6)},
        {"protocol": SamplingProtocol(num_samples=1, max_new_tokens=5, do_sample=False)},
        {"protocol": SamplingProtocol(num_samples=2, max_new_tokens=5, top_k=0)},
        {"protocol": SamplingProtocol(num_samples=2, max_new_tokens=5, top_p=0.9)},
        {"protocol": SamplingProtocol(num_samples=2, max_new_tokens=5, temperature=0.7)},
        {"requests": [Request("母は", 0), Request("母は", 1), Request("父の夢は", 1)]},   # a sample index
        {"requests": [Request("母は", 0), Request("母は", 1), Request("父の夢が", 0)]},   # a prompt
        {"requests": REQUESTS[:2]},                                                   # one request fewer
        {"requests": [*REQUESTS, Request("娘は", 0)]},                                  # one more
        {"requests": [REQUESTS[2], REQUESTS[0], REQUESTS[1]]},                        # another order
    ],
    ids=lambda change: next(iter(change)) + ":" + str(next(iter(change.values())))[:40],
)
def test_cache_key_changes_with_anything_that_determines_the_completions(change):
    arguments = {"fingerprint": FINGERPRINT, "requests": REQUESTS, "protocol": PROTOCOL}
    assert cache_key(**{**arguments, **change}) != cache_key(**arguments)


def test_hf_fingerprint_changes_when_one_weight_changes(tiny_models):
    model, tokenizer = tiny_models["sentencepiece"]
    copied = copy.deepcopy(model)
    original = HFBackend(copied, tokenizer).fingerprint
    assert HFBackend(copy.deepcopy(model), tokenizer).fingerprint == original
    assert set(original) >= {"weights", "tokenizer", "dtype", "device", "seed", "versions"}

    changed = copy.deepcopy(model)
    with torch.no_grad():
        parameter = changed.transformer.h[-1].mlp.c_proj.weight
        parameter[0, 0] = parameter[0, 0] + 1e-3
    fingerprint = HFBackend(changed, tokenizer).fingerprint
    assert fingerprint["weights"] != original["weights"]
    assert {k: v for k, v in fingerprint.items() if k != "weights"} == \
        {k: v for k, v in original.items() if k != "weights"}
    assert HFBackend(copy.deepcopy(model), tokenizer, seed=1).fingerprint["seed"] == "1"


def test_hf_fingerprint_tells_the_two_tokenizers_apart(tiny_models):
    prints = [HFBackend(*tiny_models[kind]).fingerprint for kind in ("bpe", "sentencepiece")]
    assert prints[0]["tokenizer"] != prints[1]["tokenizer"]


# --- hits and misses ----------------------------------------------------------------------------------

def test_cached_backend_satisfies_the_backend_protocol(tmp_path):
    inner = CountingBackend()
    cached: Backend = CachedBackend(inner, cache_dir=tmp_path)
    assert cached.description == inner.description and cached.fingerprint == inner.fingerprint


def test_second_call_is_served_from_the_cache(tmp_path):
    inner = CountingBackend()
    first = CachedBackend(inner, cache_dir=tmp_path)
    assert first.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, first.hits, first.misses) == (1, 0, 1)
    [entry] = entries(tmp_path)
    assert entry == first.entry_path(REQUESTS, PROTOCOL)
    assert json.loads(entry.read_text(encoding="utf-8"))["completions"] == [asdict(c) for c in expected()]

    assert first.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, first.hits, first.misses) == (1, 1, 1)
    # A later run (a new wrapper, a new inner backend) reads the same entry.
    later_inner = CountingBackend()
    later = CachedBackend(later_inner, cache_dir=tmp_path)
    assert later.generate(REQUESTS, PROTOCOL) == expected()
    assert (later_inner.calls, later.hits, later.misses) == (0, 1, 0)


def test_other_protocol_requests_or_fingerprint_miss(tmp_path):
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    cached.generate(REQUESTS, PROTOCOL)
    cached.generate(REQUESTS, SamplingProtocol(num_samples=2, max_new_tokens=6))
    cached.generate(REQUESTS[:2], PROTOCOL)
    assert (inner.calls, cached.hits, cached.misses) == (3, 0, 3)
    reseeded = CachedBackend(CountingBackend(fingerprint={**FINGERPRINT, "seed": "1"}), cache_dir=tmp_path)
    reseeded.generate(REQUESTS, PROTOCOL)
    assert (reseeded.inner.calls, reseeded.misses) == (1, 1)
    assert len(entries(tmp_path)) == 4


def test_japanese_text_round_trips_through_the_cache(tmp_path):
    texts = {"母は": "「医者」になる🙂\n改行も", "父の夢は": "ｶﾀｶﾅ\u3000全角"}
    inner = CountingBackend(text=lambda r: texts.get(r.prompt, "") + str(r.sample_index))
    CachedBackend(inner, cache_dir=tmp_path).generate(REQUESTS, PROTOCOL)
    again = CachedBackend(CountingBackend(), cache_dir=tmp_path).generate(REQUESTS, PROTOCOL)
    assert [c.text for c in again] == [texts[r.prompt] + str(r.sample_index) for r in REQUESTS]


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(CACHE_DIR_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "ja-fairness-audit" / "generations"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ja-fairness-audit" / "generations"


def test_a_cache_variable_starting_with_a_tilde_is_in_the_home_folder(monkeypatch, tmp_path):
    """``JA_FAIRNESS_AUDIT_CACHE='~/x'`` (quoted, so no shell expanded it) is ~/x, not a folder named '~'."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(CACHE_DIR_VARIABLE, "~/generations")
    monkeypatch.chdir(tmp_path)
    assert default_cache_dir() == tmp_path / "home" / "generations"
    CachedBackend(CountingBackend(), cache_dir=default_cache_dir()).generate(REQUESTS, PROTOCOL)
    assert len(entries(tmp_path / "home" / "generations")) == 1 and not (tmp_path / "~").exists()


# --- interrupted writes and corrupt entries --------------------------------------------------------------

def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["replace", "fsync"])
def test_an_interrupted_write_leaves_no_entry_and_no_temporary_file(tmp_path, monkeypatch, where):
    """Ctrl-C while the entry is written (after the data, before the rename): nothing half-written stays."""
    monkeypatch.setattr(cache_module.os, where, interrupt)
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        cached.generate(REQUESTS, PROTOCOL)
    assert inner.calls == 1
    assert entries(tmp_path) == [] and leftovers(tmp_path) == []
    assert cached.misses == 0 and cached.hits == 0

    monkeypatch.undo()
    assert cached.generate(REQUESTS, PROTOCOL) == expected()
    assert inner.calls == 2 and len(entries(tmp_path)) == 1 and leftovers(tmp_path) == []


def test_completions_that_cannot_be_serialised_leave_no_entry(tmp_path):
    inner = CountingBackend(text=lambda r: object())
    with pytest.raises(TypeError):
        CachedBackend(inner, cache_dir=tmp_path).generate(REQUESTS, PROTOCOL)
    assert entries(tmp_path) == [] and leftovers(tmp_path) == []
    good = CountingBackend()
    assert CachedBackend(good, cache_dir=tmp_path).generate(REQUESTS, PROTOCOL) == expected()
    assert good.calls == 1


def test_write_atomically_keeps_the_old_content_when_interrupted(tmp_path, monkeypatch):
    path = tmp_path / "entry.json"
    write_atomically(path, "old")
    monkeypatch.setattr(cache_module.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["entry.json"]


@pytest.mark.parametrize(
    "content",
    [
        b'[{"text": "\xe6\xaf\x8d\xe3\x81\xaf#0", "num_tok',   # cut off mid-write
        b"",                                           # empty
        b"null",
        b'{"text": "x"}',                              # an object, not a list
        b'[{"completion": "x"}]',                      # rows of another shape
        json.dumps([{"text": "stale", "num_tokens": 1}]).encode(),  # the wrong number of completions
        b"\xff\xfe[",                                  # not UTF-8
    ],
    ids=["truncated", "empty", "null", "object", "other-rows", "wrong-count", "not-utf8"],
)
def test_a_corrupt_entry_is_regenerated_and_replaced(tmp_path, content):
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    path = cached.entry_path(REQUESTS, PROTOCOL)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert cached.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, cached.misses) == (1, 1)
    assert json.loads(path.read_text(encoding="utf-8"))["completions"] == [asdict(c) for c in expected()]
    assert len(cached.rejected) == 1 and cached.rejected[0].startswith(f"{path}: ")
    assert cached.generate(REQUESTS, PROTOCOL) == expected() and cached.hits == 1


def signed(rows) -> str:
    """An entry whose checksum matches ``rows``: what a consistent but wrong entry would look like."""
    return json.dumps({"sha256": completions_checksum(rows), "completions": rows}, ensure_ascii=False)


def fresh_rows() -> list[dict]:
    return [asdict(c) for c in expected()]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (lambda: json.dumps({"sha256": completions_checksum(fresh_rows()),
                             "completions": [{**fresh_rows()[0], "text": "母"}, *fresh_rows()[1:]]}),
         "checksum mismatch: the completions were edited or corrupted"),
        (lambda: json.dumps({"sha256": "0" * 64, "completions": fresh_rows()}),
         "checksum mismatch: the completions were edited or corrupted"),
        (lambda: json.dumps(fresh_rows()), r"not an entry of this cache format \(expected keys 'sha256' and "
                                           r"'completions'\)"),
        (lambda: signed([{**fresh_rows()[0], "text": None}, *fresh_rows()[1:]]),
         r"completion 0 is not \{'text': str, 'num_tokens': int >= -1 \(-1: not reported\), 'finish_reason': stop, length, content_filter or null, 'reading': str or null\}: \{'text': None, 'num_tokens': 1"),
        (lambda: signed([*fresh_rows()[:2], {**fresh_rows()[2], "num_tokens": "1"}]),
         r"completion 2 is not \{'text': str, 'num_tokens': int >= -1 \(-1: not reported\), 'finish_reason': stop, length, content_filter or null, 'reading': str or null\}: "),
        (lambda: signed([*fresh_rows()[:2], {**fresh_rows()[2], "num_tokens": True}]),
         r"completion 2 is not \{'text': str, 'num_tokens': int >= -1 \(-1: not reported\), 'finish_reason': stop, length, content_filter or null, 'reading': str or null\}: "),
        (lambda: signed([*fresh_rows()[:2], {**fresh_rows()[2], "extra": 1}]),
         r"completion 2 is not \{'text': str, 'num_tokens': int >= -1 \(-1: not reported\), 'finish_reason': stop, length, content_filter or null, 'reading': str or null\}: "),
        (lambda: signed(fresh_rows()[:2]), "2 completions for 3 requests"),
    ],
    ids=["edited-text", "wrong-checksum", "format-1", "null-text", "string-count", "bool-count", "extra-key",
         "wrong-count"],
)
def test_an_entry_failing_its_checksum_or_schema_is_rejected_and_regenerated(tmp_path, content, reason):
    """A tampered entry never changes a completion: it is a miss, regenerated, overwritten and reported."""
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    path = cached.entry_path(REQUESTS, PROTOCOL)
    path.parent.mkdir(parents=True)
    path.write_text(content(), encoding="utf-8")
    assert cached.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, cached.hits, cached.misses) == (1, 0, 1)
    [line] = cached.rejected
    assert re.fullmatch(rf"{re.escape(str(path))}: {reason}.*", line), line
    assert path.read_text(encoding="utf-8") == entry_text(expected())
    assert cached.generate(REQUESTS, PROTOCOL) == expected() and cached.hits == 1 and len(cached.rejected) == 1
    assert cached.summary_lines() == [
        "generation cache: 1 entry failed the integrity check, generated anew:", f"  {line}"]


# --- read-only caches --------------------------------------------------------------------------------------

def test_a_read_only_warm_cache_is_read_without_locks(tmp_path, make_read_only):
    CachedBackend(CountingBackend(), cache_dir=tmp_path).generate(REQUESTS, PROTOCOL)
    for lock in tmp_path.rglob("*.lock"):
        lock.unlink()
    make_read_only(tmp_path)
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    assert cached.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, cached.hits, cached.misses, cached.rejected, cached.not_stored) == (0, 1, 0, [], [])


def test_a_miss_in_a_read_only_cache_is_generated_and_not_stored(tmp_path, make_read_only):
    make_read_only(tmp_path)
    inner = CountingBackend()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    assert cached.generate(REQUESTS, PROTOCOL) == expected()
    assert (inner.calls, cached.misses) == (1, 1)
    path = cached.entry_path(REQUESTS, PROTOCOL)
    [line] = cached.not_stored
    assert re.fullmatch(rf"{re.escape(str(path))}: not stored, the cache cannot be written \(.+\)", line), line
    assert entries(tmp_path) == []
    assert cached.summary_lines() == ["generation cache: 1 entry generated but not stored:", f"  {line}"]


# --- concurrent runs ------------------------------------------------------------------------------------

def test_two_threads_generating_the_same_entry_call_the_model_once(tmp_path):
    """Two wrappers (as in two xdist workers) on one folder: the second waits for the first's entry."""
    inner = CountingBackend(delay=0.5)
    wrappers = [CachedBackend(inner, cache_dir=tmp_path) for _ in range(2)]
    start = threading.Barrier(2)
    results = [None, None]

    def work(i):
        start.wait()
        results[i] = wrappers[i].generate(REQUESTS, PROTOCOL)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [expected(), expected()]
    assert inner.calls == 1
    assert sorted((w.hits, w.misses) for w in wrappers) == [(0, 1), (1, 0)]


PROCESS_SCRIPT = """
import os, sys, time, json
from fairness_core.backends.base import Completion, Request
from fairness_core.backends.cache import CachedBackend
from fairness_core.config.thresholds import SamplingProtocol

class Slow:
    description = {"model": "fake"}
    fingerprint = {"weights": "w", "seed": "0"}
    def generate(self, requests, protocol):
        with open(sys.argv[2], "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\\n")
        time.sleep(1.0)
        return [Completion(f"{r.prompt}#{os.getpid()}", 1) for r in requests]

while not os.path.exists(sys.argv[3]):
    time.sleep(0.01)
cached = CachedBackend(Slow(), cache_dir=sys.argv[1])
completions = cached.generate([Request("母は", 0), Request("父は", 0)], SamplingProtocol(num_samples=1))
print(json.dumps({"texts": [c.text for c in completions], "hits": cached.hits, "misses": cached.misses}))
"""


def test_two_processes_generating_the_same_entry_call_the_model_once(tmp_path):
    """Two audit runs at once (two CI jobs on one cache): one generates, the other reads its entry."""
    script, calls, go = tmp_path / "run.py", tmp_path / "calls.log", tmp_path / "go"
    script.write_text(PROCESS_SCRIPT, encoding="utf-8")
    processes = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache"), str(calls), str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
    time.sleep(0.5)  # both have started and imported; now release them together
    go.touch()
    outputs = [process.communicate(timeout=60) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    results = [json.loads(out) for out, _ in outputs]
    assert len(calls.read_text(encoding="utf-8").split()) == 1, "the model was called by both processes"
    assert results[0]["texts"] == results[1]["texts"]
    assert sorted((r["hits"], r["misses"]) for r in results) == [(0, 1), (1, 0)]


# --- end to end -------------------------------------------------------------------------------------------

def metric_values(path: Path) -> dict[str, tuple]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {m["id"]: (m["value"], m["interval"], m["p_value"], m["decision"]) for m in raw["metrics"]}


def test_a_second_audit_run_is_served_from_the_cache(pytester, tiny_model_dirs):
    setup_audits(pytester, modules=("test_honest.py",))
    model, cache = tiny_model_dirs["sentencepiece"], pytester.path / "generations"
    content = thresholds(lax=True)

    first = run_audit(pytester, model, content, f"--cache-dir={cache}", "--audit-json=first.json", cache=True)
    assert first.ret == pytest.ExitCode.OK, output(first)
    stored = {p: p.stat().st_mtime_ns for p in entries(cache)}
    assert len(stored) == 1, "one entry: all HONEST requests of the run"

    second = run_audit(pytester, model, content, f"--cache-dir={cache}", "--audit-json=second.json", cache=True)
    assert second.ret == pytest.ExitCode.OK, output(second)
    assert metric_values(pytester.path / "second.json") == metric_values(pytester.path / "first.json")
    assert {p: p.stat().st_mtime_ns for p in entries(cache)} == stored, "the entry was read, not rewritten"
    assert leftovers(cache) == []

    # A hand-edited entry (still valid JSON) never changes a number: it fails its checksum, is regenerated
    # and overwritten, and the completions and metrics are those of the fresh run.
    [entry] = stored
    original = json.loads(entry.read_text(encoding="utf-8"))
    edited = {**original, "completions": [{**row, "text": "母"} for row in original["completions"]]}
    entry.write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
    third = run_audit(pytester, model, content, f"--cache-dir={cache}", "--audit-json=third.json", cache=True)
    assert third.ret == pytest.ExitCode.OK, output(third)
    assert metric_values(pytester.path / "third.json") == metric_values(pytester.path / "first.json")
    completions = [json.loads((pytester.path / f"{run}.json").read_text(encoding="utf-8"))["completions"]["honest"]
                   for run in ("first", "third")]
    assert completions[1] == completions[0]
    assert json.loads(entry.read_text(encoding="utf-8")) == original
