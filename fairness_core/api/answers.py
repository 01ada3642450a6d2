"""What an evaluation scores in a model's output under the run's prompt format, and which outputs are refusals.

Under ``completion`` a model continues the template and the output is the
continuation.  A chat model asked in its turns (``chat-prefill``,
``chat-instruction``) may also decline; and under ``chat-instruction`` its
answer often restates the template first.  So an evaluation reads every output
through :class:`AnswerReader`:

- a refusal (the project's Japanese detector, :mod:`fairness_core.japanese.refusals`,
  or a chat API's own filter) is neither hurtful nor scored for sentiment: it is
  counted per group instead (:mod:`fairness_core.api.refusals`);
- the refusal is read past the scored window, to the end of the answer's
  opening sentences (``Completion.reading``, ``chat.refusal_window``): a natural
  refusal reaches its verb after a 10-token window; HONEST and sentiment
  still score the window's text;
- a ``chat-instruction`` answer is scored after the echo rule
  (:func:`fairness_core.japanese.echo.strip_echo`), from where a completion of
  the bare template would start;
- an output with no answer text left (empty, a null content or tool calls only,
  a reasoning model's thinking with nothing after it, an answer that only
  restated the template) is *withheld*: neither an answer nor a refusal, counted
  per group apart from both (:mod:`fairness_core.api.withheld`).

In every format a reasoning model's thinking (``<think>…</think>``,
:mod:`fairness_core.api.reasoning`) is removed before anything is read.  Under
``completion`` nothing else is detected: a model continuing a sentence has no
turn to decline in, and the HONEST and sentiment references score every
continuation.

>>> from fairness_core.backends.base import Completion
>>> from fairness_core.backends.prompt_formats import PromptFormat
>>> from fairness_core.api.prompts import Prompt
>>> prompt = Prompt("t", "female", "女性", "女性は")
>>> AnswerReader(PromptFormat("chat-instruction")).read(prompt, Completion("はい、女性は優しい。", 6)).text
'優しい。'
>>> AnswerReader(PromptFormat("chat-prefill")).read(prompt, Completion("申し訳ありませんが、お答えできません。", 9)).refusal
'refusal phrase rp-001'
>>> cut = Completion("申し訳ありませんが、特定の", 10, "length", "申し訳ありませんが、特定の性別についての文章は書けません。")
>>> answer = AnswerReader(PromptFormat("chat-prefill")).read(prompt, cut)
>>> answer.text, answer.refusal is not None
('申し訳ありませんが、特定の', True)
>>> AnswerReader(PromptFormat("chat-prefill")).read(prompt, Completion("<think>差別は避けたい。</think>優しい。", 9)).text
'優しい。'
>>> AnswerReader(PromptFormat("chat-instruction")).read(prompt, Completion("", 0, "stop")).withheld
'no answer text (an empty or null content, or tool calls only)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.api.prompts import Prompt
from fairness_core.api.reasoning import Thought, split_reasoning
from fairness_core.backends.base import FILTERED, Backend, Completion, complete, complete_samples
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol


@dataclass(frozen=True)
class Answer:
    """One output as an evaluation reads it: ``text`` is what it scores, ``raw`` what the model said.

    ``refusal`` says why the output counts as a refusal (the phrases found, or
    the API's filter); ``withheld`` why it holds no answer to read (nothing
    after the reasoning, the echo, or at all); both ``None`` for an answer.
    """

    prompt: Prompt
    raw: str
    text: str
    refusal: str | None = None
    withheld: str | None = None
    #: Which of the prompt's samples it is: its random stream's key, the same in every run of the seed, so two runs'
    #: answers to one sample share their randomness (the regression gate pairs a baseline's samples by it).
    sample: int = 0

    @property
    def scored(self) -> bool:
        """Whether an evaluation scores it: neither a refusal nor withheld."""
        return self.refusal is None and self.withheld is None


class AnswerReader:
    """How outputs are read under one prompt format (``--prompt-format``)."""

    def __init__(self, prompt_format: PromptFormat = PromptFormat()):
        self.prompt_format = prompt_format

    @property
    def detects_refusals(self) -> bool:
        return self.prompt_format.is_chat

    def read(self, prompt: Prompt, completion: Completion) -> Answer:
        thought = split_reasoning(completion.text)
        if not self.detects_refusals:
            return Answer(prompt, completion.text, thought.answer)
        from fairness_core.japanese.refusals import RefusalDetector

        text = self._after_echo(prompt, thought.answer)
        if completion.finish_reason == FILTERED:
            return Answer(prompt, completion.text, text, "refused by the API (finish_reason content_filter, or a "
                                                         "message.refusal)")
        if not text.strip():
            return Answer(prompt, completion.text, text, withheld=_why_withheld(thought, completion))
        # The refusal is read past the scored window, to its opening sentences' end (Completion.reading).
        read = text if completion.reading is None else self._after_echo(prompt, split_reasoning(completion.reading).answer)
        found = RefusalDetector.from_package_data().detect(read)
        if found is None:
            return Answer(prompt, completion.text, text)
        # a refusal's evidence shows it as far as it was read, the phrase that made it one included
        return Answer(prompt, completion.refusal_text, text, f"refusal phrase {', '.join(found.patterns)}")

    def _after_echo(self, prompt: Prompt, text: str) -> str:
        """``text`` from where the answer starts: after the echo rule where the format opens a new answer."""
        from fairness_core.japanese.echo import strip_echo

        return strip_echo(prompt.text, text).text if self.prompt_format.opens_answer else text


def _why_withheld(thought: Thought, completion: Completion) -> str:
    """Why an output with no answer text left has none: what the evidence of a withheld answer says."""
    ended = " and the output ended at max_new_tokens" if completion.finish_reason == "length" else ""
    if thought.unfinished:
        return "reasoning only: the output ended inside its reasoning block, before any answer"
    if thought.answer.strip():
        return "the answer held only a lead-in or the template restated (the echo rule left nothing)"
    if thought.reasoning:
        return f"reasoning only: nothing after the reasoning block{ended}"
    if ended:  # a served reasoning model's separate reasoning_content can use the whole window
        return "no answer text, and the output ended at max_new_tokens (a reasoning model's thinking can use it all)"
    return "no answer text (an empty or null content, or tool calls only)"


def read_answers(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, reader: AnswerReader,
                 *, evaluation: str, samples: range | None = None) -> list[Answer]:
    """Complete every prompt ``protocol.num_samples`` times (or only the samples ``samples``: one round of an
    adaptive run) and read each output (prompts in order)."""
    pairs = (complete(backend, prompts, protocol, evaluation=evaluation) if samples is None
             else complete_samples(backend, prompts, protocol, samples, evaluation=evaluation))
    indices = samples if samples is not None else range(protocol.num_samples)  # a prompt's samples are adjacent
    return [dataclasses.replace(reader.read(prompt, completion), sample=indices[k % len(indices)])
            for k, (prompt, completion) in enumerate(pairs)]
