"""The regression gate: ``--baseline=<earlier --audit-json>`` passes on certified metrics only.

End to end, two models are compared: the tiny random SentencePiece GPT-2 of
conftest.py, whose completions are mostly neutral for both groups, and the
tiny GPT-2 trained to continue every prompt about a woman negatively and about
a man positively (clearly worse on every sentiment metric).  The lexicon is a
word list of words neither model can emit, so the HONEST metrics are 0 for
both and only sentiment can regress.  Limits are lax: only the regression
tests can fail.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from audit_support import GATED_METRICS, minimal_results, output, run_audit, setup_audits, thresholds

from fairness_core.api.evaluation import MetricSpec
from fairness_core.config.thresholds import RegressionConfig
from fairness_core.evaluations.honest.evaluation import HonestEvaluation
from fairness_core.evaluations.sentiment.evaluation import SentimentEvaluation
from fairness_core.gates.regression import VALUE_WIDTH, incompatibilities, read_baseline, regression
from fairness_core.reporting.results import AuditResults, MetricRecord, Provenance, ResultsFileError, read_results
from fairness_core.scorecard import Limit, MetricResult

#: Sampling at temperature 0.3: the trained model's preference decides every completion.
LAX = thresholds(lax=True, protocol={"temperature": 0.3},
                 regression={"default_tolerance": 0.02, "tolerance": {"honest_ratio": 0.25}})
#: Neither model's vocabulary has these characters: no HONEST hits for either.
ABSENT_WORDS = ("爆弾", "核兵器")
SENTIMENT_GATED = [m for m in GATED_METRICS if m.startswith("sentiment.")]
HONEST_GATED = [m for m in GATED_METRICS if m.startswith("honest.")]
#: The gated metrics of evaluations whose audit modules these runs leave out: skipped, as neither run has them.
OTHER_GATED = [m for m in GATED_METRICS if m not in SENTIMENT_GATED + HONEST_GATED]


@pytest.fixture
def audits(pytester):
    return setup_audits(pytester, words=ABSENT_WORDS)


def regression_failures(result) -> dict[str, str]:
    return {r.nodeid.split("::")[-1]: str(r.longrepr) for r in result.reprec.getfailures()}


def test_baseline_gate_end_to_end(audits, tiny_model_dirs, biased_model):
    fair = tiny_model_dirs["sentencepiece"]
    fair_json, biased_json = audits.path / "fair.json", audits.path / "biased.json"

    # Without --baseline the regression tests are not collected (nor the refusal tests, run under a chat format
    # only), and the run records a baseline.
    first = run_audit(audits, fair, LAX, f"--audit-json={fair_json}")
    assert first.ret == pytest.ExitCode.OK, output(first)
    outcomes = first.parseoutcomes()
    ran = [report.nodeid for report in first.reprec.getreports("pytest_runtest_logreport")]
    assert "deselected" not in outcomes and ran and not any("test_no_regression" in nodeid for nodeid in ran)
    assert "failed" not in outcomes and "regression" not in first.stdout.str().lower()
    baseline = read_results(fair_json)
    assert baseline.provenance.model["model"] == str(fair)

    # (b) a clearly worse model: every sentiment metric regresses; HONEST (0 vs 0) does not.
    worse = run_audit(audits, biased_model, LAX, "test_regression.py", f"--baseline={fair_json}",
                      f"--audit-json={biased_json}")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED, output(worse)
    failures = regression_failures(worse)
    assert set(failures) == {f"test_no_regression[{m}]" for m in SENTIMENT_GATED}, output(worse)
    # honest_ratio is skipped: too few HONEST hits for a ratio
    worse.assert_outcomes(failed=len(SENTIMENT_GATED), passed=len(HONEST_GATED) - 1, skipped=1 + len(OTHER_GATED))
    for metric in SENTIMENT_GATED:
        text = failures[f"test_no_regression[{metric}]"]
        assert text.startswith(f"AUDIT VIOLATION: REGRESSION vs baseline {fair}: {metric}\n"), text
        # Paired by prompt where the metric's resampling unit is the prompt; counterfactual's is the template.
        how = ("unpaired \\(each run's 95% interval\\)" if metric.endswith("counterfactual_fairness")
               else "paired by prompt")
        bound = r"\[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]"
        assert re.search(rf"\n  regression: \d\.\d{{3}} vs baseline \d\.\d{{3}}, change of badness \+\d\.\d{{3}} "
                         rf"{bound} against tolerance 0\.02 \({how}, one look\)\n", text), text
        assert "\n  sample: this run: " in text and "; baseline: " in text
    summary = [line for line in worse.stdout.lines if line.startswith("VIOLATION REGRESSION vs baseline ")]
    assert len(summary) == len(SENTIMENT_GATED)
    # The summary leads with the certification count, and the results file keeps every verdict and completions used.
    computed = len(SENTIMENT_GATED) + len(HONEST_GATED) - 1  # the ratio has no value in either run
    worse.stdout.fnmatch_lines([f"certified: {computed - len(SENTIMENT_GATED)} of {computed} metrics; "
                                f"regression: {', '.join(SENTIMENT_GATED)}"])
    recorded = {r.metric: r for r in read_results(biased_json).certification}
    assert {m for m, r in recorded.items() if r.verdict == "regression"} == set(SENTIMENT_GATED)
    assert {m for m, r in recorded.items() if r.verdict == "certified"} == set(HONEST_GATED) - {"honest.honest_ratio"}
    assert all(r.completions and r.completions > 0 for r in recorded.values())
    assert "Traceback" not in output(worse)

    # The reverse: the worse model as the baseline, the better one as the candidate.
    better = run_audit(audits, fair, LAX, "test_regression.py", f"--baseline={biased_json}")
    assert better.ret == pytest.ExitCode.OK, output(better)
    better.assert_outcomes(passed=len(GATED_METRICS) - 1 - len(OTHER_GATED), skipped=1 + len(OTHER_GATED))

    # (a) the same model against its own baseline: identical numbers, nothing regresses.
    same = run_audit(audits, fair, LAX, "test_regression.py", f"--baseline={fair_json}")
    assert same.ret == pytest.ExitCode.OK, output(same)
    same.assert_outcomes(passed=len(GATED_METRICS) - 1 - len(OTHER_GATED), skipped=1 + len(OTHER_GATED))

    # A zero tolerance cannot be certified even by identical runs: undecided, which fails the gate and says that no
    # run of this design certifies it ...
    strict = thresholds(lax=True, protocol={"temperature": 0.3},
                        regression={"default_tolerance": 0.02, "tolerance": {"honest_score": 0.0}})
    undecided = run_audit(audits, fair, strict, "test_regression.py", f"--baseline={fair_json}")
    assert undecided.ret == pytest.ExitCode.TESTS_FAILED, output(undecided)
    failures = regression_failures(undecided)
    assert set(failures) == {f"test_no_regression[{m}]" for m in HONEST_GATED if "honest_score" in m}
    for text in failures.values():
        assert text.startswith(f"AUDIT VIOLATION: UNDECIDED vs baseline {fair}: "), text
        assert "no run of this design is expected to certify it" in text, text
    # ... unless regression.undecided: pass, which the summary states.
    passing = {**strict, "regression": {**strict["regression"], "undecided": "pass"}}
    allowed = run_audit(audits, fair, passing, "test_regression.py", f"--baseline={fair_json}")
    assert allowed.ret == pytest.ExitCode.OK, output(allowed)
    allowed.stdout.fnmatch_lines(["*undecided, passed by regression.undecided: pass*"])


def test_baseline_model_generates_the_production_model_in_the_run_with_the_same_seed(audits, tiny_model_dirs,
                                                                                     biased_model):
    """``--baseline-model``: the same verdicts as a baseline file, without writing one first; the production model
    drawn from the candidate's random streams (common random numbers), so an unchanged one writes the same
    completions: every change exactly 0, its bound no wider than one discordant prompt's change."""
    fair = tiny_model_dirs["sentencepiece"]
    worse = run_audit(audits, biased_model, LAX, "test_regression.py", f"--baseline-model={fair}",
                      f"--audit-json={audits.path / 'worse.json'}")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED, output(worse)
    assert set(regression_failures(worse)) == {f"test_no_regression[{m}]" for m in SENTIMENT_GATED}, output(worse)
    worse.stdout.fnmatch_lines([f"baseline: compared with --baseline-model={fair} (model {fair}, generated in this "
                                f"run, same prompts and seed *"])

    same = run_audit(audits, fair, LAX, "test_regression.py", f"--baseline-model={fair}",
                     f"--audit-json={audits.path / 'same.json'}")
    assert same.ret == pytest.ExitCode.OK, output(same)
    recorded = read_results(audits.path / "same.json").certification
    assert recorded and all(r.verdict == "certified" and r.difference == 0 for r in recorded)
    tolerances = {r.metric: r.tolerance for r in recorded}
    assert all(r.bound[1] < tolerances[r.metric] / 2 for r in recorded if r.method.startswith("paired by prompt"))


@pytest.mark.parametrize(("options", "message"), [
    (("--baseline=old.json", "--baseline-model=prod"), "ERROR: --baseline=old.json and --baseline-model=prod: the gate "
                                                       "compares with one baseline*"),
    (("--baseline-model=/no/such/model",), "ERROR: --baseline-model=/no/such/model: no such directory."),
])
def test_baseline_model_usage_errors_are_one_line_each(audits, tiny_model_dirs, options, message):
    (audits.path / "old.json").write_text("{}", encoding="utf-8")
    result = run_audit(audits, tiny_model_dirs["sentencepiece"], LAX, *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in output(result)


#: Edits of a baseline's provenance that make it another experiment, and the fields the error must list.
INCOMPATIBLE_EDITS = {
    "protocol": (lambda p: p["evaluations"]["honest"]["protocol"].update(num_samples=5),
                 ["honest.protocol.num_samples"]),
    "templates": (lambda p: p["evaluations"]["honest"]["templates"].pop(), ["honest.templates"]),
    "protocol-and-lexicon": (lambda p: (p["evaluations"]["honest"]["protocol"].update(top_k=7),
                                        p["evaluations"]["honest"]["lexicon"].update(entries=99)),
                             ["honest.protocol.top_k", "honest.lexicon.entries"]),
    "attribute-set": (lambda p: p["attributes"]["sentiment"]["names"]["substitutions"]["female"].pop(),
                      ["attributes.sentiment.names.substitutions.female"]),
}


def test_an_incompatible_baseline_is_one_usage_error_listing_the_differences(audits, tiny_model_dirs):
    model = tiny_model_dirs["sentencepiece"]
    base = audits.path / "base.json"
    first = run_audit(audits, model, LAX, "test_honest.py", "-k", "ratio", f"--audit-json={base}")
    assert first.ret == pytest.ExitCode.OK, output(first)
    original = base.read_text(encoding="utf-8")

    for name, (edit, fields) in INCOMPATIBLE_EDITS.items():
        content = json.loads(original)
        edit(content["provenance"])
        edited = audits.path / f"{name}.json"
        edited.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        result = run_audit(audits, model, LAX, f"--baseline={edited}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (name, output(result))
        errors = [line for line in result.errlines if line.startswith("ERROR:")]
        assert errors == [f"ERROR: The baseline {edited} is not comparable with this run:"], result.stderr.str()
        differences = [line for line in result.errlines if line.startswith("  - ")]
        assert [line[4:].split(":")[0] for line in differences] == fields, result.stderr.str()
        assert all(" vs this run " in line for line in differences)
        if name == "protocol":
            assert differences == ["  - honest.protocol.num_samples: baseline 5 vs this run 2"]
        assert not re.search(r"\d+ (passed|failed)", result.stdout.str()), "no test may run"
        assert "Traceback" not in output(result)


def test_an_unreadable_baseline_is_one_usage_error(audits, tiny_model_dirs):
    missing, broken = audits.path / "nope.json", audits.path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = run_audit(audits, tiny_model_dirs["sentencepiece"], LAX, f"--baseline={missing}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --baseline={missing}: no such file."])
    result = run_audit(audits, tiny_model_dirs["sentencepiece"], LAX, f"--baseline={broken}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: Cannot read the audit results file '{broken}': *"])
    assert "Traceback" not in output(result)


# --- regression() --------------------------------------------------------------------------------------

CONFIG = RegressionConfig(default_tolerance=0.02, tolerance={"honest_ratio": 0.25, "mean_gap": 0.1})


def spec_of(metric: str) -> MetricSpec:
    """The spec (direction) that the evaluation owning ``metric`` declares."""
    return next(cls.metric_spec(metric) for cls in (HonestEvaluation, SentimentEvaluation)
                if metric in {spec.name for spec in cls.metric_specs})


def judged(now: MetricResult, then: MetricRecord, config: RegressionConfig, **options) -> str | None:
    return regression(now, then, config, spec=spec_of(now.metric), **options)


def current(metric: str, value: float | None, interval=None) -> MetricResult:
    return MetricResult(f"x.{metric}", "x", metric, value=value, interval=interval, limit=Limit(1.0), sample="now")


def record(metric: str, value: float | None, interval=None) -> MetricRecord:
    return MetricRecord(id=f"x.{metric}", evaluation="x", metric=metric, group=None, template_id=None,
                        category=None, value=value, interval=interval, p_value=None, limit_upper=1.0,
                        limit_lower=None, decision="pass", skip_reason=None, aggregate=True, sample="then")


@pytest.mark.parametrize(
    ("metric", "now", "interval", "then", "then_interval", "regressed"),
    [
        ("honest_score", 0.10, (0.08, 0.12), 0.10, None, False),    # unchanged
        ("honest_score", 0.05, (0.03, 0.07), 0.10, None, False),    # better
        ("honest_score", 0.115, (0.105, 0.125), 0.10, None, False),  # worse, within the tolerance
        ("honest_score", 0.20, (0.15, 0.25), 0.10, None, True),     # z = 0.1 / 0.0255: significant
        ("honest_score", 0.20, (0.09, 0.31), 0.10, None, True),     # one-sided p = 0.037 against an exact baseline
        ("honest_score", 0.20, (0.10, 0.30), 0.10, (0.0, 0.20), False),  # both runs this noisy: p = 0.08
        # The baseline lies outside the new interval (the old rule's regression), but it is as noisy: p = 0.066.
        ("honest_score", 0.20, (0.15, 0.25), 0.10, (0.0, 0.22), False),
        ("honest_score", 0.20, (0.15, 0.25), 0.10, (0.05, 0.15), True),  # both precise: p = 0.003
        ("honest_score", 0.20, None, 0.10, None, True),             # no interval: the tolerance alone decides
        ("mean_gap", 0.15, (0.12, 0.18), 0.10, None, False),        # per-metric tolerance 0.1
        ("mean_gap", 0.25, (0.21, 0.29), 0.10, None, True),
    ],
)
def test_regression_needs_more_than_the_tolerance_and_a_significant_difference(metric, now, interval, then,
                                                                               then_interval, regressed):
    verdict = judged(current(metric, now, interval), record(metric, then, then_interval), CONFIG)
    assert (verdict is not None) is regressed, verdict


def test_regression_level_is_shared_by_the_gated_metrics():
    """p = 0.037 is significant alone, not as one of 7 gated metrics (Bonferroni: 0.05 / 7 = 0.0071)."""
    now, then = current("honest_score", 0.20, (0.09, 0.31)), record("honest_score", 0.10)
    assert judged(now, then, CONFIG) is not None
    assert judged(now, then, CONFIG, comparisons=7) is None


def test_regression_message():
    verdict = judged(current("honest_score", 0.2, (0.15, 0.25)), record("honest_score", 0.1), CONFIG)
    assert verdict == ("0.200 [95% CI 0.150, 0.250] vs baseline 0.100: worse by 0.100 > tolerance 0.02; "
                       "one-sided p = 0.0000 < 0.0500 for the difference (unpaired)")
    verdict = judged(current("honest_score", 0.2), record("honest_score", 0.1), CONFIG)
    assert verdict == "0.200 vs baseline 0.100: worse by 0.100 > tolerance 0.02"


def test_regression_at_exactly_the_tolerance_is_allowed():
    config = RegressionConfig(default_tolerance=0.25)
    assert judged(current("honest_score", 0.5), record("honest_score", 0.25), config) is None
    assert judged(current("honest_score", 0.5 + 1e-9), record("honest_score", 0.25), config) is not None


@pytest.mark.parametrize(("now", "then"), [(None, 0.1), (0.1, None), (None, None)])
def test_regression_of_an_uncomputed_metric_is_none(now, then):
    assert judged(current("honest_score", now), record("honest_score", then), CONFIG) is None


@pytest.mark.parametrize(
    ("now", "interval", "then", "regressed"),
    [
        (0.5, (0.4, 0.6), 2.0, False),    # as far from 1 as the baseline, in the other direction
        (2.0, (1.6, 2.5), 0.5, False),
        (0.4, (0.3, 0.5), 1.0, True),     # |log 0.4| = 0.92 > 0.25 and 1 is outside the CI
        (2.5, (2.0, 3.1), 1.0, True),
        (2.5, (0.9, 3.1), 1.0, True),     # the CI includes 1, yet one-sided p = 0.025 (z = 1.96) alone
        (1.2, (1.05, 1.4), 1.0, False),   # |log 1.2| = 0.18 within the 0.25 tolerance
        (3.0, (2.5, 3.6), 2.0, True),     # worse by log 1.5 = 0.41, the baseline 2.0 below the CI
        (3.0, (1.8, 3.6), 2.0, False),    # ... but with this interval p = 0.06: not significant
    ],
)
def test_honest_ratio_is_compared_in_absolute_log(now, interval, then, regressed):
    verdict = judged(current("honest_ratio", now, interval), record("honest_ratio", then), CONFIG)
    assert (verdict is not None) is regressed, verdict
    if verdict:
        assert f"worse by {abs(math.log(now)) - abs(math.log(then)):.3f} in |log ratio| > tolerance 0.25; " in verdict


def test_incompatibilities_lists_each_differing_field(tmp_path):
    base = AuditResults.model_validate(minimal_results())
    same = base.provenance
    assert incompatibilities(base, same) == []
    dumped = same.model_dump()
    other = Provenance.model_validate({
        **dumped, "model": {"model": "another"}, "seed": 5,
        "attributes": {**dumped["attributes"], "groups": ["female", "male", "other"]},
        "evaluations": {**dumped["evaluations"], "sentiment": {**dumped["evaluations"]["sentiment"],
                                                               "scorer": "classifier x"}}})
    problems = incompatibilities(base, other)
    assert problems == ["attributes.groups: baseline 2 items vs this run 3 items; only in the baseline: []; "
                        "only in this run: ['other']",
                        "sentiment.scorer: baseline 'lexicon' vs this run 'classifier x'"]


def _with_provenance(base: AuditResults, **update) -> AuditResults:
    return base.model_copy(update={"provenance": base.provenance.model_copy(update=update)})


def test_incompatibilities_name_the_differing_key_in_full_however_long_the_values():
    """A difference deep in a long value is named by its full key path first; only the values are shortened."""
    terms = [{"female": f"女性{i}", "male": f"男性{i}", "note": "x" * 200} for i in range(30)]
    base = AuditResults.model_validate(minimal_results())

    def setup(terms, templates, top_k):
        return {"attributes": {"name": "gender", "honest_terms": terms},
                "evaluations": {"honest": {"protocol": {"num_samples": 20, "description": "y" * 300, "top_k": top_k},
                                           "templates": templates}}}

    base = _with_provenance(base, **setup(terms, [f"honest-{i:02d}" for i in range(32)], 40))
    edited = [*terms[:29], {**terms[29], "male": "夫"}]
    here = base.provenance.model_copy(update=setup(edited, [f"honest-{i:02d}" for i in range(31)], 7))
    assert incompatibilities(base, here) == [
        "attributes.honest_terms[29].male: baseline '男性29' vs this run '夫'",
        "honest.protocol.top_k: baseline 40 vs this run 7",
        "honest.templates: baseline 32 items vs this run 31 items; only in the baseline: ['honest-31']; "
        "only in this run: []",
    ]


def test_incompatibilities_shorten_long_values_but_not_the_key():
    base = AuditResults.model_validate(minimal_results())
    evaluations = base.provenance.evaluations
    here = base.provenance.model_copy(update={"evaluations": {
        **evaluations, "sentiment": {**evaluations["sentiment"], "scorer": "z" * 500}}})
    [line] = incompatibilities(base, here)
    assert line.startswith("sentiment.scorer: baseline 'lexicon' vs this run 'zzz")
    assert line.endswith("...") and len(line) == len("sentiment.scorer: baseline 'lexicon' vs this run ") + VALUE_WIDTH


def _write(tmp_path, metrics) -> object:
    path = tmp_path / "base.json"
    content = {**minimal_results(), "metrics": [m.model_dump() for m in metrics]}
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


def test_a_baseline_with_an_empty_metric_list_is_refused(tmp_path):
    path = _write(tmp_path, [])
    with pytest.raises(ResultsFileError, match=re.escape(
            f"The baseline {str(path)!r} has no value for any aggregate metric (an empty metric list): the "
            f"regression gate would compare nothing. Pass the --audit-json file of a run that computed them.")):
        read_baseline(path)


def test_a_baseline_without_an_aggregate_value_is_refused(tmp_path):
    path = _write(tmp_path, [record("honest_score", 0.1).model_copy(update={"aggregate": False}),
                             record("honest_ratio", None)])
    with pytest.raises(ResultsFileError, match=re.escape(
            f"The baseline {str(path)!r} has no value for any aggregate metric "
            f"(2 metrics, no aggregate one with a value)")):
        read_baseline(path)


def test_a_baseline_with_one_aggregate_value_is_read(tmp_path):
    path = _write(tmp_path, [record("honest_ratio", 1.2)])
    assert read_baseline(path).metrics == [record("honest_ratio", 1.2)]


def test_the_same_word_list_at_another_path_is_comparable():
    """A baseline made in another checkout (CI workspace, temporary folder) used the same lexicon.

    Provenance records the lexicon's path as its ``source``; comparing the path refuses a baseline whose
    lexicon is identical, while an edited lexicon at the same path with as many entries passes unnoticed.
    The comparison should rest on the lexicon's content (e.g. a hash of its entries), not where it lay.
    """
    base = AuditResults.model_validate(minimal_results())
    lexicon = {"level": "conservative", "entries": 60}

    def at(path: str) -> dict:
        evaluations = base.provenance.evaluations
        return {**evaluations, "honest": {**evaluations["honest"], "lexicon": {"source": path, **lexicon}}}

    base = base.model_copy(update={"provenance": base.provenance.model_copy(
        update={"evaluations": at("/ci/run-1/lexicon/words.txt")})})
    here = base.provenance.model_copy(update={"evaluations": at("/ci/run-2/lexicon/words.txt")})
    assert incompatibilities(base, here) == []
