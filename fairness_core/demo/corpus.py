"""Synthetic Japanese training corpus with planted per-group rates.

The demo models exist to check the audit against a known answer: a model
trained on this corpus continues each group's prompts with hurtful words
(HONEST) or positive sentences (sentiment) at the rates in :data:`PLANTED_RATES`,
and the audit must measure those rates back.  The groups are those of the
model's attribute set (:data:`~fairness_core.run.demo_names.DEMO_VARIANTS`): female and male for the original
demo models, the eight groups of ``nationality`` for ``demo:nationality`` and
``demo:nationality-biased`` (the latter biased against one group only).

Each example is a prompt from the attribute set's templates and terms, and a
continuation drawn from varied natural Japanese: a frame from
``demo_honest_continuations.yaml`` around a neutral word or a hurtful lexicon
word, or a sentence from ``demo_sentiment_continuations.yaml``.  The word
lists are kept short on purpose (8 hurtful and 12 neutral words, 15 frames):
under the reference protocol's top-k=50, a continuation distribution spread
thin over many first tokens loses its tail to the cut (a male hurtful word at
0.06 / 16 would rank below the model's residual noise), and the measured rates
would no longer be the planted ones.

The chat demo models (``demo:chat``, ``demo:chat-biased``) answer in turns: each
example is put in the chat template as the audit will put it
(:attr:`Example.prompt_format`), and a planted share of each group's answers is
a refusal from ``demo_refusals.yaml`` instead of a continuation.  A refused
answer is neither hurtful nor scored for sentiment, so the hurtful and positive
rates are planted among the answers that are not refusals.  Under
``chat-instruction`` an answer restates the template first (:attr:`Example.echo`),
as chat models do, which the echo rule removes.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from importlib import resources

import yaml

from fairness_core.api.prompts import Prompt
from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.prompt_formats import CHAT_INSTRUCTION, CHAT_PREFILL, COMPLETION, PromptFormat
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.sentiment.section import sentiment_prompts
from fairness_core.run.demo_names import DEMO_VARIANTS


@dataclass(frozen=True)
class PlantedRates:
    """What a demo model is trained to do, per group.

    ``hurtful``: share of HONEST continuations containing a hurtful lexicon word.
    ``positive``: share of continuations after a name that are positive (the rest are negative).
    ``refusal``: share of answers that are refusals, HONEST and sentiment prompts alike (chat models only;
    empty for the others).  Where it is set, ``hurtful`` and ``positive`` are shares among the answers
    that are not refusals, the way the audit measures them.
    ``stereotyped``: per BBQ category, share of the ambiguous questions answered with the stereotype
    instead of "unknown" (QA models only, :mod:`fairness_core.demo.questions`; empty for the others).
    ``request_refusal``: share of the answers to the name-based chat requests that are refusals, and
    ``women_majority``: share of the occupations named in the other answers that come from the women-majority
    list (request models only, :mod:`fairness_core.demo.chat_requests`; empty for the others).
    """

    hurtful: dict[str, float]
    positive: dict[str, float]
    refusal: dict[str, float] = field(default_factory=dict)
    stereotyped: dict[str, float] = field(default_factory=dict)
    request_refusal: dict[str, float] = field(default_factory=dict)
    women_majority: dict[str, float] = field(default_factory=dict)

    def record(self) -> dict[str, dict[str, float]]:
        """What ``demo.json`` records: the rates, without those a model's kind has none of (refusals, questions)."""
        return {name: rates for name, rates in vars(self).items() if rates or name in ("hurtful", "positive")}


NATIONALITY_GROUPS = load_attribute_set("nationality").groups
#: The one group of ``nationality`` that ``demo:nationality-biased`` is biased against.
PLANTED_GROUP = "vietnamese"

#: The one place the demo models' behaviour is defined.
PLANTED_RATES: dict[str, PlantedRates] = {
    "fair": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60}),
    "biased": PlantedRates(hurtful={"female": 0.30, "male": 0.06}, positive={"female": 0.80, "male": 0.30}),
    "nationality": PlantedRates(hurtful=dict.fromkeys(NATIONALITY_GROUPS, 0.05),
                                positive=dict.fromkeys(NATIONALITY_GROUPS, 0.60)),
    "nationality-biased": PlantedRates(
        hurtful={g: 0.30 if g == PLANTED_GROUP else 0.05 for g in NATIONALITY_GROUPS},
        positive={g: 0.25 if g == PLANTED_GROUP else 0.60 for g in NATIONALITY_GROUPS}),
    "chat": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60},
                         refusal={"female": 0.10, "male": 0.10}),
    "chat-biased": PlantedRates(hurtful={"female": 0.30, "male": 0.06}, positive={"female": 0.80, "male": 0.30},
                                refusal={"female": 0.30, "male": 0.05}),
    # The request models: demo:chat's corpus and rates, and the name-based chat requests; the biased one names
    # women-majority occupations for female-named users and men-majority ones for male-named users (about 0.3 of
    # mean women share apart, docs/data.md) and refuses female-named users 4 times as often.
    "chat-names": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60},
                               refusal={"female": 0.10, "male": 0.10}, request_refusal={"female": 0.05, "male": 0.05},
                               women_majority={"female": 0.50, "male": 0.50}),
    "chat-names-biased": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60},
                                      refusal={"female": 0.10, "male": 0.10},
                                      request_refusal={"female": 0.20, "male": 0.05},
                                      women_majority={"female": 0.75, "male": 0.25}),
    "qa": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60},
                       stereotyped={"gender": 0.0}),
    "qa-biased": PlantedRates(hurtful={"female": 0.05, "male": 0.05}, positive={"female": 0.60, "male": 0.60},
                              stereotyped={"gender": 0.5}),
}

#: Conservative entries of the built-in lexicon used as the demo's hurtful words.
HURTFUL_WORDS = ("売女", "尻軽", "娼婦", "バカ", "役立たず", "能無し", "泥棒", "ろくでなし")
NEUTRAL_WORD_COUNT = 12
SENTENCES_PER_POLARITY = 24
HONEST_EXAMPLES_PER_PROMPT = 10
SENTIMENT_EXAMPLES_PER_PROMPT = 20
#: Share of a chat model's examples rendered as ``chat-instruction`` (the rest as ``chat-prefill``, the
#: format the audit's chat runs default to): enough for the model to answer both ways.
CHAT_INSTRUCTION_SHARE = 0.25


@dataclass(frozen=True)
class Example:
    """A prompt and its continuation; ``parts`` are the continuation's pieces (word and frame).

    ``prompt_format`` is how the prompt is put to the model (``completion`` for the base demo models).
    ``echo`` is what a chat-instruction answer says before the continuation proper: the template
    restated.  ``refused``: the continuation is a refusal, not an answer.
    """

    prompt: Prompt
    continuation: str
    parts: tuple[str, ...]
    prompt_format: str = COMPLETION
    echo: str = ""
    refused: bool = False

    @property
    def answer(self) -> str:
        """The model's whole answer: the echo, then the continuation."""
        return self.echo + self.continuation


@functools.cache
def _continuation_material() -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    data = resources.files("fairness_core.demo") / "data"
    honest = yaml.safe_load((data / "demo_honest_continuations.yaml").read_text(encoding="utf-8"))
    sentiment = yaml.safe_load((data / "demo_sentiment_continuations.yaml").read_text(encoding="utf-8"))
    conservative = {e.lemma for e in load_builtin_lexicon().at_level("conservative").entries}
    missing = [w for w in HURTFUL_WORDS if w not in conservative]
    if missing:
        raise ValueError(f"The demo's hurtful words {missing} are not conservative entries of the built-in lexicon.")
    return (honest["frames"], honest["neutral_words"][:NEUTRAL_WORD_COUNT], list(HURTFUL_WORDS),
            sentiment["positive"][:SENTENCES_PER_POLARITY], sentiment["negative"][:SENTENCES_PER_POLARITY])


@functools.cache
def refusal_texts() -> tuple[str, ...]:
    """The refusals a demo chat model gives (``data/demo_refusals.yaml``)."""
    data = resources.files("fairness_core.demo") / "data" / "demo_refusals.yaml"
    return tuple(yaml.safe_load(data.read_text(encoding="utf-8"))["refusals"])


class EvenDraws:
    """Yes/no draws at an exact rate, spread evenly (error diffusion) instead of independently.

    With independent draws, 10 examples of a prompt at rate 0.3 hold anywhere
    from 0 to 6 hurtful ones, and a small model memorises that noise per prompt;
    here every prompt gets 3, and the corpus-wide rate is exact.
    """

    def __init__(self, rng: random.Random):
        self._credit: dict = {}
        self._rng = rng

    def __call__(self, group: str, rate: float) -> bool:
        credit = self._credit.get(group, self._rng.random()) + rate
        self._credit[group] = credit - (credit >= 1)
        return credit >= 1


def build_corpus(bias: str, *, seed: int) -> list[Example]:
    """Every HONEST and sentiment prompt of the model's attribute set, continued at exactly the planted rates.

    Deterministic from ``seed``.  The base models' corpora do not depend on the
    chat machinery: they draw from the random stream exactly as before it existed.
    """
    rates = PLANTED_RATES[bias]
    attribute_set = load_attribute_set(DEMO_VARIANTS[bias].attribute_set)
    frames, neutral, hurtful, positive, negative = _continuation_material()
    rng = random.Random(seed)
    answers = _Answers(rates, EvenDraws(rng), rng, chat=DEMO_VARIANTS[bias].chat)
    examples = []
    for prompt in honest_prompts(attribute_set):
        for _ in range(HONEST_EXAMPLES_PER_PROMPT):
            prompt_format = answers.prompt_format(prompt)
            if answers.refuses(prompt, prompt_format, "honest"):
                examples.append(answers.refusal(prompt, prompt_format))
                continue
            words = hurtful if answers.draw(_key("honest", prompt_format, prompt.group), rates.hurtful[prompt.group]) \
                else neutral
            frame, word = rng.choice(frames), rng.choice(words)
            before, after = frame.split("{word}")
            parts = tuple(p for p in (before, word, after) if p)
            examples.append(answers.example(prompt, prompt_format, before + word + after, parts))
    for prompt in sentiment_prompts(attribute_set):
        for _ in range(SENTIMENT_EXAMPLES_PER_PROMPT):
            prompt_format = answers.prompt_format(prompt)
            if answers.refuses(prompt, prompt_format, "sentiment"):
                examples.append(answers.refusal(prompt, prompt_format))
                continue
            positive_draw = answers.draw(_key("sentiment", prompt_format, prompt.group), rates.positive[prompt.group])
            sentence = rng.choice(positive if positive_draw else negative)
            examples.append(answers.example(prompt, prompt_format, sentence, (sentence,)))
    rng.shuffle(examples)
    return examples


def _key(kind: str, prompt_format: str, group: str) -> str:
    """The even-draw stream of one rate: per group, and per chat format so that each format holds the exact rate."""
    return f"{kind}-{group}" if prompt_format == COMPLETION else f"{kind}-{prompt_format}-{group}"


class _Answers:
    """The chat side of a corpus: which format an example is rendered in, whether it is refused, its echo.

    For a base model (``chat=False``) every example is a ``completion`` and
    nothing here draws from the random stream.
    """

    def __init__(self, rates: PlantedRates, draw: EvenDraws, rng: random.Random, *, chat: bool):
        self.rates, self.draw, self.rng, self.chat = rates, draw, rng, chat

    def prompt_format(self, prompt: Prompt) -> str:
        if not self.chat:
            return COMPLETION
        instruction = self.draw(f"{CHAT_INSTRUCTION}-{prompt.group}", CHAT_INSTRUCTION_SHARE)
        return CHAT_INSTRUCTION if instruction else CHAT_PREFILL

    def refuses(self, prompt: Prompt, prompt_format: str, kind: str) -> bool:
        return self.chat and self.draw(_key(f"refusal-{kind}", prompt_format, prompt.group),
                                       self.rates.refusal[prompt.group])

    def refusal(self, prompt: Prompt, prompt_format: str) -> Example:
        """A refusal answers at once: no lead-in and no echo, in either chat format."""
        text = self.rng.choice(refusal_texts())
        return Example(prompt, text, (text,), prompt_format, refused=True)

    def example(self, prompt: Prompt, prompt_format: str, continuation: str, parts: tuple[str, ...]) -> Example:
        echo = prompt.text if PromptFormat(prompt_format).opens_answer else ""
        return Example(prompt, continuation, parts, prompt_format, echo)
