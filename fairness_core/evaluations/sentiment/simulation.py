"""The sentiment evaluation's stand-in runs for the gate simulation: scores drawn in the shape of the scorer's.

A completion of prompt (template j, name k of group g) is positive with
probability ``clip(positive_g + a_j + b_k, 0.02, 0.98)``, a_j and b_k normal on
the probability scale.  Its score has the shape of the scorer's output: the
classifier gives Beta(9, 1) for a positive completion and Beta(1, 9) for a
negative one (mass near 1 and 0); the lexicon scorer gives exactly 0.5 with
probability :data:`LEXICON_NEUTRAL` (no sentiment word found) and otherwise
Beta(5, 1) / Beta(1, 5).  A mean gap ``d`` is planted by lowering one group's
``positive_g`` by ``d / (E[score | positive] - E[score | negative])``.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.sentiment.scoring import ScoredSentiment, SentimentCompletions
from fairness_core.gates.simulation import Effect

#: Share of completions in which the offline lexicon scorer finds no sentiment word (score exactly 0.5).
LEXICON_NEUTRAL = 0.3
SCORE_SHAPES = {"classifier": ((9.0, 1.0), (1.0, 9.0)), "lexicon": ((5.0, 1.0), (1.0, 5.0))}


@dataclass(frozen=True)
class SentimentEffect(Effect):
    """The planted group's mean sentiment score lower by ``gap``."""

    gap: float = 0.0


@dataclass(frozen=True)
class SentimentWorld:
    """One simulated world for sentiment: the positive share, the spreads (probability scale) and the scorer."""

    positive: float = 0.6
    template_sd: float = 0.05
    term_sd: float = 0.05
    scorer: Literal["classifier", "lexicon"] = "lexicon"

    def score_means(self) -> tuple[float, float]:
        (a, b), (c, d) = SCORE_SHAPES[self.scorer]
        neutral = LEXICON_NEUTRAL if self.scorer == "lexicon" else 0.0
        return ((1 - neutral) * a / (a + b) + neutral * 0.5, (1 - neutral) * c / (c + d) + neutral * 0.5)


#: The reference world first; lexicon- and classifier-shaped scores, template spreads 0 to 0.15.
GRID = (SentimentWorld(), SentimentWorld(template_sd=0.15, scorer="classifier"),
        SentimentWorld(template_sd=0.0, scorer="lexicon"), SentimentWorld(template_sd=0.15, scorer="lexicon"),
        SentimentWorld(template_sd=0.05, scorer="classifier"), SentimentWorld(template_sd=0.15, scorer="classifier"))
POWER_EFFECTS = (SentimentEffect("sentiment gap 0.05", gap=0.05), SentimentEffect("sentiment gap 0.1", gap=0.1),
                 SentimentEffect("sentiment gap 0.2", gap=0.2))


@dataclass(frozen=True)
class IndexedSentimentCompletions(SentimentCompletions):
    """:class:`SentimentCompletions` whose ``select`` looks cells up instead of scanning every row."""

    @functools.cached_property
    def _cells(self) -> dict[tuple[str | None, str | None], list[ScoredSentiment]]:
        cells: dict[tuple[str | None, str | None], list[ScoredSentiment]] = defaultdict(list)
        for row in self.rows:
            group, template_id = row.prompt.group, row.prompt.template_id
            for key in ((group, template_id), (group, None), (None, template_id), (None, None)):
                cells[key].append(row)
        return dict(cells)

    def select(self, *, group: str | None = None, template_id: str | None = None) -> list[ScoredSentiment]:
        return list(self._cells.get((group, template_id), []))


class SentimentSimulator:
    """Draws :class:`IndexedSentimentCompletions` for the prompts of one sentiment evaluation."""

    grid = GRID
    power_worlds = GRID
    effect_type = SentimentEffect
    power_effects = POWER_EFFECTS

    def __init__(self, prompts: tuple[Prompt, ...], groups: tuple[str, ...], samples: int):
        self.prompts, self.groups, self.samples = prompts, groups, samples
        self.template_index = {t: i for i, t in enumerate(dict.fromkeys(p.template_id for p in prompts))}
        self.term_index = {k: i for i, k in enumerate(dict.fromkeys((p.group, p.term) for p in prompts))}
        self.group_of = np.array([groups.index(p.group) for p in prompts])
        self.template_of = np.array([self.template_index[p.template_id] for p in prompts])
        self.term_of = np.array([self.term_index[(p.group, p.term)] for p in prompts])

    def describe(self, world: SentimentWorld) -> str:
        return f"sentiment {world.scorer}, template sd {world.template_sd:.2f}"

    def draw_model(self, world: SentimentWorld, effect: SentimentEffect, target: str, rng: np.random.Generator) -> np.ndarray:
        """Each prompt's probability of a positive completion; ``effect.gap`` lowers ``target``'s mean score by that much."""
        high, low = world.score_means()
        gaps = {target: effect.gap} if effect.gap else {}
        shift = np.array([gaps.get(g, 0.0) / (high - low) for g in self.groups])[self.group_of]
        a = rng.normal(0, world.template_sd, len(self.template_index))[self.template_of]
        b = rng.normal(0, world.term_sd, len(self.term_index))[self.term_of]
        return np.clip(world.positive - shift + a + b, 0.02, 0.98)

    def sample(self, model: np.ndarray, world: SentimentWorld, rng: np.random.Generator) -> IndexedSentimentCompletions:
        n = len(model) * self.samples
        positive = rng.random(n) < np.repeat(model, self.samples)
        (a, b), (c, d) = SCORE_SHAPES[world.scorer]
        scores = np.where(positive, rng.beta(a, b, n), rng.beta(c, d, n))
        if world.scorer == "lexicon":
            scores = np.where(rng.random(n) < LEXICON_NEUTRAL, 0.5, scores)
        prompts = np.repeat(np.arange(len(model)), self.samples)
        rows = tuple(ScoredSentiment(self.prompts[i], "", float(s)) for i, s in zip(prompts, scores))
        return IndexedSentimentCompletions(rows, self.groups)

    def truth(self, model: np.ndarray) -> dict[str, float]:
        """No rate metric of this evaluation has a model value to compare with: every failing test counts."""
        return {}
