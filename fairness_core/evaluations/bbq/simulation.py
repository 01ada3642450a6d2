"""The BBQ evaluation's stand-in runs for the gate simulation: answers drawn per item, no model or text.

A simulated model gives each item probabilities of answering unknown, the
biased person and the other person:

* ambiguous items: unknown with ``expit(logit(unknown_rate) + u_t + e_i)``;
  otherwise the biased person with ``expit(logit((1 + s) / 2) + a_t + f_i)``,
  where ``s = answer_bias / (1 - unknown_rate)``, so that the bias score in
  ambiguous contexts is ``answer_bias`` in expectation;
* disambiguated items: unknown with ``expit(logit(disambig_unknown) + u_t + e_i)``;
  otherwise the gold person with ``expit(logit(correct + answer_bias / 2) + a_t + f_i)``
  where the gold answer is the biased one and ``expit(logit(correct - answer_bias / 2) - a_t - f_i)``
  where it is not, so that the bias score there is ``answer_bias`` in expectation
  and the accuracy gap about ``-answer_bias``.

``a_t`` (a template's lean towards the stereotype, logit sd ``template_sd``)
and ``u_t`` (its lean towards unknown, sd 0.5) are shared by a template's
items, ``e_i`` and ``f_i`` (sd ``item_sd``) are each item's own.  A fair model
has ``answer_bias`` 0: it leans one way or the other on each template and
item, by chance.  One run draws each item's answer from its probabilities: the
scorers are deterministic, but which answer wins on an item is as good as a
draw from the model's leanings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairness_core.evaluations.bbq import formulas
from fairness_core.evaluations.bbq.items import Item
from fairness_core.evaluations.bbq.scoring import LIKELIHOOD, Answer, BbqAnswers
from fairness_core.gates.simulation import Effect, expit, logit
from fairness_core.scorecard import metric_id

UNKNOWN_SD = 0.5


@dataclass(frozen=True)
class BbqEffect(Effect):
    """Answers about people moved towards the stereotype by ``answer_bias``, as a bias score."""

    answer_bias: float = 0.0


@dataclass(frozen=True)
class BbqWorld:
    """One simulated world for BBQ: how often the model says unknown, how it reads a settled context, the spreads."""

    unknown_rate: float = 0.5
    correct: float = 0.8
    disambig_unknown: float = 0.1
    template_sd: float = 0.5
    item_sd: float = 0.5


#: The reference world first: a model that says unknown to half the ambiguous questions and names the right
#: person in 80% of the settled ones; then models that rarely say unknown (0.1, the bias score's scale near its
#: largest) or nearly always (0.9), and templates that lean strongly (logit sd 1.0: a template where a fair
#: model picks the stereotyped person 73% of the time at one sd) or not at all.
GRID = (BbqWorld(), BbqWorld(unknown_rate=0.1, template_sd=1.0), BbqWorld(template_sd=0.0),
        BbqWorld(unknown_rate=0.9, template_sd=1.0), BbqWorld(unknown_rate=0.1, correct=0.6),
        BbqWorld(template_sd=1.0, item_sd=1.0))
POWER_EFFECTS = (BbqEffect("BBQ bias score 0.1", answer_bias=0.1), BbqEffect("BBQ bias score 0.2", answer_bias=0.2),
                 BbqEffect("BBQ bias score 0.3", answer_bias=0.3))


class BbqSimulator:
    """Draws :class:`~fairness_core.evaluations.bbq.scoring.BbqAnswers` for the items of one BBQ evaluation."""

    grid = GRID
    effect_type = BbqEffect
    power_effects = POWER_EFFECTS

    def __init__(self, items: Sequence[Item]):
        self.items = tuple(items)
        templates = {t: i for i, t in enumerate(dict.fromkeys(item.template_id for item in self.items))}
        self.template_of = np.array([templates[item.template_id] for item in self.items])
        self.templates = len(templates)
        self.ambiguous = np.array([item.ambiguous for item in self.items])
        self.biased_gold = np.array([not item.ambiguous and item.label == item.biased_index for item in self.items])
        # Which option each column (unknown, biased, other person) is.
        self.options = np.array([(item.unknown_index, item.biased_index,
                                  3 - item.unknown_index - item.biased_index) for item in self.items])

    def describe(self, world: BbqWorld) -> str:
        return f"bbq unknown {world.unknown_rate:.1f}, correct {world.correct:.1f}, template sd {world.template_sd:.1f}"

    def draw_model(self, world: BbqWorld, effect: BbqEffect, target: str, rng: np.random.Generator) -> np.ndarray:
        """Each item's (unknown, biased, other) probabilities; ``effect.answer_bias`` is the planted bias score."""
        n = len(self.items)
        lean = rng.normal(0, world.template_sd, self.templates)[self.template_of] + rng.normal(0, world.item_sd, n)
        unknown_lean = rng.normal(0, UNKNOWN_SD, self.templates)[self.template_of] + rng.normal(0, world.item_sd, n)
        bias = effect.answer_bias
        ambiguous_share = np.clip((1 + bias / (1 - world.unknown_rate)) / 2, 0.01, 0.99)
        unknown = np.where(self.ambiguous, expit(logit(world.unknown_rate) + unknown_lean),
                           expit(logit(world.disambig_unknown) + unknown_lean))
        gold_right = np.where(self.biased_gold, expit(logit(np.clip(world.correct + bias / 2, 0.01, 0.99)) + lean),
                              expit(logit(np.clip(world.correct - bias / 2, 0.01, 0.99)) - lean))
        biased = np.where(self.ambiguous, expit(logit(ambiguous_share) + lean),
                          np.where(self.biased_gold, gold_right, 1 - gold_right))
        return np.column_stack([unknown, (1 - unknown) * biased, (1 - unknown) * (1 - biased)])

    def sample(self, model: np.ndarray, world: BbqWorld, rng: np.random.Generator) -> BbqAnswers:
        """One run: each item's answer drawn from its probabilities."""
        column = (rng.random(len(model))[:, None] > np.cumsum(model, axis=1)).sum(axis=1).clip(max=2)
        picks = self.options[np.arange(len(model)), column]
        return BbqAnswers(tuple(Answer(item, int(pick), "", "") for item, pick in zip(self.items, picks)),
                          LIKELIHOOD)

    def truth(self, model: np.ndarray) -> dict[str, float]:
        """The model's own bias scores and accuracy gap per category: those of its expected answer counts."""
        truth = {}
        for category in dict.fromkeys(item.category for item in self.items):
            counts = np.zeros(len(formulas.COUNTS))
            for item, (unknown, biased, other) in zip(self.items, model):
                if item.category != category:
                    continue
                correct = unknown if item.ambiguous else (biased if item.label == item.biased_index else other)
                if item.ambiguous:
                    counts[[formulas.AMB_N, formulas.AMB_CORRECT, formulas.AMB_BIASED, formulas.AMB_COUNTER]] += \
                        (1, correct, biased, other)
                else:
                    counts[[formulas.DIS_N, formulas.DIS_CORRECT, formulas.DIS_BIASED, formulas.DIS_COUNTER]] += \
                        (1, correct, biased, other)
                    if item.label == item.biased_index:
                        counts[[formulas.BIASED_GOLD_N, formulas.BIASED_GOLD_CORRECT]] += (1, correct)
                    else:
                        counts[[formulas.OTHER_GOLD_N, formulas.OTHER_GOLD_CORRECT]] += (1, correct)
            found = formulas.values(counts)
            for metric in ("bias_score_ambig", "bias_score_disambig", "accuracy_gap"):
                value = found[metric]
                if value is not None:
                    truth[metric_id("bbq", metric, category=category)] = value
        return truth
