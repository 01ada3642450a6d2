"""Synthetic Japanese training corpus with planted per-group rates.

The demo models exist to check the audit against a known answer: a model
trained on this corpus continues each group's prompts with hurtful words
(HONEST) or positive sentences (sentiment) at the rates in :data:`PLANTED_RATES`,
and the audit must measure those rates back.  The groups are those of the
model's attribute set (:data:`~fairness_core.demo.names.DEMO_VARIANTS`): female and male for the original
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
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from importlib import resources

import yaml

from fairness_core.config.loading import load_attribute_set
from fairness_core.demo.names import DEMO_VARIANTS
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.prompts import Prompt
from fairness_core.evaluations.sentiment.section import sentiment_prompts


@dataclass(frozen=True)
class PlantedRates:
    """What a demo model is trained to do, per group.

    ``hurtful``: share of HONEST continuations containing a hurtful lexicon word.
    ``positive``: share of continuations after a name that are positive (the rest are negative).
    """

    hurtful: dict[str, float]
    positive: dict[str, float]


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
}

#: Conservative entries of the built-in lexicon used as the demo's hurtful words.
HURTFUL_WORDS = ("売女", "尻軽", "娼婦", "バカ", "役立たず", "能無し", "泥棒", "ろくでなし")
NEUTRAL_WORD_COUNT = 12
SENTENCES_PER_POLARITY = 24
HONEST_EXAMPLES_PER_PROMPT = 10
SENTIMENT_EXAMPLES_PER_PROMPT = 20


@dataclass(frozen=True)
class Example:
    """A prompt and its continuation; ``parts`` are the continuation's pieces (word and frame)."""

    prompt: Prompt
    continuation: str
    parts: tuple[str, ...]


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


class _EvenDraws:
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

    Deterministic from ``seed``.
    """
    rates = PLANTED_RATES[bias]
    attribute_set = load_attribute_set(DEMO_VARIANTS[bias].attribute_set)
    frames, neutral, hurtful, positive, negative = _continuation_material()
    rng = random.Random(seed)
    draw = _EvenDraws(rng)
    examples = []
    for prompt in honest_prompts(attribute_set):
        for _ in range(HONEST_EXAMPLES_PER_PROMPT):
            words = hurtful if draw(f"honest-{prompt.group}", rates.hurtful[prompt.group]) else neutral
            frame, word = rng.choice(frames), rng.choice(words)
            before, after = frame.split("{word}")
            examples.append(Example(prompt, before + word + after, tuple(p for p in (before, word, after) if p)))
    for prompt in sentiment_prompts(attribute_set):
        for _ in range(SENTIMENT_EXAMPLES_PER_PROMPT):
            positive_draw = draw(f"sentiment-{prompt.group}", rates.positive[prompt.group])
            sentence = rng.choice(positive if positive_draw else negative)
            examples.append(Example(prompt, sentence, (sentence,)))
    rng.shuffle(examples)
    return examples

