"""How an audit prompt is put to the model (``--prompt-format``): as text to continue, or in a chat model's turns.

``completion`` feeds the filled template as text, as the HONEST and
sentiment papers do with base models.  The two chat formats put it in the
model's chat template, the way a deployed instruction-tuned model is asked:

- ``chat-prefill``: the framing's user turn, then the template as the start of
  the assistant's answer, which the model continues (transformers' and vLLM's
  ``continue_final_message``).  The continuation is the generated text, as in
  ``completion``.
- ``chat-instruction``: the framing's user turn only, and a new assistant turn
  (``add_generation_prompt``).  The answer may open with a lead-in and restate
  the template; the evaluations read it after the echo rule
  (:mod:`fairness_core.japanese.echo`).

The framing (the user turn's text) is the protocol's (``protocol.chat.framing``,
``data/chat_framings_ja.yaml``).  Every backend renders a request here, so the
in-process engine, vLLM and a server given token ids see the same ids.

>>> PromptFormat("chat-prefill").template_flags()
{'add_generation_prompt': False, 'continue_final_message': True}
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fairness_core.backends.token_ids import adds_bos, encode_prompt
from fairness_core.config.chat_framings import PLACEHOLDER, framing_text
from fairness_core.errors import AuditUsageError

if TYPE_CHECKING:
    from fairness_core.config.thresholds import SamplingProtocol

#: ``--prompt-format``'s choices, each named once: compare a format by its :class:`PromptFormat` properties.
COMPLETION, CHAT_PREFILL, CHAT_INSTRUCTION = "completion", "chat-prefill", "chat-instruction"
PROMPT_FORMATS = (COMPLETION, CHAT_PREFILL, CHAT_INSTRUCTION)


class ChatTemplateError(AuditUsageError):
    """A chat format was asked of a model whose tokenizer has no chat template, or whose template refuses the turns."""


@dataclass(frozen=True)
class PromptFormat:
    """One of :data:`PROMPT_FORMATS`, and how a request is rendered in it."""

    name: str = COMPLETION

    @property
    def is_chat(self) -> bool:
        return self.name != COMPLETION

    @property
    def prefills_answer(self) -> bool:
        """The template is the start of the assistant's answer, which the model continues (``chat-prefill``)."""
        return self.name == CHAT_PREFILL

    @property
    def opens_answer(self) -> bool:
        """The model opens a new assistant turn, and may restate the template first (``chat-instruction``)."""
        return self.name == CHAT_INSTRUCTION

    def messages(self, prompt: str, protocol: SamplingProtocol) -> list[dict[str, str]]:
        """The chat turns of ``prompt``: the framing's user turn, and under ``chat-prefill`` the answer begun."""
        turns = [{"role": "user", "content": framing_text(protocol.chat.framing).replace(PLACEHOLDER, prompt)}]
        if self.prefills_answer:
            turns.append({"role": "assistant", "content": prompt})
        return turns

    def template_flags(self) -> dict[str, bool]:
        """The chat template's switches for this format (the same names in transformers, vLLM and llama.cpp)."""
        return {"add_generation_prompt": self.opens_answer, "continue_final_message": self.prefills_answer}

    def sampled(self, protocol: SamplingProtocol) -> SamplingProtocol:
        """``protocol`` as a backend samples it in this format: a chat answer has its own ``max_new_tokens``."""
        if not self.is_chat:
            return protocol
        return protocol.model_copy(update={"max_new_tokens": protocol.tokens_for(self.name)})

    def reading_tokens(self, protocol: SamplingProtocol) -> int:
        """The tokens a request may run to so that a refusal can be read past the window (``chat.refusal_window``);
        the window itself under ``completion``, where nothing is read as a refusal."""
        return protocol.reading_tokens(self.name) if self.is_chat else protocol.max_new_tokens

    def encode(self, tokenizer, prompt: str, protocol: SamplingProtocol) -> list[int]:
        """The token ids the model is fed: the chat template's own (its BOS included) for a chat format."""
        if not self.is_chat:
            return encode_prompt(tokenizer, prompt)
        ids = self._apply(tokenizer, prompt, protocol, tokenize=True, return_dict=False)
        return [int(i) for i in ids]

    def render(self, tokenizer, prompt: str, protocol: SamplingProtocol) -> str:
        """The rendered text, for a server that tokenizes text itself (``/v1/completions`` with a text prompt).

        The template writes its own BOS; a server that adds one too would
        double it, so a leading BOS text is left out when the tokenizer adds it.
        """
        if not self.is_chat:
            return prompt
        text = self._apply(tokenizer, prompt, protocol, tokenize=False)
        bos = tokenizer.bos_token
        return text[len(bos):] if bos and text.startswith(bos) and adds_bos(tokenizer) else text

    def chat_request(self, prompt: str, protocol: SamplingProtocol) -> dict[str, Any]:
        """The body fields of a ``/v1/chat/completions`` request (vLLM and llama.cpp read the template switches)."""
        body: dict[str, Any] = {"messages": self.messages(prompt, protocol)}
        if self.prefills_answer:
            body.update(self.template_flags())
        return body

    def identity(self, protocol: SamplingProtocol) -> str:
        """What a prompt set's hash adds under this format: the format and its framing's text (nothing for
        ``completion``, so that completion files keep their hash)."""
        return "" if not self.is_chat else f"{self.name}\n{framing_text(protocol.chat.framing)}"

    def check_tokenizer(self, tokenizer, model: str) -> None:
        """One usage error, at start-up, when the model cannot take this format."""
        if self.is_chat and not getattr(tokenizer, "chat_template", None):
            raise ChatTemplateError(
                f"--prompt-format={self.name}: --model={model} has no chat template (tokenizer.chat_template is not "
                f"set; a base model's tokenizer usually has none). Audit it with --prompt-format=completion, or give "
                f"the model its chat template (tokenizer_config.json or chat_template.jinja).")

    def fingerprint(self, tokenizer=None) -> dict[str, str]:
        """What a chat format adds to a backend's fingerprint: the format, and the chat template's hash."""
        if not self.is_chat:
            return {}
        template = getattr(tokenizer, "chat_template", None) or ""
        return {"prompt_format": self.name,
                **({"chat_template": hashlib.sha256(str(template).encode()).hexdigest()} if template else {})}

    def _apply(self, tokenizer, prompt: str, protocol: SamplingProtocol, **kwargs):
        from jinja2 import TemplateError

        try:
            return tokenizer.apply_chat_template(self.messages(prompt, protocol), **self.template_flags(), **kwargs)
        except (ValueError, TemplateError) as err:  # the template's own words (raise_exception, alternation)
            raise ChatTemplateError(f"--prompt-format={self.name}: the model's chat template refused the audit's turns "
                                    f"({type(err).__name__}: {err}).") from None
