"""HONEST's stand-in runs for the gate simulation: hurtful outcomes drawn from a hierarchical model, no model or text.

The hurtful probability of a prompt (template j, term k of group g) is

    logit p = logit(rate_g) + a_j + b_k + c_jk,   a_j ~ N(0, template_sd²), b_k ~ N(0, term_sd²),
                                                  c_jk ~ N(0, prompt_sd²)

(logit-normal heterogeneity; the template effect is shared by every group, as
a template's wording is), and the prompt's ``num_samples`` completions are
Bernoulli(p): correlated within a prompt through their shared p.  They are
drawn as rounds of one sample of every prompt, as ``--sampling=adaptive`` asks
for them: the fixed protocol's run is all its rounds, an adaptive run the
rounds up to its stop, so both are judged on the same draws.  A hurtful
completion falls in one lexicon category with the shares in
:data:`CATEGORY_SHARES`.  :class:`CountedHonestCompletions` gives the same
counts and selections as :class:`~fairness_core.evaluations.honest.scoring.HonestCompletions`
(a test checks it), only without scanning every row per cell.

A planted HONEST ratio ``r`` makes the target group's expected hurtful rate
``r`` times a fair group's, on the rate scale that the HONEST ratio measures:
its logit is shifted by whatever does that for the world's spread of effects
(:func:`logit_shift`).  Multiplying the base rate before the logit would
plant less than ``r`` where the effects spread widely (1.76 for "2" at base
0.02 and template sd 1.5).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.honest.matching import Match
from fairness_core.evaluations.honest.scoring import Count, HonestCompletions, ScoredCompletion
from fairness_core.gates.simulation import Effect, expit, logit
from fairness_core.scorecard import metric_id

#: Share of hurtful completions in each category.  The project lexicon's shares of hurtful matches on the
#: planted-bias demo are of this order (pr, asf, asm each a minority, most in other categories).
CATEGORY_SHARES = {"pr": 0.15, "asf": 0.10, "asm": 0.10, "other": 0.65}


@dataclass(frozen=True)
class HonestEffect(Effect):
    """The planted group's hurtful rate times ``factor`` (the HONEST ratio), or else plus ``excess``."""

    factor: float = 1.0
    excess: float = 0.0


@dataclass(frozen=True)
class HonestWorld:
    """One simulated world for HONEST: the base rate and the logit-scale spreads."""

    base_rate: float
    template_sd: float
    term_sd: float = 0.3
    prompt_sd: float = 0.3


#: Base hurtful rates from a lexicon that rarely fires on a careful model (0.002) to one that often insults
#: (0.2); the fair demo's planted 0.05 is the reference.  Template spread (logit sd) 0 to 1.5: the planted-bias
#: demos' hurtful completions spread over templates with a logit sd of about 0.5 (a template 1.6x the mean rate
#: at one sd), 1.0 is strong (2.7x) and 1.5 very strong (4.5x).  The reference world first.
BASE_RATES = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
TEMPLATE_SDS = (0.0, 0.5, 1.0, 1.5)
REFERENCE = HonestWorld(0.05, 0.5)
GRID = (REFERENCE, *(HonestWorld(b, t) for b in BASE_RATES for t in TEMPLATE_SDS if HonestWorld(b, t) != REFERENCE))
#: Where the power curve is measured: every template spread at the base rates from 0.02 up (below that, ``plan``
#: says what the counts can detect).
POWER_WORLDS = tuple(world for world in GRID if world.base_rate >= 0.02)
POWER_EFFECTS = (HonestEffect("HONEST ratio 1.25", factor=1.25), HonestEffect("HONEST ratio 1.5", factor=1.5),
                 HonestEffect("HONEST ratio 2", factor=2.0), HonestEffect("HONEST ratio 3", factor=3.0),
                 HonestEffect("HONEST ratio 4.8 (seed study)", factor=4.8),
                 HonestEffect("excess hurtful rate +0.02", excess=0.02),
                 HonestEffect("excess hurtful rate +0.05", excess=0.05))

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(61)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _mean_rate(log_odds: float, sd: float) -> float:
    """E[expit(log_odds + sd Z)], Z standard normal (Gauss-Hermite)."""
    return float(np.sum(_WEIGHTS * expit(log_odds + sd * _NODES)))


@functools.cache
def logit_shift(base_rate: float, sd: float, factor: float) -> float:
    """The logit shift that makes a group's expected rate ``factor`` times that of a group at ``base_rate``.

    ``sd``: the logit sd of all effects together.  A factor the rate scale cannot
    reach (``factor`` x the mean above 1) gets the largest shift tried, 20.

    >>> round(logit_shift(0.05, 0.0, 2.0), 4) == round(math.log(0.1 / 0.9) - math.log(0.05 / 0.95), 4)
    True
    """
    if factor == 1.0:
        return 0.0
    start = math.log(base_rate) - math.log1p(-base_rate)
    wanted = factor * _mean_rate(start, sd)
    if wanted >= _mean_rate(start + 20, sd):
        return 20.0
    return float(brentq(lambda shift: _mean_rate(start + shift, sd) - wanted, -20, 20, xtol=1e-10))


@dataclass(frozen=True)
class CountedHonestCompletions(HonestCompletions):
    """:class:`HonestCompletions` that also holds per-prompt hit counts, so that ``count`` is an array sum.

    The metrics ask for a count of every group x template and group x category
    cell; scanning ~40,000 rows for each took a second per simulated run.
    """

    prompt_groups: np.ndarray      # (prompts,) group index
    prompt_templates: np.ndarray   # (prompts,) template index
    prompt_terms: np.ndarray       # (prompts,) term index within its group
    prompt_hits: np.ndarray        # (prompts, 1 + categories): any-hurtful, then per category
    samples: int
    template_index: dict[str, int]
    category_index: dict[str, int]

    @functools.cached_property
    def _cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Hits per (group, template, column) and prompts per (group, template), summed once."""
        shape = (len(self.groups), len(self.template_index))
        hits = np.zeros((*shape, self.prompt_hits.shape[1]))
        np.add.at(hits, (self.prompt_groups, self.prompt_templates), self.prompt_hits)
        prompts = np.zeros(shape)
        np.add.at(prompts, (self.prompt_groups, self.prompt_templates), 1)
        return hits, prompts

    def count(self, *, group: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        hits, prompts = self._cell_counts
        where = (slice(None) if group is None else self.groups.index(group),
                 slice(None) if template_id is None else self.template_index[template_id])
        column = 0 if category is None else self.category_index.get(category)
        found = 0 if column is None else int(hits[where][..., column].sum())
        return Count(found, int(prompts[where].sum()) * self.samples)

    def template_ids(self) -> list[str]:
        return list(self.template_index)

    def unit_counts(self, group: str, *, by: str = "prompt") -> list[tuple[int, int]]:
        mask = self.prompt_groups == self.groups.index(group)
        hits = self.prompt_hits[mask, 0]
        if by == "prompt":
            return [(h, self.samples) for h in hits.astype(int).tolist()]
        terms = self.prompt_terms[mask]
        per_term = np.bincount(terms, weights=hits)
        sizes = np.bincount(terms) * self.samples
        return [(int(h), int(n)) for h, n in zip(per_term, sizes) if n]


@dataclass(frozen=True)
class HonestRound:
    """The completions of some rounds of a simulated run: each sample's outcome for each prompt.

    ``outcomes[s, i]`` is sample s of prompt i as (any hurtful, then one flag per
    category of :data:`CATEGORY_SHARES`); the sequential test reads it as it
    reads a real round, and :meth:`merged` makes the rounds up to a stop one
    :class:`CountedHonestCompletions`.
    """

    simulator: HonestSimulator
    outcomes: np.ndarray

    def outcome_flags(self, categories: Sequence[str]) -> np.ndarray:
        """``(samples, prompts, 1 + len(categories))``: hurtful at all, then hurtful in each of ``categories``."""
        columns = [0, *(1 + self.simulator.categories.index(c) if c in self.simulator.categories else -1
                        for c in categories)]
        flags = self.outcomes[:, :, [max(c, 0) for c in columns]]
        flags[:, :, [i for i, c in enumerate(columns) if c < 0]] = False
        return flags

    @staticmethod
    def merged(parts: Sequence[HonestRound]) -> CountedHonestCompletions:
        return parts[0].simulator.counted(np.concatenate([p.outcomes for p in parts]))


class _Rows(Sequence[ScoredCompletion]):
    """The rows of a simulated run, made on first use: the metrics read counts, only evidence and records read rows."""

    def __init__(self, simulator: HonestSimulator, hits: np.ndarray, samples: int):
        self.simulator, self.hits, self.samples = simulator, hits, samples

    @functools.cached_property
    def _made(self) -> tuple[ScoredCompletion, ...]:
        rows: list[ScoredCompletion] = []
        for i, counts in enumerate(self.hits[:, 1:]):
            for c, n in enumerate(counts):
                rows += [self.simulator._hurtful[i][c]] * int(n)
            rows += [self.simulator._clean[i]] * int(self.samples - self.hits[i, 0])
        return tuple(rows)

    def __len__(self) -> int:
        return len(self.hits) * self.samples

    def __getitem__(self, index):  # type: ignore[override]
        return self._made[index]

    def __iter__(self):
        return iter(self._made)


class HonestSimulator:
    """Draws :class:`CountedHonestCompletions` for the prompts of one HONEST evaluation."""

    grid = GRID
    power_worlds = POWER_WORLDS
    effect_type = HonestEffect
    power_effects = POWER_EFFECTS

    def __init__(self, prompts: tuple[Prompt, ...], groups: tuple[str, ...], samples: int):
        self.prompts, self.groups, self.samples = prompts, groups, samples
        self.template_index = {t: i for i, t in enumerate(dict.fromkeys(p.template_id for p in prompts))}
        self.term_index = {k: i for i, k in enumerate(dict.fromkeys((p.group, p.term) for p in prompts))}
        self.categories = list(CATEGORY_SHARES)
        self.group_of = np.array([groups.index(p.group) for p in prompts])
        self.template_of = np.array([self.template_index[p.template_id] for p in prompts])
        self.term_of = np.array([self.term_index[(p.group, p.term)] for p in prompts])
        group_terms: dict[str, dict[str, int]] = {g: {} for g in groups}
        for p in prompts:
            group_terms[p.group].setdefault(p.term, len(group_terms[p.group]))
        self.term_in_group = np.array([group_terms[p.group][p.term] for p in prompts])
        self._cumulative_shares = np.cumsum(list(CATEGORY_SHARES.values()))
        # One row object per prompt and outcome, reused across runs: rows differ only in how many of each.
        self._clean = [ScoredCompletion(p, "", ()) for p in prompts]
        self._hurtful = [[ScoredCompletion(p, "", (Match(c, c, c),)) for c in self.categories] for p in prompts]

    def describe(self, world: HonestWorld) -> str:
        return f"base {world.base_rate:g}, template sd {world.template_sd:.1f}"

    def draw_model(self, world: HonestWorld, effect: HonestEffect, target: str, rng: np.random.Generator) -> np.ndarray:
        """Each prompt's hurtful probability for one simulated model, ``target``'s rate shifted by ``effect``."""
        sd = math.sqrt(world.template_sd ** 2 + world.term_sd ** 2 + world.prompt_sd ** 2)
        start = logit(world.base_rate)
        logits = {g: start for g in self.groups}
        logits[target] = start + logit_shift(world.base_rate, sd, effect.factor) if effect.factor != 1.0 else (
            logit(world.base_rate + effect.excess))
        base = np.array([logits[g] for g in self.groups])[self.group_of]
        a = rng.normal(0, world.template_sd, len(self.template_index))[self.template_of]
        b = rng.normal(0, world.term_sd, len(self.term_index))[self.term_of]
        c = rng.normal(0, world.prompt_sd, len(self.prompts))
        return expit(base + a + b + c)

    def sample_rounds(self, model: np.ndarray, world: HonestWorld, rng: np.random.Generator,
                      samples_per_round: int = 1) -> list[HonestRound]:
        """One run of the model as its rounds, each ``samples_per_round`` samples of every prompt."""
        hurtful = rng.random((self.samples, len(model))) < model
        category = np.searchsorted(self._cumulative_shares, rng.random((self.samples, len(model))), side="right")
        category = np.minimum(category, len(self.categories) - 1)
        outcomes = np.zeros((self.samples, len(model), 1 + len(self.categories)), dtype=bool)
        outcomes[:, :, 0] = hurtful
        for c in range(len(self.categories)):
            outcomes[:, :, 1 + c] = hurtful & (category == c)
        return [HonestRound(self, outcomes[start:start + samples_per_round])
                for start in range(0, self.samples, samples_per_round)]

    def sample(self, model: np.ndarray, world: HonestWorld, rng: np.random.Generator) -> CountedHonestCompletions:
        """One run of the model at the fixed protocol: all its rounds."""
        return HonestRound.merged(self.sample_rounds(model, world, rng))

    def counted(self, outcomes: np.ndarray) -> CountedHonestCompletions:
        """The results of ``outcomes`` (samples, prompts, 1 + categories), their rows made when first read."""
        hits = outcomes.sum(axis=0)
        return CountedHonestCompletions(
            _Rows(self, hits, len(outcomes)), self.groups, prompt_groups=self.group_of, prompt_templates=self.template_of,
            prompt_terms=self.term_in_group, prompt_hits=hits, samples=len(outcomes),
            template_index=self.template_index, category_index={c: i + 1 for i, c in enumerate(self.categories)})

    def truth(self, model: np.ndarray) -> dict[str, float]:
        """The model's own value of each rate metric (its expected rate), by metric id."""
        truth = {}
        for gi, group in enumerate(self.groups):
            in_group = self.group_of == gi
            rate = float(model[in_group].mean())
            truth[metric_id("honest", "honest_score", group=group)] = rate
            for category, share in CATEGORY_SHARES.items():
                truth[metric_id("honest", "category_score", category=category, group=group)] = rate * share
            for template_id, ti in self.template_index.items():
                cell = in_group & (self.template_of == ti)
                truth[metric_id("honest", "honest_score", template=template_id, group=group)] = float(model[cell].mean())
        return truth
