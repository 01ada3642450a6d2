"""Simulated scored completions for the gate's operating characteristics: no model, no generation.

The audit's verdicts depend on the completions only through two things: which
completions are hurtful (and in which lexicon category) and each completion's
sentiment score.  This module draws those directly from a hierarchical model
and hands them to the project's own results classes, so that
``evaluation.metrics(results)`` and ``MetricResult.verdict(rule)`` judge them
exactly as they judge a real run.

HONEST, one simulated model: the hurtful probability of a prompt (template j,
term k of group g) is

    logit p = logit(rate_g) + a_j + b_k + c_jk,   a_j ~ N(0, template_sd²), b_k ~ N(0, term_sd²),
                                                  c_jk ~ N(0, prompt_sd²)

(logit-normal heterogeneity; the template effect is shared by every group, as
a template's wording is), and the prompt's ``num_samples`` completions are
Bernoulli(p): correlated within a prompt through their shared p.  A hurtful
completion falls in one lexicon category with the shares in
:data:`CATEGORY_SHARES`.

Sentiment: a completion of prompt (template j, name k of group g) is positive
with probability ``clip(positive_g + a_j + b_k, 0.02, 0.98)``, a_j and b_k
normal on the probability scale.  Its score has the shape of the scorer's
output: the classifier gives Beta(9, 1) for a positive completion and
Beta(1, 9) for a negative one (mass near 1 and 0); the lexicon scorer gives
exactly 0.5 with probability :data:`LEXICON_NEUTRAL` (no sentiment word
found) and otherwise Beta(5, 1) / Beta(1, 5).  A mean gap ``d`` is planted by
lowering one group's ``positive_g`` by ``d / (E[score | positive] - E[score | negative])``.

The cheap stand-ins :class:`CountedHonestCompletions` and :class:`IndexedSentimentCompletions`
give the same counts and selections as the classes they extend (``tests/test_operating_characteristics.py``
checks that against the base classes), only without scanning every row per cell.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fairness_core.evaluations.honest import Count, HonestCompletions, ScoredCompletion
from fairness_core.evaluations.sentiment import ScoredSentiment, SentimentCompletions
from fairness_core.matching import Match
from fairness_core.resources import Prompt

#: Share of hurtful completions in each category.  The project lexicon's shares of hurtful matches on the
#: planted-bias demo are of this order (pr, asf, asm each a minority, most in other categories).
CATEGORY_SHARES = {"pr": 0.15, "asf": 0.10, "asm": 0.10, "other": 0.65}
#: Share of completions in which the offline lexicon scorer finds no sentiment word (score exactly 0.5).
LEXICON_NEUTRAL = 0.3
SCORE_SHAPES = {"classifier": ((9.0, 1.0), (1.0, 9.0)), "lexicon": ((5.0, 1.0), (1.0, 5.0))}


@dataclass(frozen=True)
class HonestSetting:
    """One simulated world for HONEST: the base rate and the logit-scale spreads."""

    base_rate: float
    template_sd: float
    term_sd: float = 0.3
    prompt_sd: float = 0.3


@dataclass(frozen=True)
class SentimentSetting:
    """One simulated world for sentiment: the positive share, the spreads (probability scale) and the scorer."""

    positive: float = 0.6
    template_sd: float = 0.05
    term_sd: float = 0.05
    scorer: Literal["classifier", "lexicon"] = "lexicon"

    def score_means(self) -> tuple[float, float]:
        (a, b), (c, d) = SCORE_SHAPES[self.scorer]
        neutral = LEXICON_NEUTRAL if self.scorer == "lexicon" else 0.0
        return ((1 - neutral) * a / (a + b) + neutral * 0.5, (1 - neutral) * c / (c + d) + neutral * 0.5)


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


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _expit(x):
    return 1 / (1 + np.exp(-x))


class HonestSimulator:
    """Draws :class:`CountedHonestCompletions` for the prompts of one HONEST evaluation."""

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

    def model(self, setting: HonestSetting, rates: dict[str, float], rng: np.random.Generator) -> np.ndarray:
        """Each prompt's hurtful probability for one simulated model."""
        base = _logit(np.array([rates[g] for g in self.groups]))[self.group_of]
        a = rng.normal(0, setting.template_sd, len(self.template_index))[self.template_of]
        b = rng.normal(0, setting.term_sd, len(self.term_index))[self.term_of]
        c = rng.normal(0, setting.prompt_sd, len(self.prompts))
        return _expit(base + a + b + c)

    def sample(self, p: np.ndarray, rng: np.random.Generator) -> CountedHonestCompletions:
        """One run of the model ``p``: each prompt's hurtful completions, split over categories."""
        hits = rng.binomial(self.samples, p)
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

    def truth(self, p: np.ndarray) -> dict[str, float]:
        """The model's own value of each rate metric (its expected rate), by metric id."""
        from fairness_core.scorecard import metric_id

        truth = {}
        for gi, group in enumerate(self.groups):
            in_group = self.group_of == gi
            rate = float(p[in_group].mean())
            truth[metric_id("honest", "honest_score", group=group)] = rate
            for category, share in CATEGORY_SHARES.items():
                truth[metric_id("honest", "category_score", category=category, group=group)] = rate * share
            for template_id, ti in self.template_index.items():
                cell = in_group & (self.template_of == ti)
                truth[metric_id("honest", "honest_score", template=template_id, group=group)] = float(p[cell].mean())
        return truth


class SentimentSimulator:
    """Draws :class:`IndexedSentimentCompletions` for the prompts of one sentiment evaluation."""

    def __init__(self, prompts: tuple[Prompt, ...], groups: tuple[str, ...], samples: int):
        self.prompts, self.groups, self.samples = prompts, groups, samples
        self.template_index = {t: i for i, t in enumerate(dict.fromkeys(p.template_id for p in prompts))}
        self.term_index = {k: i for i, k in enumerate(dict.fromkeys((p.group, p.term) for p in prompts))}
        self.group_of = np.array([groups.index(p.group) for p in prompts])
        self.template_of = np.array([self.template_index[p.template_id] for p in prompts])
        self.term_of = np.array([self.term_index[(p.group, p.term)] for p in prompts])

    def model(self, setting: SentimentSetting, gaps: dict[str, float], rng: np.random.Generator) -> np.ndarray:
        """Each prompt's probability of a positive completion; ``gaps`` lowers a group's mean score by that much."""
        high, low = setting.score_means()
        shift = np.array([gaps.get(g, 0.0) / (high - low) for g in self.groups])[self.group_of]
        a = rng.normal(0, setting.template_sd, len(self.template_index))[self.template_of]
        b = rng.normal(0, setting.term_sd, len(self.term_index))[self.term_of]
        return np.clip(setting.positive - shift + a + b, 0.02, 0.98)

    def sample(self, p: np.ndarray, setting: SentimentSetting, rng: np.random.Generator) -> IndexedSentimentCompletions:
        n = len(p) * self.samples
        positive = rng.random(n) < np.repeat(p, self.samples)
        (a, b), (c, d) = SCORE_SHAPES[setting.scorer]
        scores = np.where(positive, rng.beta(a, b, n), rng.beta(c, d, n))
        if setting.scorer == "lexicon":
            scores = np.where(rng.random(n) < LEXICON_NEUTRAL, 0.5, scores)
        prompts = np.repeat(np.arange(len(p)), self.samples)
        rows = tuple(ScoredSentiment(self.prompts[i], "", float(s)) for i, s in zip(prompts, scores))
        return IndexedSentimentCompletions(rows, self.groups)
