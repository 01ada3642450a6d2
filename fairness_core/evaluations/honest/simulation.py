"""HONEST's stand-in runs for the gate simulation: hurtful outcomes drawn from a hierarchical model, no model or text.

The hurtful probability of a prompt (template j, term k of group g) is

    logit p = logit(rate_g) + a_j + b_k + c_jk,   a_j ~ N(0, template_sd²), b_k ~ N(0, term_sd²),
                                                  c_jk ~ N(0, prompt_sd²)

(logit-normal heterogeneity; the template effect is shared by every group, as
a template's wording is), and the prompt's ``num_samples`` completions are
Bernoulli(p): correlated within a prompt through their shared p.  A hurtful
completion falls in one lexicon category with the shares in
:data:`CATEGORY_SHARES`.  :class:`CountedHonestCompletions` gives the same
counts and selections as :class:`~fairness_core.evaluations.honest.scoring.HonestCompletions`
(a test checks it), only without scanning every row per cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairness_core.evaluations.honest.matching import Match
from fairness_core.evaluations.honest.scoring import Count, HonestCompletions, ScoredCompletion
from fairness_core.evaluations.prompts import Prompt
from fairness_core.gates.simulation import Effect
from fairness_core.scorecard import metric_id

#: Share of hurtful completions in each category.  The project lexicon's shares of hurtful matches on the
#: planted-bias demo are of this order (pr, asf, asm each a minority, most in other categories).
CATEGORY_SHARES = {"pr": 0.15, "asf": 0.10, "asm": 0.10, "other": 0.65}


@dataclass(frozen=True)
class HonestWorld:
    """One simulated world for HONEST: the base rate and the logit-scale spreads."""

    base_rate: float
    template_sd: float
    term_sd: float = 0.3
    prompt_sd: float = 0.3


#: The reference world first.  Base hurtful rates 0.02-0.15 span the fair demo's planted 0.05 and the
#: lexicon's rates on small instruction models; template spread (logit sd) 0 to 1.0: the planted-bias demos'
#: hurtful completions spread over templates with a logit sd of about 0.5 (a template 1.6x the mean rate at
#: one sd), and 1.0 is a strong spread (a template 2.7x).
GRID = (HonestWorld(0.05, 0.5), HonestWorld(0.02, 1.0), HonestWorld(0.05, 0.0), HonestWorld(0.05, 1.0),
        HonestWorld(0.10, 0.5), HonestWorld(0.15, 1.0))
POWER_EFFECTS = (Effect("HONEST ratio 1.25", factor=1.25), Effect("HONEST ratio 1.5", factor=1.5),
                 Effect("HONEST ratio 2", factor=2.0), Effect("HONEST ratio 3", factor=3.0),
                 Effect("HONEST ratio 4.8 (seed study)", factor=4.8),
                 Effect("excess hurtful rate +0.02", excess=0.02), Effect("excess hurtful rate +0.05", excess=0.05))


@dataclass(frozen=True)
class CountedHonestCompletions(HonestCompletions):
    """:class:`HonestCompletions` that also holds per-prompt hit counts, so that ``count`` is an array sum.

    The metrics ask for a count of every group x template and group x category
    cell; scanning ~40,000 rows for each took a second per simulated run.
    """

    prompt_groups: np.ndarray      # (prompts,) group index
    prompt_templates: np.ndarray   # (prompts,) template index
    prompt_hits: np.ndarray        # (prompts, 1 + categories): any-hurtful, then per category
    samples: int
    template_index: dict[str, int]
    category_index: dict[str, int]

    def count(self, *, group: str | None = None, template_id: str | None = None,
              category: str | None = None) -> Count:
        mask = np.ones(len(self.prompt_groups), dtype=bool)
        if group is not None:
            mask &= self.prompt_groups == self.groups.index(group)
        if template_id is not None:
            mask &= self.prompt_templates == self.template_index[template_id]
        column = 0 if category is None else self.category_index.get(category)
        hits = 0 if column is None else int(self.prompt_hits[mask, column].sum())
        return Count(hits, int(mask.sum()) * self.samples)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _expit(x):
    return 1 / (1 + np.exp(-x))


class HonestSimulator:
    """Draws :class:`CountedHonestCompletions` for the prompts of one HONEST evaluation."""

    grid = GRID
    power_effects = POWER_EFFECTS

    def __init__(self, prompts: tuple[Prompt, ...], groups: tuple[str, ...], samples: int):
        self.prompts, self.groups, self.samples = prompts, groups, samples
        self.template_index = {t: i for i, t in enumerate(dict.fromkeys(p.template_id for p in prompts))}
        self.term_index = {k: i for i, k in enumerate(dict.fromkeys((p.group, p.term) for p in prompts))}
        self.categories = list(CATEGORY_SHARES)
        self.group_of = np.array([groups.index(p.group) for p in prompts])
        self.template_of = np.array([self.template_index[p.template_id] for p in prompts])
        self.term_of = np.array([self.term_index[(p.group, p.term)] for p in prompts])
        # One row object per prompt and outcome, reused across runs: rows differ only in how many of each.
        self._clean = [ScoredCompletion(p, "", ()) for p in prompts]
        self._hurtful = [[ScoredCompletion(p, "", (Match(c, c, c),)) for c in self.categories] for p in prompts]

    def describe(self, world: HonestWorld) -> str:
        return f"base {world.base_rate:.2f}, template sd {world.template_sd:.1f}"

    def draw_model(self, world: HonestWorld, effect: Effect, target: str, rng: np.random.Generator) -> np.ndarray:
        """Each prompt's hurtful probability for one simulated model, ``target``'s rate shifted by ``effect``."""
        rates = dict.fromkeys(self.groups, world.base_rate)
        rates[target] = world.base_rate * effect.factor + effect.excess
        base = _logit(np.array([rates[g] for g in self.groups]))[self.group_of]
        a = rng.normal(0, world.template_sd, len(self.template_index))[self.template_of]
        b = rng.normal(0, world.term_sd, len(self.term_index))[self.term_of]
        c = rng.normal(0, world.prompt_sd, len(self.prompts))
        return _expit(base + a + b + c)

    def sample(self, model: np.ndarray, world: HonestWorld, rng: np.random.Generator) -> CountedHonestCompletions:
        """One run of the model: each prompt's hurtful completions, split over categories."""
        hits = rng.binomial(self.samples, model)
        per_category = np.array([rng.multinomial(h, list(CATEGORY_SHARES.values())) for h in hits])
        rows: list[ScoredCompletion] = []
        for i, counts in enumerate(per_category):
            for c, n in enumerate(counts):
                rows += [self._hurtful[i][c]] * int(n)
            rows += [self._clean[i]] * int(self.samples - hits[i])
        return CountedHonestCompletions(
            tuple(rows), self.groups, prompt_groups=self.group_of, prompt_templates=self.template_of,
            prompt_hits=np.column_stack([hits, per_category]), samples=self.samples,
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
