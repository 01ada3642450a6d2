"""Sampling from counter-based random streams, one per (prompt, sample).

``torch.multinomial`` draws from one global generator, so which completion a
row gets depends on the batch it sits in and on the rows before it: change the
batch size and the audit's numbers move.  Here every row draws its noise from a
hash of (row key, step, token id), so a row's completion depends only on the
seed, its prompt and its sample index.

The draw itself is the Gumbel-max trick over the candidates left by
temperature, top-k and top-p (the candidates ``transformers`` keeps):
``argmax(logit / T + Gumbel noise)`` is an exact sample of ``softmax(logit / T)``
restricted to the candidates.  Only the top-k candidates get noise, which on a
32k vocabulary is far cheaper than ``multinomial`` over every token.

The engine's decoding loop calls the sampler directly; as a logits processor
it also plugs into ``model.generate(do_sample=False)``, which then draws the
very same tokens (the reference the tests compare the engine with).
"""

from __future__ import annotations

import torch
from transformers import LogitsProcessor

from fairness_core.config.thresholds import SamplingProtocol

_MASK32 = 0xFFFFFFFF


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
    """The candidates left by temperature, top-k and top-p: their scores over the temperature and token ids, best first.

    ``transformers`` applies the temperature first, then top-k, then top-p.
    Dividing by a positive temperature keeps the order of the scores, so the
    top-k are taken first and only they are divided: one pass over the
    vocabulary instead of a second vocabulary-wide tensor per step.
    """
    k = scores.shape[-1] if protocol.top_k == 0 else min(protocol.top_k, scores.shape[-1])
    values, token_ids = scores.topk(k, dim=-1)
    values = values.float() / protocol.temperature
    if protocol.top_p < 1.0:
        probs = values.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs
        values = values.masked_fill(mass_before >= protocol.top_p, float("-inf"))
    return values, token_ids


def draw(values: torch.Tensor, token_ids: torch.Tensor, keys: torch.Tensor, step: int) -> torch.Tensor:
    """One token id per row: Gumbel-max over the row's candidates with noise from the row's own stream."""
    uniforms = stream_uniforms(keys.to(values.device), step, token_ids)
    gumbel = -torch.log(-torch.log(uniforms)).to(values.dtype)
    best = (values + gumbel).argmax(dim=-1, keepdim=True)
    return token_ids.gather(1, best).squeeze(1)


class SeededSampler(LogitsProcessor):
    """Per-row seeded sampling (see the module docstring), for the engine's loop and for ``model.generate``.

    The engine calls :meth:`tokens`.  As a ``LogitsProcessor`` under
    ``model.generate(do_sample=False)`` it draws the same tokens: it returns
    the scores with every token but the drawn one set to ``-inf``, so that the
    argmax picks exactly the drawn token - which lets a test check the engine
    against ``transformers`` decoding one prompt alone.
    """

    def __init__(self, keys: torch.Tensor, prompt_length: int, protocol: SamplingProtocol):
        self.keys = keys
        self.prompt_length = prompt_length
        self.protocol = protocol

    def tokens(self, scores: torch.Tensor, step: int, copies: torch.Tensor | None = None) -> torch.Tensor:
        """One token per row at generation step ``step`` (0 for the first new token).

        With ``copies``, ``scores`` holds one row per distinct prompt and row
        ``i`` samples from ``scores[copies[i]]``: the candidates are picked once
        per prompt and only they are copied to the prompt's samples.
        """
        values, token_ids = filter_candidates(scores, self.protocol)
        if copies is not None:
            values, token_ids = values[copies], token_ids[copies]
        return draw(values, token_ids, self.keys, step)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        chosen = self.tokens(scores, step=input_ids.shape[1] - self.prompt_length)
        return torch.full_like(scores, float("-inf")).scatter_(1, chosen[:, None], 0.0)
