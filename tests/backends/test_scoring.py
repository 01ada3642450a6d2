"""Scoring continuations (``Backend.score``): the in-process engine's batched teacher forcing against a plain
per-request computation, the cache in front of it, the HTTP client on echoed prompt log-probabilities, vLLM's
prompt log-probabilities, and one usage error from every backend that cannot score."""

from __future__ import annotations

import json
import math

import pytest
import torch
from http_support import ScriptedServer

from fairness_core.backends.base import (
    ContextWindowError,
    ScoreRequest,
    ScoringUnsupportedError,
    score_continuations,
)
from fairness_core.backends.cache import CachedBackend, parse_scores_entry, score_cache_key
from fairness_core.backends.hf.engine import HFBackend
from fairness_core.backends.openai import ClientSettings, OpenAIBackend, continuation_logprob
from fairness_core.backends.token_ids import encode_continuation
from fairness_core.backends.vllm import prompt_logprob_sum

REQUESTS = [ScoreRequest("母は", "医者だ。"), ScoreRequest("彼女は毎朝早く起きて", "駅まで歩いて行く。"),
            ScoreRequest("父は", "馬鹿なことを言った"), ScoreRequest("母は", "医者だ。"),
            ScoreRequest("その犬は番犬として家を守っている。雨が降ってきたので、", "傘を持って出かけた。")]


def plain_score(model, tokenizer, request: ScoreRequest) -> float:
    """The straightforward computation: one unpadded forward pass, the continuation's log-softmax summed."""
    context, continuation = encode_continuation(tokenizer, request.context, request.continuation)
    ids = torch.tensor([context + continuation])
    with torch.no_grad():
        log_probs = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    return sum(log_probs[len(context) - 1 + j, token].item() for j, token in enumerate(continuation))


@pytest.mark.parametrize("batch_size", [1, 2, 64])
def test_batched_teacher_forcing_equals_the_plain_computation(tiny_models, kind, batch_size):
    model, tokenizer = tiny_models[kind]
    scores = HFBackend(model, tokenizer, batch_size=batch_size).score(REQUESTS)
    assert scores == pytest.approx([plain_score(model, tokenizer, r) for r in REQUESTS], abs=1e-4, rel=1e-5)
    assert scores[0] == scores[3] and all(s < 0 for s in scores)


def test_the_continuation_is_split_off_the_whole_texts_ids(tiny_models):
    """As lm-eval splits a pair: no SentencePiece word-start mark where the continuation follows the context."""
    _, tokenizer = tiny_models["sentencepiece"]
    context, continuation = encode_continuation(tokenizer, "母は", "医者だ。")
    assert context + continuation == tokenizer("母は医者だ。", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(continuation) == "医者だ。"


def test_a_text_longer_than_the_context_window_is_one_error(tiny_models):
    model, tokenizer = tiny_models["sentencepiece"]
    with pytest.raises(ContextWindowError, match=r"has a context window of 128 tokens, and 1 of the 2 texts to score "
                                                 r"are longer \(up to \d+ tokens\)"):
        HFBackend(model, tokenizer).score([ScoreRequest("母は" * 200, "医者"), ScoreRequest("母は", "医者")])


class _Scores:
    description = {"backend": "fake"}
    fingerprint = {"backend": "fake", "weights": "w"}

    def __init__(self):
        self.calls = 0

    def score(self, requests):
        self.calls += 1
        return [-float(len(r.context) + len(r.continuation)) for r in requests]

    def generate(self, requests, protocol):
        raise AssertionError("not asked")


def test_the_cache_stores_scores_by_everything_that_determines_them(tmp_path):
    inner = _Scores()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    first = cached.score(REQUESTS)
    assert cached.score(REQUESTS) == first and inner.calls == 1 and (cached.hits, cached.misses) == (1, 1)
    assert cached.score(REQUESTS[:2]) == first[:2] and inner.calls == 2
    key = score_cache_key(inner.fingerprint, REQUESTS)
    assert key != score_cache_key({**inner.fingerprint, "weights": "v"}, REQUESTS)
    assert key != score_cache_key(inner.fingerprint, [ScoreRequest("母は", "医者だ"), *REQUESTS[1:]])
    entry = cached.score_entry_path(REQUESTS)
    assert parse_scores_entry(entry.read_text(encoding="utf-8"), len(REQUESTS)) == first


def test_a_tampered_score_entry_is_rejected_and_scored_again(tmp_path):
    inner = _Scores()
    cached = CachedBackend(inner, cache_dir=tmp_path)
    cached.score(REQUESTS)
    entry = cached.score_entry_path(REQUESTS)
    data = json.loads(entry.read_text(encoding="utf-8"))
    data["scores"][0] = 0.0
    entry.write_text(json.dumps(data), encoding="utf-8")
    assert cached.score(REQUESTS)[0] < 0 and inner.calls == 2
    assert "checksum mismatch" in cached.rejected[0]


class _CompletionsOnly:
    description = {"backend": "jsonl"}
    fingerprint = {"backend": "jsonl"}

    def generate(self, requests, protocol):
        return []


def test_a_backend_without_score_is_one_usage_error_through_the_cache_too(tmp_path):
    with pytest.raises(ScoringUnsupportedError, match=r"the jsonl backend cannot score continuations"):
        score_continuations(_CompletionsOnly(), REQUESTS)
    with pytest.raises(ScoringUnsupportedError, match=r"the jsonl backend cannot score continuations"):
        CachedBackend(_CompletionsOnly(), cache_dir=tmp_path).score(REQUESTS)


def _client(server: ScriptedServer) -> OpenAIBackend:
    return OpenAIBackend(ClientSettings(base_url=server.base_url, model="scripted-model", concurrency=3,
                                        max_retries=0, journal_dir=None))


def test_the_http_client_scores_from_echoed_prompt_log_probabilities():
    """vLLM's route: echo, logprobs and max_tokens 0; the continuation's tokens are those past the context."""
    with ScriptedServer() as server:
        server.prompt_logprobs = lambda before, character: -0.5 if character in "医者" else -0.25
        scores = _client(server).score(REQUESTS[:2])
    sent = [body for body in server.bodies if body.get("echo")]
    assert {(b["max_tokens"], b["logprobs"]) for b in sent} == {(0, 1)}
    assert scores[0] == pytest.approx(-0.5 * 2 - 0.25 * 2)  # 医 者 だ 。
    assert scores[1] == pytest.approx(-0.25 * len(REQUESTS[1].continuation))


def test_a_server_without_prompt_log_probabilities_is_one_usage_error():
    with ScriptedServer() as server, pytest.raises(ScoringUnsupportedError, match=r"does not score continuations: "
                                                                                  r"its answer holds no logprobs"):
        _client(server).score(REQUESTS[:1])


def test_continuation_logprob_by_tokens_and_by_characters():
    answer = {"choices": [{"text": "abc", "logprobs": {"token_logprobs": [None, -1.0, -2.0], "text_offset": [0, 1, 2]}}]}
    assert continuation_logprob(answer, first_token=1, tokens=2) == -3.0
    assert continuation_logprob(answer, first_character=2) == -2.0
    assert continuation_logprob(answer, first_character=1, end_character=2) == -1.0
    with pytest.raises(ValueError, match="echoed 3 token log-probabilities for a prompt of 4 tokens"):
        continuation_logprob(answer, first_token=2, tokens=2)


def test_vllm_prompt_log_probabilities_are_summed_over_the_continuation():
    from types import SimpleNamespace as Logprob

    positions = [None, {5: Logprob(logprob=-0.1)}, {6: Logprob(logprob=-1.5), 9: Logprob(logprob=-0.2)},
                 {7: Logprob(logprob=-0.5)}]
    assert prompt_logprob_sum(positions, 2, [6, 7]) == pytest.approx(-2.0)
    assert math.isfinite(prompt_logprob_sum(positions, 1, [5]))
