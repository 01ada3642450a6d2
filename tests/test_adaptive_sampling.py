"""``--sampling``: the round loop, its record, and the report's lines (a stand-in test, no evaluation)."""

from __future__ import annotations

import pytest

from fairness_core.sampling import SamplingRecord, fixed_record, round_ranges, sample_in_rounds, sampling_lines
from fairness_core.scorecard import Settlement


class StopsAfter:
    """A sequential test that settles ``outcome`` once it has seen ``rounds`` rounds."""

    samples_per_round = 2

    def __init__(self, rounds: int | None, outcome: str = "fail"):
        self.rounds, self.outcome, self.seen = rounds, outcome, []

    def update(self, part) -> None:
        self.seen.append(part)

    def stop_reason(self) -> str | None:
        return "settled" if self.rounds is not None and len(self.seen) >= self.rounds else None

    def settlements(self):
        return {"m": Settlement(self.outcome, "e")} if self.stop_reason() else {}

    def failed(self) -> bool:
        return any(s.outcome == "fail" for s in self.settlements().values())


def test_rounds_cover_the_budget_in_order_and_the_last_may_be_shorter():
    assert round_ranges(5, 2) == [range(0, 2), range(2, 4), range(4, 5)]
    with pytest.raises(ValueError, match="round_ranges needs budget >= 1 and per_round >= 1"):
        round_ranges(0, 2)


@pytest.mark.parametrize(("rounds", "outcome", "ending", "used"), [(2, "fail", "failure", 4), (1, "pass", "pass", 2),
                                                                   (None, "fail", "budget", 7)])
def test_the_loop_stops_when_the_test_settles_or_at_the_budget(rounds, outcome, ending, used):
    drawn = []
    parts, record = sample_in_rounds(lambda samples: drawn.append(samples) or list(samples),
                                     StopsAfter(rounds, outcome), budget=7, prompts=10)
    assert parts == [list(r) for r in drawn] and drawn == round_ranges(7, 2)[:len(drawn)]
    assert (record.ending, record.samples_per_prompt, record.completions, record.budget_completions) == \
        (ending, used, used * 10, 70)


def test_a_record_survives_the_results_file_and_describes_itself():
    record = SamplingRecord("adaptive", 3, 20, 1920, 3, "settled: x fails", "failure")
    assert SamplingRecord.from_dict(record.as_dict()) == record
    assert record.describe() == ("adaptive, 3 of 20 samples per prompt (5760 of 38400 completions, 3 rounds): "
                                 "settled: x fails")


def test_the_report_names_the_sampling_only_when_a_run_was_adaptive():
    fixed = fixed_record(20, 100).as_dict()
    assert sampling_lines({"a": fixed}) == []
    adaptive = SamplingRecord("adaptive", 2, 20, 100, 2, "settled", "pass").as_dict()
    assert sampling_lines({"a": adaptive, "b": fixed}) == [
        "sampling: a: adaptive, 2 of 20 samples per prompt (200 of 2000 completions, 2 rounds): settled",
        "sampling: b: fixed, 20 samples per prompt (2000 completions): the fixed protocol"]
