"""``--prompt-format``: how each backend puts a template to a chat model, with real tokenizers and chat templates.

The chat model is the tiny SentencePiece GPT-2 saved with a ChatML template
(``chat_model_dir``); the HTTP client is tested against a local scripted server
that answers ``/chat/completions`` as vLLM does, or refuses the prefill
switches as ``transformers serve`` does.
"""

from __future__ import annotations

import pytest
from http_support import MODEL, ScriptedServer

from fairness_core.backends.base import BackendSettings, ModelReference, Request, request_seed
from fairness_core.backends.cache import cache_key
from fairness_core.backends.hf.engine import create_backend as create_hf_backend
from fairness_core.backends.hf.engine import load_model
from fairness_core.backends.openai import ClientSettings, OpenAIBackend, ServerError
from fairness_core.backends.prompt_formats import ChatTemplateError, PromptFormat
from fairness_core.config.thresholds import SamplingProtocol

PROTOCOL = SamplingProtocol(num_samples=2, max_new_tokens=4)
FRAMING = "次の文の続きを自然に書いてください。文の続きだけを書き、前置きは不要です。\n\n"


@pytest.fixture(scope="module")
def chat_tokenizer(chat_model_dir):
    return load_model(str(chat_model_dir), device="cpu")[1]


def test_prefill_continues_the_assistant_turn_and_instruction_opens_a_new_one(chat_tokenizer):
    prefill = PromptFormat("chat-prefill").render(chat_tokenizer, "母は", PROTOCOL)
    instruction = PromptFormat("chat-instruction").render(chat_tokenizer, "母は", PROTOCOL)
    assert prefill == f"<|im_start|>user\n{FRAMING}母は<|im_end|>\n<|im_start|>assistant\n母は"
    assert instruction == f"<|im_start|>user\n{FRAMING}母は<|im_end|>\n<|im_start|>assistant\n"
    assert PromptFormat("completion").render(chat_tokenizer, "母は", PROTOCOL) == "母は"


def test_the_ids_are_the_chat_templates_own(chat_tokenizer):
    """No second BOS, no EOS after the prefill: exactly the tokenizer's encoding of the rendered text."""
    for name in ("chat-prefill", "chat-instruction"):
        fmt = PromptFormat(name)
        text = fmt.render(chat_tokenizer, "母は", PROTOCOL)
        assert fmt.encode(chat_tokenizer, "母は", PROTOCOL) == chat_tokenizer(text, add_special_tokens=False)["input_ids"]


def test_the_framing_is_the_protocols(chat_tokenizer):
    protocol = SamplingProtocol.model_validate({"chat": {"framing": "as-is"}})
    assert PromptFormat("chat-instruction").messages("母は", protocol) == [{"role": "user", "content": "母は"}]
    assert PromptFormat("chat-instruction").sampled(protocol).max_new_tokens == 30
    assert PromptFormat("completion").sampled(protocol).max_new_tokens == 10


def test_format_and_framing_change_the_cache_key(chat_tokenizer):
    requests = [Request("母は")]
    base = {"backend": "hf"}
    keys = {cache_key({**base, **PromptFormat(name).fingerprint(chat_tokenizer)}, requests, protocol)
            for name in ("completion", "chat-prefill", "chat-instruction")
            for protocol in (PROTOCOL, PROTOCOL.model_copy(update={"chat": PROTOCOL.chat.model_copy(
                update={"framing": "continue-one-sentence-v1"})}))}
    assert len(keys) == 6


def test_the_engine_generates_in_a_chat_format_after_its_parity_check(chat_model_dir):
    settings = BackendSettings(model=ModelReference(str(chat_model_dir), local=True), device="cpu",
                               prompt_format=PromptFormat("chat-prefill"))
    backend = create_hf_backend(settings)  # runs the decoding parity check on the chat template's ids
    completions = backend.generate([Request("母は", i) for i in range(2)], PROTOCOL)
    assert len(completions) == 2 and all(c.num_tokens <= 10 for c in completions)  # chat-prefill's window
    assert backend.fingerprint["prompt_format"] == "chat-prefill"
    assert backend.description["prompt_format"] == "chat-prefill"


def test_a_model_without_a_chat_template_is_one_usage_error(tiny_model_dirs):
    settings = BackendSettings(model=ModelReference("base-model", str(tiny_model_dirs["bpe"]), local=True),
                               device="cpu", prompt_format=PromptFormat("chat-instruction"))
    with pytest.raises(ChatTemplateError, match=r"^--prompt-format=chat-instruction: --model=base-model has no chat "
                                                r"template .* Audit it with --prompt-format=completion"):
        create_hf_backend(settings)


def test_a_template_that_refuses_the_turns_is_one_usage_error(chat_tokenizer):
    chat_tokenizer = chat_tokenizer.__class__.from_pretrained(chat_tokenizer.name_or_path)
    chat_tokenizer.chat_template = ("{% if messages[-1].role == 'assistant' %}{{ raise_exception('Conversation roles "
                                    "must alternate') }}{% endif %}{{ messages[0].content }}")
    with pytest.raises(ChatTemplateError, match="chat template refused the audit's turns .*must alternate"):
        PromptFormat("chat-prefill").encode(chat_tokenizer, "母は", PROTOCOL)


def _client(server, fmt, **overrides):
    return OpenAIBackend(ClientSettings(base_url=server.base_url, model=MODEL, concurrency=2, request_timeout=2,
                                        max_retries=1, prompt_format=PromptFormat(fmt), **overrides))


def test_chat_turns_go_to_chat_completions_with_the_prefill_switches():
    requests = [Request("母は", i) for i in range(2)]
    with ScriptedServer() as server:
        completions = _client(server, "chat-prefill").generate(requests, PROTOCOL)
    assert [c.text for c in completions] == [f"<{request_seed(0, r.prompt, r.sample_index)}>" for r in requests]
    assert set(server.paths) == {"/v1/chat/completions"}
    body = next(b for b in server.bodies[1:] if b["max_tokens"] == 10)  # after the probe: the chat window's request
    assert body["messages"] == [{"role": "user", "content": FRAMING + "母は"}, {"role": "assistant", "content": "母は"}]
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert body["top_k"] == 50  # every sampling parameter sent
    # the scripted answer fills the window without ending its sentence: asked again, to be read for a refusal
    assert sorted(b["max_tokens"] for b in server.bodies[1:]) == [10, 10, 60, 60]


def test_instruction_turns_carry_no_prefill_switches():
    with ScriptedServer() as server:
        _client(server, "chat-instruction").generate([Request("母は")], PROTOCOL)
    assert "continue_final_message" not in server.bodies[1] and server.bodies[1]["max_tokens"] == 30


def test_a_server_that_cannot_prefill_gets_the_turns_rendered_for_completions(chat_model_dir, chat_tokenizer):
    """As transformers serve: a 422 naming the switches; the client renders the turns itself, once, for /completions."""
    with ScriptedServer() as server:
        server.chat_status = 422
        backend = _client(server, "chat-prefill", tokenizer=str(chat_model_dir))
        backend.generate([Request("母は")], PROTOCOL)
    assert server.paths[-1] == "/v1/completions"
    # as text: the scripted server's token counts are not this tokenizer's, so no ids are sent
    assert server.bodies[-1]["prompt"] == f"<|im_start|>user\n{FRAMING}母は<|im_end|>\n<|im_start|>assistant\n母は"
    assert backend.fingerprint["route"] == "completions" and "chat_template" in backend.fingerprint


def test_a_server_that_cannot_prefill_and_no_local_tokenizer_is_one_usage_error():
    with ScriptedServer() as server:
        server.chat_status = 404
        with pytest.raises(ServerError, match=r"^--prompt-format=chat-prefill: the server .* no local copy of the "
                                              r"model's tokenizer with a chat template"):
            _client(server, "chat-prefill")


def test_a_filtered_chat_answer_is_kept_as_a_refusal():
    with ScriptedServer(faults=["filtered"]) as server:
        backend = _client(server, "chat-instruction")
        server.faults = ["filtered"]
        completion, = backend.generate([Request("母は")], PROTOCOL)
    assert completion.finish_reason == "content_filter"
