"""The names evaluation's stand-in runs for the gate simulation: answers drawn per request and name, no model or text.

A simulated chat model answers every request (task ``t``) from every user
(name ``n``):

* it refuses with ``expit(logit(refusal_rate) + r_t + r_n)``, plus
  ``refusal_gap`` for the target group;
* an answer names occupations with probability ``occupation_rate`` for a
  career, study or story request (``other_occupation_rate`` else), and their
  mean share of women is ``share + s_t + s_n + e``, plus
  ``occupation_share_gap`` for the target group, clipped to [0, 1];
* its sentiment is ``sentiment + m_t + m_n + e`` clipped to [0, 1], plus
  ``sentiment_gap``; it holds a hurtful word with ``hurtful_rate``;
* its length is log-normal around ``length`` characters, times
  ``length_factor`` for the target group.

``r_t``, ``s_t``, ``m_t`` (sd ``task_sd`` on each signal's scale) are the
request's own lean, shared by every name; ``r_n``, ``s_n``, ``m_n`` (sd
``name_sd``) each name's own: a fair model answers some names differently by
chance, with nothing to do with their group.  The answers are read as a chat
run reads them (refusals counted), whatever the format of the simulated suite.

The reference world is a model that refuses 5% of requests, names occupations
in 90% of the answers that ask for them, with a mean share of women of 0.5;
the grid varies the spreads and the rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fairness_core.api.answers import Answer
from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.names.scoring import NamesCompletions, read_names
from fairness_core.evaluations.names.signals import NameAnswer
from fairness_core.gates.simulation import Effect, expit, logit
from fairness_core.scorecard import metric_id

#: The request domains whose answers name occupations.
OCCUPATION_DOMAINS = ("career", "study", "story")
ANSWER_SD = 0.2
LENGTH_SD = 0.3


@dataclass(frozen=True)
class NamesEffect(Effect):
    """Answers to the target group's names: other occupations, more refusals, other sentiment, other length."""

    occupation_share_gap: float = 0.0
    refusal_gap: float = 0.0
    sentiment_gap: float = 0.0
    length_factor: float = 1.0


@dataclass(frozen=True)
class NamesWorld:
    refusal_rate: float = 0.05
    occupation_rate: float = 0.9
    other_occupation_rate: float = 0.1
    share: float = 0.5
    sentiment: float = 0.6
    hurtful_rate: float = 0.01
    length: float = 300.0
    task_sd: float = 0.1
    name_sd: float = 0.03


GRID = (NamesWorld(), NamesWorld(refusal_rate=0.2, name_sd=0.05), NamesWorld(task_sd=0.2, name_sd=0.0),
        NamesWorld(refusal_rate=0.01, occupation_rate=0.5, hurtful_rate=0.05), NamesWorld(name_sd=0.06))
POWER_EFFECTS = (NamesEffect("an occupation-share gap of 0.10", occupation_share_gap=0.10),
                 NamesEffect("a refusal gap of 0.10", refusal_gap=0.10))


@dataclass(frozen=True)
class SimulatedMention:
    """A found occupation, as the signals read it: only its share of women matters."""

    women_share: float
    occupation: str = "simulated"
    surface: str = ""
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class NamesModel:
    """Per prompt (task, group, name, in the evaluation's order): each signal's expected value."""

    refusal: np.ndarray
    occupation: np.ndarray
    share: np.ndarray
    sentiment: np.ndarray
    length: np.ndarray


class NamesSimulator:
    """Draws :class:`~fairness_core.evaluations.names.scoring.NamesCompletions` for one names evaluation's prompts."""

    grid = GRID
    effect_type = NamesEffect
    power_effects = POWER_EFFECTS

    def __init__(self, prompts: Sequence[Prompt], domains: Mapping[str, str], people: Mapping[str, tuple[str, ...]],
                 samples: int):
        self.prompts = tuple(prompts)
        self.people = dict(people)
        self.tasks = tuple(dict.fromkeys(p.template_id for p in self.prompts))
        self.samples = samples
        task_index = {t: i for i, t in enumerate(self.tasks)}
        names = {(g, n): i for i, (g, n) in enumerate((g, n) for g, ns in people.items() for n in ns)}
        self.task_of = np.array([task_index[p.template_id] for p in self.prompts])
        self.name_of = np.array([names[(p.group, p.term)] for p in self.prompts])
        self.asks_occupations = np.array([domains[p.template_id] in OCCUPATION_DOMAINS for p in self.prompts])
        self.groups = tuple(people)

    def describe(self, world: NamesWorld) -> str:
        return (f"names refusal {world.refusal_rate:.2f}, occupations {world.occupation_rate:.1f}, task sd "
                f"{world.task_sd:.2f}, name sd {world.name_sd:.2f}")

    def draw_model(self, world: NamesWorld, effect: NamesEffect, target: str, rng: np.random.Generator) -> NamesModel:
        def lean(scale: float) -> np.ndarray:
            tasks, names = rng.normal(0, world.task_sd * scale, len(self.tasks)), rng.normal(0, world.name_sd * scale,
                                                                                              self.name_of.max() + 1)
            return tasks[self.task_of] + names[self.name_of]

        targeted = np.array([p.group == target for p in self.prompts])
        refusal = np.clip(expit(logit(world.refusal_rate) + lean(4.0)) + effect.refusal_gap * targeted, 0, 1)
        occupation = np.where(self.asks_occupations, world.occupation_rate, world.other_occupation_rate)
        share = np.clip(world.share + lean(1.0) + effect.occupation_share_gap * targeted, 0, 1)
        sentiment = np.clip(world.sentiment + lean(1.0) + effect.sentiment_gap * targeted, 0, 1)
        length = world.length * np.exp(lean(1.0)) * np.where(targeted, effect.length_factor, 1.0)
        return NamesModel(refusal, occupation, share, sentiment, length)

    def sample(self, model: NamesModel, world: NamesWorld, rng: np.random.Generator) -> NamesCompletions:
        """One run: ``samples`` answers to every prompt, each signal drawn around the model's value."""
        each = np.repeat(np.arange(len(self.prompts)), self.samples)
        count = len(each)
        refused = rng.random(count) < model.refusal[each]
        names_one = rng.random(count) < model.occupation[each]
        share = np.clip(model.share[each] + rng.normal(0, ANSWER_SD, count), 0, 1)
        sentiment = np.clip(model.sentiment[each] + rng.normal(0, ANSWER_SD, count), 0, 1)
        hurtful = rng.random(count) < world.hurtful_rate
        length = np.maximum(1, np.round(model.length[each] * np.exp(rng.normal(0, LENGTH_SD, count)))).astype(int)
        answers = []
        for k, i in enumerate(each):
            prompt = self.prompts[i]
            if refused[k]:
                read = Answer(prompt, "", "", refusal="simulated refusal")
                answers.append(NameAnswer(read, k % self.samples, True))
                continue
            text = "あ" * int(length[k])
            answers.append(NameAnswer(Answer(prompt, text, text), k % self.samples, True,
                                      occupations=(SimulatedMention(float(share[k])),) if names_one[k] else (),  # type: ignore[arg-type]
                                      hurtful=(True,) if hurtful[k] else (),  # type: ignore[arg-type]
                                      sentiment=float(sentiment[k])))
        return read_names(answers, self.people, self.tasks)

    def truth(self, model: NamesModel) -> dict[str, float]:
        """The model's own gaps (first group minus second, by its expected values; two groups only)."""
        if len(self.groups) != 2:
            return {}
        first = np.array([p.group == self.groups[0] for p in self.prompts])
        asks = self.asks_occupations

        def gap(values: np.ndarray, where: np.ndarray | None = None) -> float:
            keep = np.ones(len(values), bool) if where is None else where
            return float(values[first & keep].mean() - values[~first & keep].mean())

        return {metric_id("names", "occupation_share_gap"): gap(model.share, asks),
                metric_id("names", "refusal_gap"): gap(model.refusal),
                metric_id("names", "sentiment_gap"): gap(model.sentiment),
                metric_id("names", "length_ratio"): float(model.length[first].mean() / model.length[~first].mean())}
