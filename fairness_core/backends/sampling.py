"""Sampling from counter-based random streams, one per (prompt, sample).

``torch.multinomial`` draws from one global generator, so which completion a
row gets depends on the batch it sits in and on the rows before it: change the
batch size and the audit's numbers move.  Here every row draws its noise from a
hash of (row key, step, token id), so a row's completion depends only on the
seed, its prompt and its sample index.

The draw itself is the Gumbel-max trick over the candidates left by
temperature, top-k and top-p (applied in that order, as ``transformers`` does):
``argmax(logit / T + Gumbel noise)`` is an exact sample of ``softmax(logit / T)``
restricted to the candidates.  Only the top-k candidates get noise, which on a
32k vocabulary is far cheaper than ``multinomial`` over every token.

The processor plugs into ``model.generate(do_sample=False)``: greedy argmax
over noised scores *is* sampling, and ``transformers`` keeps handling the KV
cache, positions, padding and stopping for every architecture.
"""

from __future__ import annotations

import hashlib

import torch
from transformers import LogitsProcessor

from fairness_core.thresholds import SamplingProtocol

_MASK32 = 0xFFFFFFFF


def row_key(seed: int, prompt: str, sample_index: int) -> int:
    """A 32-bit key naming the random stream of one (prompt, sample) under ``seed``."""
    digest = hashlib.sha256(f"{seed}\x00{sample_index}\x00{prompt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """The 'lowbias32' integer hash (C. Wellons) on int64 tensors holding 32-bit values."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _MASK32
    return x ^ (x >> 16)


def stream_uniforms(keys: torch.Tensor, step: int, token_ids: torch.Tensor) -> torch.Tensor:
    """Uniform numbers in (0, 1), one per (row, token), determined by (key, step, token)."""
    state = _mix32(_mix32(keys.to(torch.int64)) ^ step)
    bits = _mix32(state[:, None] ^ ((token_ids.to(torch.int64) * 0x9E3779B9) & _MASK32))
    return (bits.to(torch.float64) + 0.5) / 2.0**32


def filter_candidates(scores: torch.Tensor, protocol: SamplingProtocol) -> tuple[torch.Tensor, torch.Tensor]:
    """Temperature, then top-k, then top-p: the candidates' scores and token ids, best first."""
    scores = scores.float() / protocol.temperature
    k = scores.shape[-1] if protocol.top_k == 0 else min(protocol.top_k, scores.shape[-1])
    values, token_ids = scores.topk(k, dim=-1)
    if protocol.top_p < 1.0:
        probs = values.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs
        values = values.masked_fill(mass_before >= protocol.top_p, float("-inf"))
    return values, token_ids


class SeededSampler(LogitsProcessor):
    """Turns greedy decoding into per-row seeded sampling (see the module docstring)."""

    def __init__(self, keys: torch.Tensor, prompt_length: int, protocol: SamplingProtocol):
        self.keys = keys
        self.prompt_length = prompt_length
        self.protocol = protocol

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        values, token_ids = filter_candidates(scores, self.protocol)
        step = input_ids.shape[1] - self.prompt_length
        uniforms = stream_uniforms(self.keys.to(scores.device), step, token_ids)
        gumbel = -torch.log(-torch.log(uniforms)).to(values.dtype)
        noised = torch.full_like(scores, float("-inf"), dtype=values.dtype)
        return noised.scatter_(1, token_ids, values + gumbel)
