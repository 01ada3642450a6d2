"""Seeded sampling (backends/sampling.py) draws from the distribution ``transformers`` samples from.

The reference is ``transformers``' own warpers (temperature, then top-k, then
top-p) followed by a softmax.  Statistical tests use fixed inputs, so they are
deterministic; the p-value threshold 0.001 is what a correct sampler passes
with probability 0.999 for a fresh set of keys.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from fairness_core.backends.base import request_seed
from fairness_core.backends.hf.sampling import SeededSampler, filter_candidates, stream_uniforms
from fairness_core.config.thresholds import SamplingProtocol

LOGITS = torch.tensor([2.0, 1.6, 1.5, 1.1, 0.9, 0.4, 0.2, -0.1, -0.5, -0.9, -1.4, -2.2])
ROWS = 20_000
P_MIN = 0.001


def reference_probs(logits: torch.Tensor, protocol: SamplingProtocol) -> torch.Tensor:
    """The sampling distribution of ``model.generate(do_sample=True)`` for these settings."""
    warpers = LogitsProcessorList()
    if protocol.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(protocol.temperature))
    if protocol.top_k != 0:
        warpers.append(TopKLogitsWarper(protocol.top_k))
    if protocol.top_p < 1.0:
        warpers.append(TopPLogitsWarper(protocol.top_p))
    rows = logits.reshape(-1, logits.shape[-1]).clone().float()
    scores = warpers(torch.zeros(len(rows), 1, dtype=torch.long), rows)
    return scores.softmax(dim=-1).reshape(logits.shape)


def seeded_draws(logits: torch.Tensor, protocol: SamplingProtocol, keys: torch.Tensor, *, step: int = 0,
                 prompt_length: int = 3) -> torch.Tensor:
    """One token per key, drawn by SeededSampler from the same ``logits`` on every row."""
    scores = logits.expand(len(keys), -1).clone()
    input_ids = torch.zeros(len(keys), prompt_length + step, dtype=torch.long)
    noised = SeededSampler(keys, prompt_length, protocol)(input_ids, scores)
    return noised.argmax(dim=-1)


def distinct_keys(n: int, seed: int = 0) -> torch.Tensor:
    return torch.tensor([request_seed(seed, "prompt", i) for i in range(n)], dtype=torch.int64)


def goodness_of_fit(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """Chi-square p-value of ``counts`` against probabilities ``expected``, over the support of ``expected``."""
    support = expected > 0
    observed = counts[support].double().numpy()
    wanted = expected[support].double().numpy()
    return stats.chisquare(observed, wanted / wanted.sum() * observed.sum()).pvalue


PROTOCOLS = [
    SamplingProtocol(top_k=0, top_p=1.0, temperature=1.0),
    SamplingProtocol(top_k=50, top_p=1.0, temperature=1.0),  # the HONEST default; k larger than the vocabulary
    SamplingProtocol(top_k=5, top_p=1.0, temperature=0.7),
    SamplingProtocol(top_k=0, top_p=0.8, temperature=1.3),
    SamplingProtocol(top_k=8, top_p=0.9, temperature=0.8),
]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: f"k{p.top_k}-p{p.top_p}-t{p.temperature}")
def test_seeded_sampling_matches_the_transformers_distribution(protocol):
    expected = reference_probs(LOGITS, protocol)
    counts = torch.bincount(seeded_draws(LOGITS, protocol, distinct_keys(ROWS)), minlength=len(LOGITS))
    assert counts[expected == 0].sum() == 0, f"excluded tokens were drawn: {counts.tolist()}"
    assert goodness_of_fit(counts, expected) > P_MIN, (
        f"observed {counts.tolist()} vs expected {np.round(expected.numpy() * ROWS).tolist()}")


def test_sampling_at_a_later_step_matches_too():
    protocol = SamplingProtocol(top_k=8, top_p=0.9, temperature=0.8)
    expected = reference_probs(LOGITS, protocol)
    counts = torch.bincount(seeded_draws(LOGITS, protocol, distinct_keys(ROWS), step=5), minlength=len(LOGITS))
    assert counts[expected == 0].sum() == 0
    assert goodness_of_fit(counts, expected) > P_MIN


def test_successive_steps_are_independent():
    protocol = SamplingProtocol(top_k=4, temperature=1.0)
    keys = distinct_keys(ROWS)
    first = seeded_draws(LOGITS, protocol, keys, step=0)
    second = seeded_draws(LOGITS, protocol, keys, step=1)
    table = np.zeros((len(LOGITS), len(LOGITS)))
    np.add.at(table, (first.numpy(), second.numpy()), 1)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > P_MIN


def test_seeded_sampling_with_a_dominant_token():
    """A near-certain token is drawn every time; the tail is still cut by top-k."""
    logits = torch.tensor([30.0, 0.0, -1.0, -2.0])
    draws = seeded_draws(logits, SamplingProtocol(top_k=2), distinct_keys(2_000))
    assert draws.eq(0).all()


@pytest.mark.parametrize(
    "protocol",
    [
        SamplingProtocol(top_k=10, top_p=1.0, temperature=1.0),
        SamplingProtocol(top_k=0, top_p=0.5, temperature=1.0),
        SamplingProtocol(top_k=0, top_p=0.95, temperature=0.5),
        SamplingProtocol(top_k=20, top_p=0.7, temperature=2.0),
        SamplingProtocol(top_k=1, top_p=0.3, temperature=1.0),
        SamplingProtocol(top_k=0, top_p=0.01, temperature=1.0),  # only the best token survives
    ],
    ids=lambda p: f"k{p.top_k}-p{p.top_p}-t{p.temperature}",
)
def test_filter_candidates_keeps_exactly_the_tokens_transformers_keeps(protocol):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(200, 100, generator=generator) * 3
    values, token_ids = filter_candidates(logits, protocol)
    ours = torch.zeros_like(logits, dtype=torch.bool).scatter_(1, token_ids, torch.isfinite(values))
    theirs = reference_probs(logits, protocol) > 0
    assert torch.equal(ours, theirs)
    # Candidates come best first, with the temperature applied.
    kept = torch.isfinite(values)
    expected_values = torch.gather(logits / protocol.temperature, 1, token_ids)
    assert torch.allclose(values[kept], expected_values[kept])
    assert torch.all(kept[:, 0]), "the best token is always a candidate"


def test_filter_candidates_is_ordered_best_first():
    logits = torch.randn(50, 30, generator=torch.Generator().manual_seed(1))
    values, token_ids = filter_candidates(logits, SamplingProtocol(top_k=0, top_p=1.0))
    assert torch.all(values[:, :-1] >= values[:, 1:])
    assert torch.equal(token_ids[:, 0], logits.argmax(dim=-1))


def test_seeded_sampler_as_a_processor_leaves_greedy_decoding_only_its_draw():
    protocol = SamplingProtocol(top_k=3)
    keys = distinct_keys(200)
    scores = torch.randn(200, 10, generator=torch.Generator().manual_seed(2))
    sampler = SeededSampler(keys, 2, protocol)
    drawn = sampler.tokens(scores, step=1)
    processed = sampler(torch.zeros(200, 3, dtype=torch.long), scores.clone())
    assert processed.shape == scores.shape
    assert torch.equal(torch.isfinite(processed).sum(dim=-1), torch.ones(200, dtype=torch.long))
    assert torch.equal(processed.argmax(dim=-1), drawn)
    top3 = scores.topk(3, dim=-1).indices
    assert (top3 == drawn[:, None]).any(dim=-1).all(), "only top-k candidates are drawn"
    assert len(drawn.unique()) > 1


def test_seeded_sampler_copies_the_candidates_of_shared_prompts():
    """Rows that share a prompt's scores draw what they would draw from their own copy of the scores."""
    protocol = SamplingProtocol(top_k=5, top_p=0.9, temperature=0.8)
    prompt_scores = torch.randn(3, 40, generator=torch.Generator().manual_seed(4))
    copies = torch.tensor([2, 0, 0, 1, 2, 2, 1])
    sampler = SeededSampler(distinct_keys(len(copies)), 4, protocol)
    assert torch.equal(sampler.tokens(prompt_scores, 0, copies), sampler.tokens(prompt_scores[copies], 0))


def test_seeded_sampler_depends_only_on_the_key_of_each_row():
    """Each row's draw is a function of its key: reordering or regrouping rows changes nothing."""
    protocol = SamplingProtocol(top_k=0)
    keys = distinct_keys(64)
    whole = seeded_draws(LOGITS, protocol, keys)
    permutation = torch.randperm(64, generator=torch.Generator().manual_seed(3))
    assert torch.equal(seeded_draws(LOGITS, protocol, keys[permutation]), whole[permutation])
    assert torch.equal(torch.cat([seeded_draws(LOGITS, protocol, keys[i:i + 5]) for i in range(0, 64, 5)]), whole)


# --- stream_uniforms and request_seed ----------------------------------------------------

def test_stream_uniforms_are_in_the_open_unit_interval_and_uniform():
    keys = torch.tensor([0, 1, 2, 0xFFFFFFFF, 12345, request_seed(0, "x", 0)], dtype=torch.int64)
    tokens = torch.arange(50_000).expand(len(keys), -1)
    values = stream_uniforms(keys, 0, tokens)
    assert values.dtype == torch.float64
    assert values.shape == tokens.shape
    assert values.min() > 0.0 and values.max() < 1.0
    for row in values:
        assert stats.kstest(row.numpy(), "uniform").pvalue > P_MIN
    flat = values.flatten().numpy()
    assert abs(flat.mean() - 0.5) < 0.005
    assert abs(flat.var() - 1 / 12) < 0.002


def test_stream_uniforms_across_keys_and_steps_are_uniform():
    keys = torch.arange(20_000, dtype=torch.int64)
    for step in (0, 1, 7):
        values = stream_uniforms(keys, step, torch.tensor([[5]]).expand(len(keys), 1)).flatten()
        assert stats.kstest(values.numpy(), "uniform").pvalue > P_MIN


def test_stream_uniforms_are_deterministic_and_distinct():
    keys = torch.tensor([11, 12], dtype=torch.int64)
    tokens = torch.tensor([[3, 4, 5], [3, 4, 5]])
    a = stream_uniforms(keys, 2, tokens)
    assert torch.equal(a, stream_uniforms(keys, 2, tokens))
    assert not torch.equal(a[0], a[1])  # another key
    assert not torch.any(a == stream_uniforms(keys, 3, tokens))  # another step
    assert len(set(a.flatten().tolist())) == 6


def test_request_seed_is_a_32_bit_function_of_seed_prompt_and_sample():
    key = request_seed(0, "母は", 0)
    assert 0 <= key < 2**32
    assert request_seed(0, "母は", 0) == key
    assert len({key, request_seed(1, "母は", 0), request_seed(0, "父は", 0), request_seed(0, "母は", 1)}) == 4
    # The separator keeps fields apart: (seed 1, sample 12) is not (seed 11, sample 2).
    assert request_seed(1, "x", 12) != request_seed(11, "x", 2)
