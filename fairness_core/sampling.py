"""``--sampling``: the fixed protocol, or rounds that stop as soon as an evaluation's verdict is settled.

With ``fixed`` (the default) every prompt gets the protocol's ``num_samples``
completions.  With ``adaptive``, an evaluation that has a sequential test
(:meth:`fairness_core.api.evaluation.Evaluation.sequential_test`) draws its
completions in rounds over all its prompts, each round a few more samples of
every prompt (sample indices continue where the last round stopped, so the
completions are a prefix of the fixed protocol's, the same for a seed through
every backend), and its test looks at the counts after each round.  The
evaluation stops when its test says its verdict is settled, or at the fixed
protocol's budget.  An evaluation without a sequential test runs its fixed
protocol.  :func:`sample_in_rounds` is the one loop: the audit session runs it
on a backend, the gate simulation (``benchmarks/operating_characteristics.py``)
on simulated rounds, so that the measured operating characteristics are those
of the code that audits.

Why ``fixed`` is the default: the published operating characteristics, the
baselines of the regression gate and the results of earlier runs are those of
the fixed protocol; a run stopped at the first settled failure judges its
other metrics on fewer completions; and the savings are large only where the
verdict is obvious (a clearly biased model, or a fair one with many hurtful
completions).  Adaptive sampling is for iterating on checkpoints and triaging
clearly biased ones, at no cost in false alarms or power (docs/gate.md).

>>> [r for r in round_ranges(5, 2)]
[range(0, 2), range(2, 4), range(4, 5)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from fairness_core.scorecard import Settlement

Sampling = Literal["fixed", "adaptive"]
#: ``--sampling``'s choices, each named once.
FIXED: Final = "fixed"
ADAPTIVE: Final = "adaptive"
SAMPLING_MODES: tuple[str, ...] = (FIXED, ADAPTIVE)


class SequentialTest(Protocol):
    """An evaluation's anytime-valid test of its gated verdicts, fed one round of completions at a time."""

    #: Samples of every prompt per round.
    samples_per_round: int

    def update(self, part: Any) -> None:
        """Take one round's scored completions into the counts."""
        ...

    def stop_reason(self) -> str | None:
        """Why the evaluation's verdict is settled now (a test settled as a failure, or every one as a pass), or ``None``."""
        ...

    def settlements(self) -> Mapping[str, Settlement]:
        """The verdicts settled so far, by metric id."""
        ...

    def failed(self) -> bool:
        """Whether the run stopped on a settled failure (a deploy limit, or a regression against a baseline)."""
        ...


@dataclass(frozen=True)
class SamplingRecord:
    """How many completions an evaluation used, of how many, and why it stopped there."""

    mode: str
    samples_per_prompt: int
    budget: int
    prompts: int
    rounds: int
    stopped: str
    #: ``failure`` (a test settled as one), ``pass`` (every one settled as a pass), ``budget`` or ``fixed``.
    ending: Literal["failure", "pass", "budget", "fixed"] = "fixed"

    @property
    def completions(self) -> int:
        return self.samples_per_prompt * self.prompts

    @property
    def budget_completions(self) -> int:
        return self.budget * self.prompts

    def describe(self) -> str:
        """One line: ``adaptive, 3 of 20 samples per prompt (5760 of 38400 completions, 3 rounds): <why>``."""
        if self.mode == FIXED:
            return f"fixed, {self.budget} samples per prompt ({self.budget_completions} completions): {self.stopped}"
        return (f"adaptive, {self.samples_per_prompt} of {self.budget} samples per prompt ({self.completions} of "
                f"{self.budget_completions} completions, {self.rounds} round{'s' * (self.rounds != 1)}): {self.stopped}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SamplingRecord:
        """The record that :meth:`as_dict` wrote (as the results file keeps it); derived counts are recomputed."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "samples_per_prompt": self.samples_per_prompt, "budget": self.budget,
                "prompts": self.prompts, "rounds": self.rounds, "completions": self.completions,
                "budget_completions": self.budget_completions, "ending": self.ending, "stopped": self.stopped}


def round_ranges(budget: int, per_round: int) -> list[range]:
    """The sample indices of each round: ``per_round`` at a time up to ``budget`` (the last round may be shorter)."""
    if budget < 1 or per_round < 1:
        raise ValueError(f"round_ranges needs budget >= 1 and per_round >= 1. Got {budget} and {per_round} instead.")
    return [range(start, min(start + per_round, budget)) for start in range(0, budget, per_round)]


def sample_in_rounds(draw: Callable[[range], Any], test: SequentialTest, *, budget: int,
                     prompts: int) -> tuple[list[Any], SamplingRecord]:
    """Draw rounds with ``draw(sample indices)`` until ``test`` settles the verdict or the budget is spent.

    Returns the rounds drawn, in order, and the record of how the run ended.
    The test is asked after every round, never inside one: its validity rests on
    every prompt having the same number of samples at each look.
    """
    parts: list[Any] = []
    rounds = round_ranges(budget, test.samples_per_round)
    for index, samples in enumerate(rounds, start=1):
        part = draw(samples)
        parts.append(part)
        test.update(part)
        reason = test.stop_reason()
        if reason is not None:
            return parts, SamplingRecord(ADAPTIVE, samples.stop, budget, prompts, index, reason,
                                         "failure" if test.failed() else "pass")
    return parts, SamplingRecord(ADAPTIVE, budget, budget, prompts, len(rounds),
                                 "the fixed protocol's budget, the verdicts not settled earlier; the "
                                 "unsettled ones are judged by the fixed rules", "budget")


def run_adaptively(evaluation: Any, draw: Callable[[range], Any], *,
                   test: SequentialTest | None = None) -> tuple[Any, SamplingRecord, Mapping[str, Settlement]]:
    """One evaluation's run under ``--sampling=adaptive``: its scored completions, the record, the settled verdicts.

    ``evaluation`` has a sequential test (``test``, or a fresh one); its
    rounds are drawn with ``draw`` and merged into what its metrics take.  The
    audit session draws from a backend, the gate simulation from simulated rounds.
    """
    test = test or evaluation.sequential_test()
    parts, record = sample_in_rounds(draw, test, budget=evaluation.protocol.num_samples,
                                     prompts=len(evaluation.prompts))
    return evaluation.merge(parts), record, test.settlements()


def fixed_record(budget: int, prompts: int, why: str = "the fixed protocol") -> SamplingRecord:
    """The record of an evaluation that ran its fixed protocol, and why."""
    return SamplingRecord(FIXED, budget, budget, prompts, 1, why)


def sampling_rows(records: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(evaluation, how it sampled) for the report, only when a run was adaptive (fixed says nothing new)."""
    if all(record["mode"] == FIXED and ADAPTIVE not in record["stopped"] for record in records.values()):
        return []
    return [(name, SamplingRecord.from_dict(record).describe()) for name, record in records.items()]


def sampling_lines(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The terminal's lines of :func:`sampling_rows`."""
    return [f"sampling: {name}: {how}" for name, how in sampling_rows(records)]
