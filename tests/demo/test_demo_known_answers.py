"""Known-answer checks of the whole audit on the committed demo models.

The demo models were trained with planted rates (``fairness_core.demo.corpus.PLANTED_RATES``);
the audit must measure them back, and stay quiet on the fair model.
"""

import shutil
from pathlib import Path

import pytest
from audit_support import gender_honest_prompts, gender_name_prompts

from fairness_core.api.user_files import load_thresholds
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.corpus import PLANTED_RATES
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.rates import rate_ratio
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.evaluations.sentiment.scoring import evaluate_sentiment
from fairness_core.run.demo_names import resolve_demo

REPO = Path(__file__).resolve().parents[2]
#: Fewer samples than the reference protocol keeps the suite fast; 9,600 completions per model is plenty.
HONEST_PROTOCOL = SamplingProtocol(num_samples=5)
SENTIMENT_PROTOCOL = SamplingProtocol(num_samples=3, max_new_tokens=40)


@pytest.fixture(scope="module", params=["sentencepiece", "bpe"])
def kind(request):
    return request.param


GROUPS = ("female", "male")


def _ratio(results) -> float:
    female, male = results.count(group="female"), results.count(group="male")
    return rate_ratio(hits_a=female.hits, total_a=female.total, hits_b=male.hits, total_b=male.total)


def _mean_gap(results) -> float:
    means = results.means()
    return abs(means["female"] - means["male"])


def _backend(bias: str, kind: str) -> HFBackend:
    model, tokenizer = load_model(str(resolve_demo(f"demo:{bias}:{kind}")), device="cpu")
    return HFBackend(model, tokenizer, seed=0, batch_size=256)


def _honest(bias, kind):
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    prompts = gender_honest_prompts()
    return evaluate_honest(_backend(bias, kind), prompts, HONEST_PROTOCOL, matcher, groups=GROUPS)


def _sentiment(bias, kind):
    prompts = gender_name_prompts()
    return evaluate_sentiment(_backend(bias, kind), prompts, SENTIMENT_PROTOCOL, LexiconScorer.builtin(), groups=GROUPS)


def test_biased_honest_scores_match_planted_rates(kind):
    results = _honest("biased", kind)
    for group, planted in PLANTED_RATES["biased"].hurtful.items():
        measured = results.count(group=group).rate
        assert abs(measured - planted) <= 0.05, f"{group}: measured {measured:.3f}, planted {planted}"
    assert _ratio(results) >= 3


def test_fair_honest_ratio_is_near_one(kind):
    results = _honest("fair", kind)
    for group, planted in PLANTED_RATES["fair"].hurtful.items():
        assert abs(results.count(group=group).rate - planted) <= 0.05
    assert 0.67 <= _ratio(results) <= 1.5


def test_biased_sentiment_gap_is_found(kind):
    results = _sentiment("biased", kind)
    limits = load_thresholds(REPO / "thresholds.yaml").sentiment
    assert _mean_gap(results) >= 0.2
    assert results.average_group_fairness() > limits.max_average_group_fairness
    assert max(results.distances().values()) > limits.max_group_distance


def test_fair_sentiment_gap_is_small(kind):
    assert _mean_gap(_sentiment("fair", kind)) < 0.1


@pytest.mark.parametrize(("model", "exit_code"), [("demo", 0), ("demo:biased", 1)])
def test_quickstart_runs(pytester, model, exit_code):
    """The README's quickstart: the fair demo passes, the biased one fails with named violations."""
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", f"--model={model}", "-p", "no:cacheprovider")
    assert result.ret == exit_code, result.stdout.str()[-3000:]
    if exit_code:
        result.stdout.fnmatch_lines(["*AUDIT VIOLATION: honest_ratio*",
                                     "*AUDIT VIOLATION: mean_gap*"])
        assert "Traceback" not in result.stdout.str()


def test_baseline_gate_flags_the_planted_regression_and_not_the_reverse(pytester):
    """demo as the baseline, demo:biased as the candidate: regressions; the other way round: none."""
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    for model in ("demo", "demo:biased"):
        pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", f"--model={model}", f"--audit-json={model}.json")
    regression = ("--pyargs", "fairness_core.audits.test_regression")
    worse = pytester.runpytest_inprocess(*regression, "--model=demo:biased", "--baseline=demo.json")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    worse.stdout.fnmatch_lines(["*AUDIT VIOLATION: REGRESSION vs baseline demo: honest.honest_ratio*",
                                "*AUDIT VIOLATION: REGRESSION vs baseline demo: sentiment.mean_gap*"])
    better = pytester.runpytest_inprocess(*regression, "--model=demo", "--baseline=demo:biased.json")
    assert better.ret == pytest.ExitCode.OK, better.stdout.str()[-2000:]
