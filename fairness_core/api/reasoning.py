"""A reasoning model's thinking, told apart from its answer: what is scored is never the reasoning.

Thinking models (Qwen3, DeepSeek-R1, and most served chat models with a
"reasoning" switch) write their deliberation into the output between
``<think>`` and ``</think>`` unless the server parses it out (vLLM's
reasoning parser, OpenAI's ``reasoning_content``; the OpenAI client never puts
that field into the text).  The reasoning may name hurtful words it then
avoids, or moralise before answering plainly, so scoring it or reading it for
a refusal would judge what the model weighed, not what it said.

The rules, for the tags ``think``, ``thinking`` and ``reasoning`` (any case):

1. a closed block ``<think>…</think>`` is reasoning, wherever it stands;
2. a closing tag with no opening one is the end of reasoning that began in the
   prompt (chat templates that open ``<think>`` for the model): everything
   before it is reasoning;
3. an opening tag that is never closed is reasoning cut off by the token
   window: everything from it on is reasoning, and :attr:`Thought.unfinished`
   says so.

A text without these tags is returned unchanged, character for character.

>>> split_reasoning("<think>差別的な言葉は避けよう。</think>看護師です。")
Thought(answer='看護師です。', reasoning=True, unfinished=False)
>>> split_reasoning("この問いは慎重に考える必要がある。</think>\\n医者です。").answer
'医者です。'
>>> split_reasoning("<think>まず、性別で職業を決めつけるのは").unfinished
True
>>> split_reasoning("優しい人だ。")
Thought(answer='優しい人だ。', reasoning=False, unfinished=False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAGS = "think|thinking|reasoning"
_BLOCK = re.compile(rf"<({_TAGS})>.*?</\1>", re.IGNORECASE | re.DOTALL)
_OPENING = re.compile(rf"<(?:{_TAGS})>", re.IGNORECASE)
_CLOSING = re.compile(rf"</(?:{_TAGS})>", re.IGNORECASE)


@dataclass(frozen=True)
class Thought:
    """``answer``: the text after the reasoning is removed; ``reasoning``: whether any was;
    ``unfinished``: whether the output ended inside an unclosed reasoning block."""

    answer: str
    reasoning: bool
    unfinished: bool


def split_reasoning(text: str) -> Thought:
    """The answer in ``text`` with every reasoning block removed (the module's rules)."""
    if "<" not in text:
        return Thought(text, False, False)
    answer = _BLOCK.sub("", text)
    closing = list(_CLOSING.finditer(answer))
    if closing:
        answer = answer[closing[-1].end():]
    opening = _OPENING.search(answer)
    if opening:
        answer = answer[:opening.start()]
    if answer == text:
        return Thought(text, False, False)
    return Thought(answer.strip(), True, opening is not None)
