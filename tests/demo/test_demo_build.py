"""The demo corpus, the committed demo models and their names."""

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from transformers import AutoConfig

from fairness_core.backends.vllm import CPU_HEAD_SIZES, head_size
from fairness_core.demo.build import model_shape
from fairness_core.demo.corpus import HURTFUL_WORDS, PLANTED_RATES, build_corpus
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.run.demo_names import ARTIFACTS, UnknownDemoError, demo_names, resolve_demo


@pytest.fixture(scope="module")
def biased_corpus():
    return build_corpus("biased", seed=7)


def test_corpus_is_deterministic(biased_corpus):
    assert build_corpus("biased", seed=7) == biased_corpus
    assert build_corpus("biased", seed=8) != biased_corpus


def test_corpus_holds_exactly_the_planted_rates(biased_corpus):
    """Measured with the audit's own matcher and scorer, not by construction."""
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    scorer = LexiconScorer.builtin()
    hurtful, positive, totals = Counter(), Counter(), Counter()
    for example in biased_corpus:
        kind = "sentiment" if example.prompt.template_id.startswith("name-") else "honest"
        totals[kind, example.prompt.group] += 1
        if kind == "honest":
            hurtful[example.prompt.group] += bool(matcher.find(example.continuation))
        else:
            positive[example.prompt.group] += scorer.score([example.continuation])[0] > 0.5
    for group, rate in PLANTED_RATES["biased"].hurtful.items():
        assert hurtful[group] / totals["honest", group] == pytest.approx(rate, abs=1e-3)
    for group, rate in PLANTED_RATES["biased"].positive.items():
        assert positive[group] / totals["sentiment", group] == pytest.approx(rate, abs=1e-3)


def test_continuations_are_varied(biased_corpus):
    honest = {e.continuation for e in biased_corpus if not e.prompt.template_id.startswith("name-")}
    sentiment = {e.continuation for e in biased_corpus if e.prompt.template_id.startswith("name-")}
    assert len(honest) >= 200 and len(sentiment) >= 40
    assert {word for word in HURTFUL_WORDS if any(word in text for text in honest)} == set(HURTFUL_WORDS)


@pytest.mark.parametrize("folder", sorted(p.name for p in ARTIFACTS.iterdir() if p.is_dir()))
def test_committed_models_were_built_with_the_current_planted_rates(folder):
    """Editing PLANTED_RATES without rebuilding (python -m fairness_core.demo.build) fails here."""
    recorded = json.loads((ARTIFACTS / folder / "demo.json").read_text(encoding="utf-8"))
    assert recorded["planted_rates"] == PLANTED_RATES[recorded["bias"]].record()
    assert folder == f"{recorded['bias']}-{recorded['tokenizer']}"


@pytest.mark.parametrize("folder", sorted(p.name for p in ARTIFACTS.iterdir() if p.is_dir()))
def test_committed_models_have_a_head_size_vllm_can_run(folder):
    """vLLM's CPU attention runs head sizes 32, 64, 80 and up (not 24): the demo models must be servable by it."""
    config = AutoConfig.from_pretrained(ARTIFACTS / folder)
    assert head_size(config) in CPU_HEAD_SIZES, f"{folder}: head size {head_size(config)}"
    recorded = json.loads((ARTIFACTS / folder / "demo.json").read_text(encoding="utf-8"))
    assert recorded["model_shape"] == model_shape(recorded["bias"])


def test_every_demo_name_resolves_to_a_built_model():
    for name in demo_names():
        assert (resolve_demo(name) / "config.json").is_file()
    assert resolve_demo("demo") == resolve_demo("demo:fair:sentencepiece")
    assert resolve_demo("demo:biased:bpe").name == "biased-bpe"
    assert resolve_demo("./demo") is None


def test_unknown_demo_name_suggests_the_closest():
    with pytest.raises(UnknownDemoError, match=r"Unknown demo model 'demo:biassed'\. Did you mean 'demo:biased'\? "
                                               r"Available: demo, "):
        resolve_demo("demo:biassed")


def test_unknown_demo_name_is_one_usage_error(pytester):
    shutil.copy(Path(__file__).resolve().parents[2] / "thresholds.yaml", pytester.path / "thresholds.yaml")
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.fairness_audit\ndef test_x(): pass\n")
    result = pytester.runpytest_inprocess("--model=demo:unfair", "--no-cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: Unknown demo model 'demo:unfair'. Did you mean *"])
