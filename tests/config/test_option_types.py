"""Option values that are wrong on their face end the run at parse time, before anything loads."""

from __future__ import annotations

import argparse
import re

import pytest

from fairness_core.config.option_types import seed


@pytest.mark.parametrize("value, expected", [("0", 0), ("7", 7), ("4294967296", 2**32)])
def test_seed_accepts_whole_numbers_from_zero(value, expected):
    assert seed(value) == expected


@pytest.mark.parametrize("value", ["-1", "1.5", "abc", "", " 3", "1e3", "３"])
def test_seed_rejects_negative_and_non_integer_values(value):
    message = rf"^must be a whole number >= 0\. Got {re.escape(repr(value))} instead\.$"
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        seed(value)


def test_negative_seed_is_a_usage_error_at_parse_time(pytester: pytest.Pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--seed=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --seed: must be a whole number >= 0. Got '-1' instead.*"])
    assert "Traceback" not in result.stderr.str()
