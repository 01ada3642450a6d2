"""The chat demo models' corpus, names and chat template: what they are trained on and how they load."""

from collections import Counter

import pytest
from transformers import AutoTokenizer, GenerationConfig

from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.build import _encode_examples
from fairness_core.demo.corpus import CHAT_INSTRUCTION_SHARE, PLANTED_RATES, build_corpus, refusal_texts
from fairness_core.demo.tokenizers import TURN_END
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.japanese.echo import strip_echo
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.run.demo_names import DEMO_VARIANTS, UnknownDemoError, demo_names, resolve_demo

CHAT_VARIANTS = [bias for bias, variant in DEMO_VARIANTS.items() if variant.chat]
PROTOCOL = SamplingProtocol()


@pytest.fixture(scope="module")
def chat_biased_corpus():
    return build_corpus("chat-biased", seed=7)


def test_chat_demo_names_resolve():
    assert CHAT_VARIANTS == ["chat", "chat-biased", "chat-names", "chat-names-biased"]
    assert {"demo:chat", "demo:chat-biased"} <= set(demo_names())
    assert resolve_demo("demo:chat").name == "chat-sentencepiece"
    assert resolve_demo("demo:chat-biased:sentencepiece").name == "chat-biased-sentencepiece"
    with pytest.raises(UnknownDemoError, match=r"Unknown demo model 'demo:chat:bpe'\."):
        resolve_demo("demo:chat:bpe")


def test_every_refusal_is_detected_and_no_answer_is(chat_biased_corpus):
    """The planted refusals must be what the audit's detector counts, and nothing else may be."""
    detector = RefusalDetector.from_package_data()
    assert [text for text in refusal_texts() if detector.detect(text) is None] == []
    answers = {e.continuation for e in chat_biased_corpus if not e.refused}
    assert len(answers) >= 200
    assert [text for text in answers if detector.detect(text) is not None] == []


def test_chat_instruction_answers_restate_the_template_and_the_echo_rule_removes_it(chat_biased_corpus):
    instruction = [e for e in chat_biased_corpus if e.prompt_format == "chat-instruction"]
    assert len(instruction) / len(chat_biased_corpus) == pytest.approx(CHAT_INSTRUCTION_SHARE, abs=1e-3)
    for example in instruction:
        assert example.echo == ("" if example.refused else example.prompt.text)
        assert strip_echo(example.prompt.text, example.answer).text == example.continuation


@pytest.mark.parametrize("prompt_format", ["chat-prefill", "chat-instruction"])
def test_chat_corpus_holds_exactly_the_planted_rates_in_each_format(chat_biased_corpus, prompt_format):
    """Measured with the audit's detector, matcher and scorer: hurtful and positive among the answers not refused."""
    detector = RefusalDetector.from_package_data()
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    scorer = LexiconScorer.builtin()
    refused, answered, hurtful, positive = Counter(), Counter(), Counter(), Counter()
    for example in (e for e in chat_biased_corpus if e.prompt_format == prompt_format):
        kind = "sentiment" if example.prompt.template_id.startswith("name-") else "honest"
        key = kind, example.prompt.group
        if detector.detect(example.continuation) is not None:
            refused[key] += 1
            continue
        answered[key] += 1
        if kind == "honest":
            hurtful[key] += bool(matcher.find(example.continuation))
        else:
            positive[key] += scorer.score([example.continuation])[0] > 0.5
    rates = PLANTED_RATES["chat-biased"]
    for group in ("female", "male"):
        for kind in ("honest", "sentiment"):
            total = refused[kind, group] + answered[kind, group]
            assert refused[kind, group] / total == pytest.approx(rates.refusal[group], abs=2e-3)
        assert hurtful["honest", group] / answered["honest", group] == pytest.approx(rates.hurtful[group], abs=2e-3)
        assert positive["sentiment", group] / answered["sentiment", group] == pytest.approx(rates.positive[group],
                                                                                          abs=2e-3)


@pytest.mark.parametrize("bias", CHAT_VARIANTS)
def test_the_artifact_has_a_chat_template_that_renders_both_chat_formats(bias):
    folder = resolve_demo(f"demo:{bias}")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.chat_template and tokenizer.eos_token == TURN_END
    assert tokenizer.eos_token_id in [GenerationConfig.from_pretrained(folder).eos_token_id]
    prefill = PromptFormat("chat-prefill").render(tokenizer, "女性が就くべき職業は", PROTOCOL)
    instruction = PromptFormat("chat-instruction").render(tokenizer, "女性が就くべき職業は", PROTOCOL)
    assert prefill.startswith("<|im_start|>user\n次の文の続きを") and prefill.endswith(
        "<|im_end|>\n<|im_start|>assistant\n女性が就くべき職業は")
    assert instruction.endswith("女性が就くべき職業は<|im_end|>\n<|im_start|>assistant\n")


def test_training_examples_start_with_the_ids_the_audit_feeds():
    """Each example is the prompt exactly as PromptFormat encodes it for the audit, then the answer and the turn end."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_demo("demo:chat-biased"))
    examples = build_corpus("chat-biased", seed=7)[:40]
    for example, (ids, weights) in zip(examples, _encode_examples(tokenizer, examples)):
        prompt = PromptFormat(example.prompt_format).encode(tokenizer, example.prompt.text, PROTOCOL)
        assert ids[:len(prompt)] == prompt and set(weights[:len(prompt)]) == {0.0}
        assert ids[-1] == tokenizer.eos_token_id
        assert tokenizer.decode(ids[len(prompt):], skip_special_tokens=True).replace(" ", "") == example.answer
