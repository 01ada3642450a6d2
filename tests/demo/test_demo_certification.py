"""The non-inferiority gate on the demo models, as CI would run it: ``demo`` certifies against itself, ``demo:biased``
regresses on HONEST against ``demo``; the same for the names demo models on the occupation gap.

The baseline is a full audit of ``demo`` with ``--audit-json``; each candidate
runs the regression tests only, with ``--baseline``.  The same seed makes the
``demo`` candidate's completions those of the baseline (the run is
deterministic), so every compared metric is certified; ``demo:biased`` plants a
higher hurtful rate for women (``PLANTED_RATES``), which must come out as a
regression of the women's HONEST score and of the ratio.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from audit_support import audit_demo, output

from fairness_core.api.user_files import load_thresholds
from fairness_core.reporting.results import read_results

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _audit(pytester, model: str, *args: str):
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    return pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", f"--model={model}", "-p",
                                        "no:cacheprovider", "--no-cache", "-k", "not bbq", *args)


def test_demo_certifies_against_itself_and_the_biased_demo_regresses_on_honest(pytester):
    baseline = _audit(pytester, "demo", "--audit-json=baseline.json")
    assert baseline.ret == pytest.ExitCode.OK, baseline.stdout.str()[-3000:]

    same = _audit(pytester, "demo", "--baseline=baseline.json", "--audit-json=same.json")
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()[-3000:]
    records = read_results(pytester.path / "same.json").certification
    assert records and all(r.verdict == "certified" for r in records), records
    assert all(r.completions for r in records)
    same.stdout.fnmatch_lines([f"certified: {len(records)} of {len(records)} metrics"])

    biased = _audit(pytester, "demo:biased", "--baseline=baseline.json", "--audit-json=biased.json")
    assert biased.ret == pytest.ExitCode.TESTS_FAILED, biased.stdout.str()[-3000:]
    verdicts = {r.metric: r.verdict for r in read_results(pytester.path / "biased.json").certification}
    assert verdicts["honest.honest_score[group=female]"] == "regression", verdicts
    assert verdicts["honest.honest_ratio"] == "regression", verdicts
    biased.stdout.fnmatch_lines(["certified: * of * metrics; regression: *honest.honest_score[[]group=female[]]*",
                                 "*REGRESSION vs baseline demo*honest.honest_ratio*"])
    assert "Traceback" not in biased.stdout.str()


#: The names audit alone under the chat format the names demo models answer in; with --baseline, its regression tests.
NAMES = ("--prompt-format=chat-instruction", "--no-cache", "-k", "test_names or test_no_regression and names")


def test_the_biased_names_demo_regresses_on_the_occupation_gap_at_its_own_tolerance(pytester):
    """Issue 42: names' gaps have tolerances of their own (``names.*`` in ``regression.tolerance``): the planted
    occupation skew of ``demo:chat-names-biased`` is a regression against ``demo:chat-names`` at that tolerance, and
    the fair model is certified against itself."""
    tolerance = load_thresholds(REPO / "thresholds.yaml").regression.tolerance_of("names", "occupation_share_gap")
    assert tolerance != load_thresholds(REPO / "thresholds.yaml").regression.default_tolerance
    baseline, _ = audit_demo(pytester, "demo:chat-names", *NAMES)
    assert baseline.ret == pytest.ExitCode.OK, output(baseline)[-3000:]
    (pytester.path / "audit.json").rename(pytester.path / "names.json")

    same, _ = audit_demo(pytester, "demo:chat-names", *NAMES, "--baseline=names.json")
    assert same.ret == pytest.ExitCode.OK, output(same)[-3000:]
    records = {r.metric: r for r in read_results(pytester.path / "audit.json").certification}
    assert records["names.occupation_share_gap"].verdict == "certified", records
    assert records["names.occupation_share_gap"].tolerance == tolerance
    assert {m for m in records if m.startswith("names.")} == {f"names.{gap}" for gap in (
        "occupation_share_gap", "refusal_gap", "sentiment_gap", "hurtful_gap", "length_ratio")}

    biased, _ = audit_demo(pytester, "demo:chat-names-biased", *NAMES, "--baseline=names.json")
    assert biased.ret == pytest.ExitCode.TESTS_FAILED, output(biased)[-3000:]
    records = {r.metric: r for r in read_results(pytester.path / "audit.json").certification}
    occupation = records["names.occupation_share_gap"]
    assert occupation.verdict == "regression" and occupation.tolerance == tolerance, occupation
    assert occupation.bound is not None and occupation.bound[0] > tolerance
    biased.stdout.fnmatch_lines([f"*REGRESSION vs baseline demo:chat-names*names.occupation_share_gap*"
                                 f"against tolerance {tolerance:g}*"])
    assert "Traceback" not in output(biased)
