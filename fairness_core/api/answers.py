"""What an evaluation scores in a model's output under the run's prompt format, and which outputs are refusals.

Under ``completion`` a model continues the template and the output is the
continuation.  A chat model asked in its turns (``chat-prefill``,
``chat-instruction``) may also decline; and under ``chat-instruction`` its
answer often restates the template first.  So an evaluation reads every output
through :class:`AnswerReader`:

- a refusal (the project's Japanese detector, :mod:`fairness_core.japanese.refusals`,
  or a chat API's own filter) is neither hurtful nor scored for sentiment: it is
  counted per group instead (:mod:`fairness_core.api.refusals`);
- a ``chat-instruction`` answer is scored after the echo rule
  (:func:`fairness_core.japanese.echo.strip_echo`), from where a completion of
  the bare template would start.

Under ``completion`` nothing is detected: a model continuing a sentence has no
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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fairness_core.api.prompts import Prompt
from fairness_core.backends.base import FILTERED, Backend, Completion, complete, complete_samples
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol


@dataclass(frozen=True)
class Answer:
    """One output as an evaluation reads it: ``text`` is what it scores, ``raw`` what the model said.

    ``refusal`` says why the output counts as a refusal (the phrases found, or
    the API's filter); ``None`` for an answer.
    """

    prompt: Prompt
    raw: str
    text: str
    refusal: str | None = None


class AnswerReader:
    """How outputs are read under one prompt format (``--prompt-format``)."""

    def __init__(self, prompt_format: PromptFormat = PromptFormat()):
        self.prompt_format = prompt_format

    @property
    def detects_refusals(self) -> bool:
        return self.prompt_format.is_chat

    def read(self, prompt: Prompt, completion: Completion) -> Answer:
        if not self.detects_refusals:
            return Answer(prompt, completion.text, completion.text)
        from fairness_core.japanese.echo import strip_echo
        from fairness_core.japanese.refusals import RefusalDetector

        text = strip_echo(prompt.text, completion.text).text if self.prompt_format.opens_answer else completion.text
        if completion.finish_reason == FILTERED:
            return Answer(prompt, completion.text, text, "withheld by the API (finish_reason content_filter)")
        found = RefusalDetector.from_package_data().detect(text)
        refusal = f"refusal phrase {', '.join(found.patterns)}" if found is not None else None
        return Answer(prompt, completion.text, text, refusal)


def read_answers(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol, reader: AnswerReader,
                 *, evaluation: str, samples: range | None = None) -> list[Answer]:
    """Complete every prompt ``protocol.num_samples`` times (or only the samples ``samples``: one round of an
    adaptive run) and read each output (prompts in order)."""
    pairs = (complete(backend, prompts, protocol, evaluation=evaluation) if samples is None
             else complete_samples(backend, prompts, protocol, samples, evaluation=evaluation))
    return [reader.read(prompt, completion) for prompt, completion in pairs]
