"""The two scorers: each item's answer by option likelihood (base models) or by a generated index (chat models).

**Likelihood** (``--bbq-scorer=likelihood``; what ``auto`` takes on a backend that scores): every option is
scored as a continuation of the context and the question
(:func:`~fairness_core.evaluations.bbq.prompts.likelihood_context`),
teacher-forced, one forward pass per option, and the answer is the option with
the highest score.  No sampling: the answer depends on the model and the text
only.  The options are never listed, so their order cannot move the answer.
Options differ in length (分からない, この情報だけでは分からない, 女性社員), and a
summed log-probability favours short ones; ``normalization: per_character``
(the default) divides it by the option's length in characters, as lm-eval's
``acc_norm``; ``total`` keeps the sum, lm-eval's ``acc``.  Both are in each
answer's record.

**Generated choice** (``--bbq-scorer=generated-choice``): Nejumi's prompt
(:func:`~fairness_core.evaluations.bbq.prompts.choice_prompt`) through any
backend, one greedy answer of at most ``protocol.max_new_tokens`` tokens,
parsed as an index by Nejumi's rule; an answer that is not 0, 1 or 2 is a
format error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fairness_core.api.prompts import Prompt
from fairness_core.backends.base import (
    Backend,
    ScoreRequest,
    ScoringUnsupportedError,
    requests_for,
    score_continuations,
)
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.bbq.items import Item
from fairness_core.evaluations.bbq.prompts import choice_prompt, likelihood_context, parse_answer

#: ``--bbq-scorer``'s choices: each option's log-probability, or the index generated after Nejumi's prompt.
LIKELIHOOD, GENERATED_CHOICE = "likelihood", "generated-choice"
SCORERS = (LIKELIHOOD, GENERATED_CHOICE)


class ScorerUnavailableError(ScoringUnsupportedError):
    """The likelihood scorer was asked of a backend that cannot score."""


@dataclass(frozen=True)
class Answer:
    """One item's answer: the option picked (``None``: a format error), what was shown and what came back.

    ``completion`` is the generated text, or the picked index for the
    likelihood scorer, whose ``scores`` are each option's summed log-probability.
    """

    item: Item
    pick: int | None
    prompt: str
    completion: str
    scores: tuple[float, ...] | None = None


@dataclass(frozen=True)
class BbqAnswers:
    """Every item's answer; ``skip_reason`` says why none could be had (the items do not fit the model)."""

    answers: tuple[Answer, ...]
    scorer: str
    skip_reason: str | None = None

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.item.category for a in self.answers))

    def select(self, *, category: str | None = None, template_id: str | None = None) -> list[Answer]:
        return [a for a in self.answers if (category is None or a.item.category == category)
                and (template_id is None or a.item.template_id == template_id)]


def pick_option(scores: Sequence[float], options: Sequence[str], normalization: str) -> int:
    """The option with the highest score, per character or in total (the first on a tie).

    >>> pick_option([-4.0, -9.0, -12.0], ["女性", "この情報では不明", "分からないんです"], "total")
    0
    >>> pick_option([-4.0, -9.0, -12.0], ["女性", "この情報では不明", "分からないんです"], "per_character")
    1
    """
    values = [s / len(o) if normalization == "per_character" else s for s, o in zip(scores, options)]
    return max(range(len(values)), key=lambda i: (values[i], -i))


def by_likelihood(backend: Backend, items: Sequence[Item], normalization: str) -> BbqAnswers:
    """Each item's answer by option likelihood; items longer than the model's context window raise
    ``ContextWindowError`` (the run leaves BBQ not judged, with the reason)."""
    requests = [ScoreRequest(likelihood_context(item.context, item.question), option)
                for item in items for option in item.answers]
    try:
        scores = score_continuations(backend, requests)
    except ScoringUnsupportedError as err:
        raise ScorerUnavailableError(f"--bbq-scorer=likelihood needs a backend that scores continuations, and {err}. "
                                     f"Pass --bbq-scorer=generated-choice: it asks for the answer's index, as Nejumi "
                                     f"LLM Leaderboard does, through any backend.") from None
    answers = []
    for number, item in enumerate(items):
        own = tuple(scores[3 * number:3 * number + 3])
        pick = pick_option(own, item.answers, normalization)
        answers.append(Answer(item, pick, requests[3 * number].context, str(pick), own))
    return BbqAnswers(tuple(answers), LIKELIHOOD)


def choice_prompts(items: Sequence[Item], shots: Mapping[str, Sequence[Item]]) -> dict[str, Prompt]:
    """Each item's Nejumi prompt by item key, as a :class:`Prompt` (``<template>/<category>/<example_id>``)."""
    return {item.key: Prompt(item.template_id, item.category, str(item.example_id),
                             choice_prompt(item, shots.get(item.category, ())))
            for item in items}


def by_choice(backend: Backend, items: Sequence[Item], prompts: Mapping[str, Prompt],
              protocol: SamplingProtocol) -> BbqAnswers:
    """Each item's answer as the index it generates after its Nejumi prompt (one request per distinct prompt)."""
    distinct = list({prompts[item.key].text: prompts[item.key] for item in items}.values())
    # Questions past the model's context window raise ContextWindowError: the run leaves BBQ not judged, with the
    # reason, and the other evaluations go on (run.session.AuditSession.compute_all).
    completions = backend.generate(requests_for(distinct, protocol, evaluation="bbq"), protocol)
    text_of = {prompt.text: completion.text for prompt, completion in zip(distinct, completions, strict=True)}
    answers = []
    for item in items:
        prompt = prompts[item.key].text
        answers.append(Answer(item, parse_answer(text_of[prompt]), prompt, text_of[prompt]))
    return BbqAnswers(tuple(answers), GENERATED_CHOICE)
