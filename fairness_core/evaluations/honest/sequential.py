"""HONEST's sequential test: when ``--sampling=adaptive`` may stop, and which verdicts it settled.

Every gated HONEST test gets two e-processes (mixtures of bets held constant
over the run, :func:`~fairness_core.statistics.rate_eprocess` and
:func:`~fairness_core.evaluations.honest.ratio_bounds.ratio_eprocess`), read after each round:

* a group's HONEST score and each limited category score, against its limit:
  settled as a failure when "the rate is above the limit" reaches
  ``1 / alpha`` (its share of ``fail_alpha``), as a pass when "below" reaches
  ``1 / pass_alpha``;
* the HONEST ratio, against ``max_ratio``: its completions paired across groups
  by prompt (same template, same term tuple) and sample; settled as a failure
  when, for some ordered pair of groups, "a's rate is above ``max_ratio`` times
  b's" reaches ``k (k - 1) / alpha`` (Bonferroni over the pairs), as a pass when
  "below" reaches ``1 / pass_alpha`` for every ordered pair (all must hold, so no
  correction is needed).

``fail_alpha`` is split in half between the ratio and the score tests, each
half equally among its tests, so early failures add at most ``fail_alpha`` to
a fair model's false alarms whatever the number of groups.  The run stops at
the first settled failure (the deploy is blocked whatever the rest say) or when
every gated test is settled as a pass; at the budget the unsettled tests are
judged by the fixed rules on all the completions, exactly as a fixed run.
Limits of 1.0 cannot fail and are not tested; a limit of 0 is left to the fixed rule at the budget
(no count shows a rate of 0), and while one is gated the run cannot stop early as a pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.honest.config import HonestConfig
from fairness_core.evaluations.honest.ratio_bounds import ratio_eprocess
from fairness_core.scorecard import Settlement, metric_id
from fairness_core.statistics import rate_eprocess


@dataclass(frozen=True)
class _ScoreTest:
    metric: str
    prompts: np.ndarray   # bool mask over the evaluation's prompts
    column: int           # 0: hurtful at all; 1 + i: hurtful in the i-th limited category
    limit: float


def _shown(log_value: float) -> str:
    """An e-value given by its logarithm, to 4 significant figures and without overflowing (``1e+400``).

    >>> _shown(math.log(1599.9999999999998)), _shown(math.log(1.2958406911527351e+23)), _shown(1000.0)
    ('1600', '1.296e+23', '1e+434')
    """
    return f"{math.exp(log_value):.4g}" if log_value < 700 else f"1e+{log_value / math.log(10):.0f}"


class HonestSequentialTest:
    """The e-processes of one HONEST run's gated tests, updated round by round."""

    def __init__(self, prompts: Sequence[Prompt], groups: Sequence[str], limits: HonestConfig):
        self.groups = tuple(groups)
        settings = limits.sequential
        self.samples_per_round = settings.samples_per_round
        self.categories = tuple(sorted(limits.max_category_score))
        group_of = np.array([self.groups.index(p.group) for p in prompts])
        template_of = np.array([p.template_id for p in prompts])
        tests = []
        for g, group in enumerate(self.groups):
            in_group = group_of == g
            tests.append(_ScoreTest(metric_id("honest", "honest_score", group=group), in_group, 0,
                                    limits.max_honest_score[group]))
            tests += [_ScoreTest(metric_id("honest", "category_score", category=c, group=group), in_group, 1 + i,
                                 limits.max_category_score[c]) for i, c in enumerate(self.categories)]
            if limits.max_template_score < 1.0:
                tests += [_ScoreTest(metric_id("honest", "honest_score", template=t, group=group),
                                     in_group & (template_of == t), 0, limits.max_template_score)
                          for t in dict.fromkeys(template_of)]
        # A limit of 1 cannot fail; one of 0 cannot be shown to hold by any count (every hit fails it): the fixed
        # rule judges it at the budget, and no early pass is possible while it is gated.
        self.unprovable = any(t.limit <= 0 for t in tests)
        tests = [t for t in tests if 0 < t.limit < 1]
        self.tests = tests
        # tests x prompts, one matrix per outcome column: a round's hits per test are one product.
        self.columns = sorted({t.column for t in tests})
        self.masks = {c: np.array([t.prompts if t.column == c else np.zeros(len(prompts), bool) for t in tests],
                                  dtype=float) for c in self.columns}
        self.hits = np.zeros(len(tests))
        self.totals = np.zeros(len(tests))
        self.sizes = np.array([t.prompts.sum() for t in tests])
        self.limits = np.array([t.limit for t in tests])
        # The prompts of each group in order: position i of every group is the same template and term tuple.
        self.aligned = np.array([np.flatnonzero(group_of == g) for g in range(len(self.groups))])
        k = len(self.groups)
        self.max_ratio = limits.max_ratio
        self.both = np.zeros((k, k))
        self.group_hits = np.zeros(k)
        self.pairs = ~np.eye(k, dtype=bool)
        self.ratio_fail_at = math.log(k * (k - 1) / (settings.fail_alpha / 2))
        self.score_fail_at = math.log(max(len(tests), 1) / (settings.fail_alpha / 2))
        self.pass_at = math.log(1 / settings.pass_alpha)
        self.samples = 0
        self._state: tuple | None = None

    def update(self, part) -> None:
        """Count one round: ``part.outcome_flags(categories)`` is ``(samples, prompts, 1 + categories)``."""
        flags = np.asarray(part.outcome_flags(self.categories), dtype=float)
        if flags.shape[1] != self.aligned.size:
            raise ValueError(f"A round of HONEST completions must hold every prompt: got {flags.shape[1]} prompts, "
                             f"expected {self.aligned.size}")
        per_prompt = flags.sum(axis=0)
        for column, mask in self.masks.items():
            self.hits += mask @ per_prompt[:, column]
        self.totals += self.sizes * flags.shape[0]
        hurtful = flags[:, :, 0][:, self.aligned]                     # (samples, groups, prompts per group)
        self.both += np.einsum("skp,slp->kl", hurtful, hurtful)
        self.group_hits += hurtful.sum(axis=(0, 2))
        self.samples += flags.shape[0]
        self._state = None

    def _evalues(self) -> tuple:
        """The log e-values now: (score fail, score pass, ratio fail per ordered pair, ratio pass per ordered pair)."""
        if self._state is None:
            fail, passes = rate_eprocess(self.hits, self.totals, self.limits)
            only = self.group_hits[:, None] - self.both
            ratio_fail, ratio_pass = ratio_eprocess(only, only.T, self.both, self.max_ratio)
            self._state = (fail, passes, np.where(self.pairs, ratio_fail, -np.inf),
                           np.where(self.pairs, ratio_pass, np.inf))
        return self._state

    def _after(self) -> str:
        return f"after {self.samples} sample{'s' * (self.samples != 1)} per prompt"

    def settlements(self) -> dict[str, Settlement]:
        found: dict[str, Settlement] = {}
        if not self.samples:
            return found
        after = self._after()
        fail, passes, ratio_fail, ratio_pass = self._evalues()
        for test, up, down in zip(self.tests, fail, passes):
            if up >= self.score_fail_at:
                found[test.metric] = Settlement("fail", f"anytime-valid: above {test.limit:g} (e-value "
                                                        f"{_shown(up)} >= {_shown(self.score_fail_at)}) {after}")
            elif down >= self.pass_at:
                found[test.metric] = Settlement("pass", f"anytime-valid: below {test.limit:g} (e-value "
                                                        f"{_shown(down)} >= {_shown(self.pass_at)}) {after}")
        ratio = metric_id("honest", "honest_ratio")
        high, low = np.unravel_index(np.argmax(ratio_fail), ratio_fail.shape)
        if ratio_fail[high, low] >= self.ratio_fail_at:
            found[ratio] = Settlement(
                "fail", f"anytime-valid: {self.groups[high]}'s HONEST score is above {self.max_ratio:g} times "
                        f"{self.groups[low]}'s (e-value {_shown(ratio_fail[high, low])} >= "
                        f"{_shown(self.ratio_fail_at)}) {after}")
        elif np.all(ratio_pass >= self.pass_at):
            found[ratio] = Settlement(
                "pass", f"anytime-valid: every group's HONEST score is below {self.max_ratio:g} times every other's "
                        f"(e-values >= {_shown(self.pass_at)}) {after}")
        return found

    def failed(self) -> bool:
        return any(s.outcome == "fail" for s in self.settlements().values())

    def stop_reason(self) -> str | None:
        if not self.samples:
            return None
        fail, passes, ratio_fail, ratio_pass = self._evalues()
        failed = np.max(ratio_fail) >= self.ratio_fail_at or bool(np.any(fail >= self.score_fail_at))
        passed = not self.unprovable and bool(np.all(ratio_pass >= self.pass_at)) and bool(np.all((passes >= self.pass_at)
                                                                          | (fail >= self.score_fail_at)))
        if failed:
            settled = self.settlements()
            metric = next(m for m, s in settled.items() if s.outcome == "fail")
            return f"settled: {metric} fails ({settled[metric].evidence})"
        if passed:
            return f"settled: all {len(self.tests) + 1} gated HONEST tests pass (anytime-valid) {self._after()}"
        return None
