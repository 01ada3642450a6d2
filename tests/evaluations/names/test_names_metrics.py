"""The names evaluation's gaps, intervals and paired test, on answers whose signals the test sets.

The answers are built here with known values (no model, no lexicon): a
planted gap must come out as the gap, inside its interval, with a small
p-value; a design without one must give p-values that reject at about their
level; the not-judged cases must say why.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from fairness_core.api.answers import Answer
from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.names.config import NamesConfig
from fairness_core.evaluations.names.metrics import SignalTable, bootstrap, gap_metrics, paired_pvalue, point_values
from fairness_core.evaluations.names.signals import NameAnswer

TASKS = [f"career-{i:02d}" for i in range(1, 13)]


@dataclass(frozen=True)
class Mention:
    """What the occupation lexicon finds, as the signals read it."""

    occupation: str
    women_share: float
    surface: str = ""
    start: int = 0
    end: int = 0


def answer(group: str, name: str, task: str, sample: int, *, share: float | None = None, text: str = "回答です。",
           refusal: bool = False, withheld: bool = False, refusals_read: bool = True) -> NameAnswer:
    prompt = Prompt(task, group, name, f"{name}です。{task}")
    read = Answer(prompt, text, text, "refusal phrase rp-001" if refusal else None,
                  "no answer text" if withheld else None)
    mentions = (Mention(f"job-{share}", share),) if share is not None else ()
    return NameAnswer(read, sample, refusals_read, occupations=mentions, sentiment=0.5)  # type: ignore[arg-type]


def people(groups: dict[str, int]) -> dict[str, tuple[str, ...]]:
    return {g: tuple(f"{g}-{i}" for i in range(n)) for g, n in groups.items()}


def design(shares: dict[str, float], *, names: int = 8, samples: int = 2, noise: float = 0.2, seed: int = 0,
           name_spread: float = 0.0) -> tuple[list[NameAnswer], dict[str, tuple[str, ...]]]:
    """Answers whose occupation share is the group's value plus a name's own offset plus noise, clipped to [0, 1]."""
    rng = random.Random(seed)
    who = people({g: names for g in shares})
    offset = {name: rng.gauss(0, name_spread) for names_ in who.values() for name in names_}
    answers = [answer(g, name, task, s, share=min(1.0, max(0.0, shares[g] + offset[name] + rng.gauss(0, noise))))
               for task in TASKS for g in shares for name in who[g] for s in range(samples)]
    return answers, who


def test_a_planted_gap_is_the_gap_inside_its_interval_with_a_small_p_value():
    answers, who = design({"female": 0.7, "male": 0.4}, noise=0.0)
    table = SignalTable.of(answers, "occupation_share", who, TASKS)
    value, each = point_values(table, ratio=False)
    assert value == pytest.approx(0.3) and each == []
    interval, _ = bootstrap(table, ratio=False, seed=1)
    assert interval[0] <= 0.3 <= interval[1]
    assert paired_pvalue(table, ratio=False, seed=1) == pytest.approx(2 / 2 ** 8)  # only the identity and its mirror


def test_the_bootstrap_resamples_names_so_name_effects_widen_the_interval():
    tight, who = design({"female": 0.5, "male": 0.5}, noise=0.1, name_spread=0.0, seed=3)
    loose, _ = design({"female": 0.5, "male": 0.5}, noise=0.1, name_spread=0.15, seed=3)
    widths = [np.diff(bootstrap(SignalTable.of(a, "occupation_share", who, TASKS), ratio=False, seed=0)[0])[0]
              for a in (tight, loose)]
    assert widths[1] > 2 * widths[0]


def test_the_paired_test_keeps_its_level_when_names_differ_by_more_than_chance():
    """No group effect, but each name its own offset: swapping whole names is what keeps the level."""
    pvalues = []
    for seed in range(200):
        answers, who = design({"female": 0.5, "male": 0.5}, names=6, samples=1, noise=0.1, name_spread=0.1, seed=seed)
        pvalues.append(paired_pvalue(SignalTable.of(answers, "occupation_share", who, TASKS), ratio=False, seed=seed))
    rejected = np.mean(np.array(pvalues) <= 0.05)
    assert rejected <= 0.09, rejected  # 0.05 expected; 200 runs


def test_with_more_groups_each_is_compared_with_the_pool_and_the_aggregate_is_the_farthest():
    answers, who = design({"a": 0.5, "b": 0.5, "c": 0.8}, noise=0.0)
    table = SignalTable.of(answers, "occupation_share", who, TASKS)
    value, each = point_values(table, ratio=False)
    assert each == pytest.approx([-0.1, -0.1, 0.2]) and value == pytest.approx(0.2)
    assert paired_pvalue(table, ratio=False, seed=0) < 0.05


def test_the_length_ratio_is_first_over_second():
    answers = [answer("female", f"female-{i}", t, 0, text="あ" * 30) for i in range(4) for t in TASKS] + \
              [answer("male", f"male-{i}", t, 0, text="あ" * 20) for i in range(4) for t in TASKS]
    metrics = {m.id: m for m in gap_metrics(answers, NamesConfig(), people({"female": 4, "male": 4}), TASKS, seed=0)}
    ratio = metrics["names.length_ratio"]
    assert ratio.value == pytest.approx(1.5) and ratio.limit.lower == pytest.approx(1 / 1.2)
    assert ratio.verdict("point") is not None


def test_refusals_count_against_answers_and_withheld_outputs_count_in_neither():
    who = people({"female": 2, "male": 2})
    answers = [answer("female", "female-0", t, 0, refusal=True) for t in TASKS] + \
              [answer("female", "female-1", t, 0, withheld=True) for t in TASKS] + \
              [answer(g, f"{g}-{i}", t, 0) for g in ("male",) for i in range(2) for t in TASKS]
    metrics = {m.id: m for m in gap_metrics(answers, NamesConfig(), who, TASKS, seed=0)}
    assert metrics["names.refusal_gap"].value == pytest.approx(1.0)  # every female output read was a refusal
    assert "female has no answers" in metrics["names.sentiment_gap"].skip_reason


def test_gaps_that_cannot_be_computed_say_why():
    who = people({"female": 2, "male": 2})
    answers = [answer(g, f"{g}-{i}", t, 0, refusals_read=False) for g in who for i in range(2) for t in TASKS]
    metrics = {m.id: m for m in gap_metrics(answers, NamesConfig(), who, TASKS, seed=0)}
    assert "completion" in metrics["names.refusal_gap"].skip_reason
    assert "names an occupation" in metrics["names.occupation_share_gap"].skip_reason
    assert metrics["names.sentiment_gap"].value == 0.0 and metrics["names.length_ratio"].value == 1.0
