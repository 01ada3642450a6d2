"""The gate simulation's shared terms: a planted effect, and what each evaluation's simulator provides.

The deploy gate's error rates are measured on simulated runs
(``benchmarks/operating_characteristics.py``): each evaluation draws stand-in
scored completions for its own prompts from a simulated model
(:meth:`fairness_core.api.evaluation.Evaluation.simulator`), and the
evaluation's own metric code and the scorecard's decision rules judge them
exactly as they judge a real run.

What an effect moves is each simulator's own: it declares its effect type, a
subclass of :class:`Effect` whose fields' defaults plant nothing, so that
``effect_type(label)`` is its fair model and one evaluation's effect is never
read by another's simulator.

>>> @dataclass(frozen=True)
... class RateEffect(Effect):
...     factor: float = 1.0
>>> RateEffect(FAIR.label).factor, RateEffect("one group twice as hurtful", factor=2.0).factor
(1.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Effect:
    """A bias planted against one group, by the name the tables give it; a simulator's own subclass says what it
    moves (a rate, a score, an answer)."""

    label: str


#: No bias planted: no simulator's effect type, so every simulator draws its fair model.
FAIR = Effect("fair")


def own_effect(simulator: Simulator, effects: Sequence[Effect]) -> Effect:
    """The one of ``effects`` that ``simulator`` plants (of its ``effect_type``), else its fair model's."""
    return next((effect for effect in effects if isinstance(effect, simulator.effect_type)),
                simulator.effect_type(FAIR.label))


def logit(p):
    """Log-odds of a probability (or an array of them): simulated models lean on this scale."""
    return np.log(p) - np.log1p(-p)


def expit(x):
    """The probability of log-odds ``x``, :func:`logit`'s inverse."""
    return 1 / (1 + np.exp(-x))


class Simulator(Protocol):
    """Stand-in runs of one evaluation's prompts: no model, no generation."""

    #: The simulated worlds (base rates, spreads, scorer shapes); the first is the reference.
    grid: Sequence[Any]
    #: The worlds at which the power curve is measured (``--power-everywhere``; by default the reference only).
    power_worlds: Sequence[Any]
    #: Its own kind of effect: a subclass of :class:`Effect` whose fields' defaults plant nothing.
    effect_type: type[Effect]
    #: The effects of this evaluation's power curve (of its ``effect_type``).
    power_effects: Sequence[Effect]

    def draw_model(self, world: Any, effect: Any, target: str, rng: Any) -> Any:
        """One simulated model: each prompt's probabilities, with ``effect`` (of its ``effect_type``) planted against
        group ``target``."""
        ...

    def sample(self, model: Any, world: Any, rng: Any) -> Any:
        """One run of ``model``: scored completions the evaluation's ``metrics`` take."""
        ...

    # An evaluation with a sequential test (``--sampling=adaptive``) has its simulator draw rounds too:
    # ``sample_rounds(model, world, rng, samples_per_round) -> list`` of what its ``merge`` takes, the fixed
    # protocol's run being all of them.

    def truth(self, model: Any) -> dict[str, float]:
        """The model's own value of each rate metric, by metric id (a test past its limit in truth is no false alarm)."""
        ...

    def describe(self, world: Any) -> str:
        ...
