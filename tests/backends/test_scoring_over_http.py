"""``--backend=openai`` scores continuations against a real model served on 127.0.0.1, and gets the in-process engine's
numbers.

The server here computes what vLLM's ``/v1/completions`` answers to ``echo`` with
``logprobs`` and ``max_tokens`` 0, from a real tiny GPT-2 and its real
tokenizer: each prompt token's log-probability given the tokens before it, and
each token's character offset.  A text prompt is tokenized *with* the
tokenizer's special tokens, as vLLM does, so the T5-style SentencePiece
tokenizer appends ``</s>``; ``text_only`` refuses a list of ids with a 400, as
``transformers serve`` does, so that the client sends text and finds the
continuation by character offsets.  Either way the client's scores must be the
ones :class:`HFBackend` computes in process from the same weights.
"""

from __future__ import annotations

import pytest
import torch
from http_support import FolderServer

from fairness_core.backends.base import ScoreRequest
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.backends.token_ids import encode_continuation, encode_prompt

REQUESTS = [ScoreRequest("母は", "医者だ。"), ScoreRequest("彼女は毎朝早く起きて", "駅まで歩いて行く。"),
            ScoreRequest("先生は学生たちに", "宿題を出した。"), ScoreRequest("母は", "医者だ。"),
            ScoreRequest("雨が降ってきたので、", "傘を持って出かけた。")]


class ModelServer(FolderServer):
    """Answers ``echo`` requests with the prompt's log-probabilities from a real model, as vLLM does."""

    def __init__(self, folder, *, text_only: bool):
        super().__init__(folder, text_only=text_only)
        self.model, self.tokenizer = load_model(self.folder, device="cpu")
        self.echoed: list = []

    def echo(self, prompt: str | list[int]) -> dict:
        """vLLM's ``logprobs`` of an echoed prompt: ``None`` for the first token, then each token's log-probability."""
        ids = prompt if isinstance(prompt, list) else self.tokenizer(prompt)["input_ids"]
        with torch.no_grad():
            log_probs = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        values = [None] + [log_probs[i - 1, ids[i]].item() for i in range(1, len(ids))]
        offsets = [len(self.tokenizer.decode(ids[:i], skip_special_tokens=True)) for i in range(len(ids))]
        return {"tokens": self.tokenizer.convert_ids_to_tokens(ids), "token_logprobs": values, "text_offset": offsets}

    def complete(self, body: dict) -> dict:
        prompt = body["prompt"]
        counted = len(prompt if isinstance(prompt, list) else self.tokenizer(prompt)["input_ids"])
        choice = {"index": 0, "text": "", "finish_reason": "length"}
        if body.get("echo"):
            self.echoed.append(prompt)
            choice["logprobs"] = self.echo(prompt)
            choice["text"] = prompt if isinstance(prompt, str) else self.tokenizer.decode(prompt)
        return {"choices": [choice], "usage": {"prompt_tokens": counted, "completion_tokens": 0}}


def splits_at_the_context(tokenizer, request: ScoreRequest) -> bool:
    """Whether the whole text's tokens break where the context ends.

    Where a byte-level BPE token spans the boundary (は and the first byte of
    医 in 母は医者), the engine scores the continuation's ids as lm-eval does
    (the whole text's ids past the context's own count), while a text prompt
    gives the server the whole text's real tokens, and the continuation is the
    tokens that start inside it: the two routes then differ by that token.
    """
    context, whole = encode_prompt(tokenizer, request.context), encode_prompt(tokenizer, request.context + request.continuation)
    return whole[:len(context)] == context and tokenizer.decode(context) == request.context


def _client(server: ModelServer, tmp_path) -> OpenAIBackend:
    return OpenAIBackend(ClientSettings(server.base_url, server.folder, max_retries=0, concurrency=2,
                                        journal_dir=tmp_path / "journals"))


@pytest.mark.parametrize("text_only", [False, True], ids=["token-ids", "text"])
def test_the_client_scores_what_the_engine_scores_from_the_same_weights(tiny_model_dirs, tiny_models, kind, text_only,
                                                                        tmp_path):
    model, tokenizer = tiny_models[kind]
    expected = HFBackend(model, tokenizer).score(REQUESTS)
    with ModelServer(tiny_model_dirs[kind], text_only=text_only) as server:
        client = _client(server, tmp_path)
        scores = client.score(REQUESTS)
    compared = [i for i, r in enumerate(REQUESTS) if not text_only or splits_at_the_context(tokenizer, r)]
    assert len(compared) >= 3
    assert [scores[i] for i in compared] == pytest.approx([expected[i] for i in compared], abs=1e-4, rel=1e-5)
    assert len(server.echoed) == len(set(map(str, server.echoed))) == len(REQUESTS) - 1  # a repeated pair once
    if text_only:
        assert "母は医者だ。" in server.echoed and client.description["prompts"].startswith("text")
    else:
        assert sum(encode_continuation(tokenizer, "母は", "医者だ。"), []) in server.echoed
        assert client.description["prompts"].startswith("token ids")


def test_a_token_that_the_server_appends_is_not_scored_as_part_of_the_continuation(tiny_model_dirs, tiny_models,
                                                                                   tmp_path):
    """The SentencePiece tokenizer appends ``</s>`` to a text prompt: its log-probability is not the continuation's."""
    model, tokenizer = tiny_models["sentencepiece"]
    assert tokenizer("母は医者だ。")["input_ids"][-1] == tokenizer.eos_token_id
    with ModelServer(tiny_model_dirs["sentencepiece"], text_only=True) as server:
        score, = _client(server, tmp_path).score(REQUESTS[:1])
    assert score == pytest.approx(HFBackend(model, tokenizer).score(REQUESTS[:1])[0], abs=1e-4)
