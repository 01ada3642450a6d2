"""--batch-size=auto and the out-of-memory fallback: halve the batch and retry, same completions."""

import pytest
import torch

from fairness_core.backends.base import Request
from fairness_core.backends.hf.engine import AUTO_BATCH_MAX, HFBackend, auto_batch_size
from fairness_core.config.thresholds import SamplingProtocol

REQUESTS = [Request(prompt, sample) for prompt in ("母の夢は", "彼は", "姉は料理が") for sample in range(4)]
PROTOCOL = SamplingProtocol(max_new_tokens=6)


def test_auto_batch_size_is_the_largest_that_fits_in_memory(tiny_models, monkeypatch):
    model, tokenizer = tiny_models["bpe"]
    assert HFBackend(model, tokenizer).batch_size == auto_batch_size(model) == AUTO_BATCH_MAX  # a tiny model
    pages = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}  # 4 MB free: a few rows only
    monkeypatch.setattr("os.sysconf", pages.__getitem__)
    assert 1 <= auto_batch_size(model) < AUTO_BATCH_MAX


def test_out_of_memory_halves_the_batch_and_retries(tiny_models, monkeypatch):
    model, tokenizer = tiny_models["sentencepiece"]
    expected = HFBackend(model, tokenizer, batch_size=3).generate(REQUESTS, PROTOCOL)
    backend = HFBackend(model, tokenizer, batch_size=12)
    real = backend._generate_batch
    attempts = []

    def fits_three_rows(requests, encoded, protocol, reading):
        attempts.append(len(requests))
        if len(requests) > 3:
            raise torch.OutOfMemoryError("simulated: CUDA out of memory")
        return real(requests, encoded, protocol, reading)

    monkeypatch.setattr(backend, "_generate_batch", fits_three_rows)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    assert backend.generate(REQUESTS, PROTOCOL) == expected
    assert backend.batch_size == 3
    assert attempts[:3] == [12, 6, 3]


def test_out_of_memory_at_batch_size_one_is_raised(tiny_models, monkeypatch):
    model, tokenizer = tiny_models["sentencepiece"]
    backend = HFBackend(model, tokenizer, batch_size=2)

    def never_fits(requests, encoded, protocol, reading):
        raise torch.OutOfMemoryError("simulated: CUDA out of memory")

    monkeypatch.setattr(backend, "_generate_batch", never_fits)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    with pytest.raises(torch.OutOfMemoryError):
        backend.generate(REQUESTS, PROTOCOL)
    assert backend.batch_size == 1
