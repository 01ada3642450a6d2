"""``--backend=openai`` sends prompts as the engine's token ids wherever the server takes them.

The server here answers like vLLM's: ``GET /models`` lists the model by its
folder, a prompt may be text or a list of ids, and text is tokenized with the
model's real tokenizer *with* its special tokens, so that the T5-style
SentencePiece tokenizer appends ``</s>`` (彼女は → ``[..., 1]``), as vLLM and
``transformers serve`` do.  ``text_only=True`` answers a list of ids with a 400,
as ``transformers serve`` does ("prompt must be a string.").  The completion
text names the ids the server would have fed the model, so a test sees what
the model was given.
"""

from __future__ import annotations

import json

import pytest
from http_support import FolderServer
from transformers import AutoTokenizer

from fairness_core.backends.base import Request
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.backends.token_ids import encode_prompt
from fairness_core.config.thresholds import SamplingProtocol


class TokenizingServer(FolderServer):
    """Answers the ids it would have fed the model, as JSON, and records every prompt it took."""

    def __init__(self, folder, *, text_only: bool):
        super().__init__(folder, text_only=text_only)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.prompts: list = []

    def complete(self, body: dict) -> dict:
        prompt = body["prompt"]
        self.prompts.append(prompt)
        ids = prompt if isinstance(prompt, list) else self.tokenizer(prompt)["input_ids"]
        return {"choices": [{"index": 0, "text": json.dumps(ids), "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": 1}}


def _backend(server: TokenizingServer, tmp_path) -> OpenAIBackend:
    return OpenAIBackend(ClientSettings(server.base_url, server.folder, max_retries=0, journal_dir=tmp_path / "journals"))


@pytest.mark.parametrize("kind", ["sentencepiece", "bpe"])
def test_a_server_that_takes_ids_is_fed_exactly_the_engines_ids(tiny_model_dirs, tmp_path, kind):
    folder = tiny_model_dirs[kind]
    with TokenizingServer(folder, text_only=False) as server:
        backend = _backend(server, tmp_path)
        completions = backend.generate([Request("母の夢は"), Request("彼女は", 1)], SamplingProtocol(max_new_tokens=1))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert [json.loads(c.text) for c in completions] == [encode_prompt(tokenizer, "母の夢は"),
                                                         encode_prompt(tokenizer, "彼女は")]
    assert backend.description["prompts"] == f"token ids (the in-process engine's encoding, tokenizer at {folder})"
    assert backend.fingerprint["prompts"] == backend.description["prompts"]


def test_a_text_only_server_that_appends_an_end_token_is_named_in_the_description(tiny_model_dirs, tmp_path):
    folder = tiny_model_dirs["sentencepiece"]
    with TokenizingServer(folder, text_only=True) as server:
        backend = _backend(server, tmp_path)
        completion, = backend.generate([Request("彼女は")], SamplingProtocol(max_new_tokens=1))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert json.loads(completion.text)[-1] == tokenizer.eos_token_id  # what the model was really fed
    assert server.prompts[-1] == "彼女は"
    local = len(encode_prompt(tokenizer, "こんにちは"))
    assert backend.description["prompts"] == (
        f"text (the server takes no token ids); it appends 1 token to each prompt ('こんにちは': {local + 1} tokens "
        f"there, {local} locally), which the model reads as the end of the text")


def test_a_text_only_server_whose_counts_match_is_said_to_match(tiny_model_dirs, tmp_path):
    with TokenizingServer(tiny_model_dirs["bpe"], text_only=True) as server:
        backend = _backend(server, tmp_path)
    assert backend.description["prompts"] == ("text (the server takes no token ids); its prompt token counts match "
                                              "the local encoding's")
