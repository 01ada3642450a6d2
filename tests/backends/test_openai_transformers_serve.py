"""The HTTP backend against a real ``transformers serve`` (from ``transformers[serving]``), offline.

The session fixture serves the committed ``demo:biased:bpe`` model on
127.0.0.1 and a free port and stops it by pid afterwards.  The byte-level BPE
flavour, because ``transformers serve`` tokenizes a prompt with the
tokenizer's defaults: a T5-style SentencePiece tokenizer (``demo:biased``)
then appends ``</s>``, and the model continues a text that has ended (the HF
backend's ``encode_prompt`` drops that EOS; on the prompts of 2 templates the
female rate of ``demo:biased`` measured 0.17 over HTTP, 0.33 in process).
"""

from __future__ import annotations

import pytest
from audit_support import gender_honest_prompts
from http_support import ServerStartError, transformers_serve

from fairness_core.backends.base import Request
from fairness_core.backends.cache import CachedBackend
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.corpus import PLANTED_RATES
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.rates import rate_ratio
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.run.demo_names import resolve_demo

pytestmark = pytest.mark.slow

#: 4 templates x 30 pairs x 5 samples: 600 completions per group, about 50 s over HTTP here.
TEMPLATES = 4
PROTOCOL = SamplingProtocol(num_samples=5)
#: About 3 standard errors of a rate measured on 600 completions (0.019 at 0.30, 0.010 at 0.06).
TOLERANCE = {"female": 0.06, "male": 0.04}


@pytest.fixture(scope="session")
def served_model(tmp_path_factory):
    """``(base_url, model path)`` of a ``transformers serve`` process serving demo:biased:bpe."""
    model = str(resolve_demo("demo:biased:bpe"))
    try:
        with transformers_serve(model, tmp_path_factory.mktemp("serve") / "serve.log") as base_url:
            yield base_url, model
    except ServerStartError as err:
        pytest.fail(str(err))


def _client(served_model, tmp_path, **overrides) -> OpenAIBackend:
    base_url, model = served_model
    return OpenAIBackend(ClientSettings(**{"base_url": base_url, "model": model, "concurrency": 4,
                                           "journal_dir": tmp_path / "journal", **overrides}))


def test_planted_bias_is_found_over_http_and_a_rerun_hits_the_cache(served_model, tmp_path):
    backend = _client(served_model, tmp_path)
    assert backend.fingerprint["request_format"] == "transformers"  # it rejected the plain top_k
    assert "repeat only at --concurrency=1" in backend.description["reproducible"]
    cached = CachedBackend(backend, cache_dir=tmp_path / "cache")
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    prompts = gender_honest_prompts(honest_templates()[:TEMPLATES], identity_pairs())
    results = evaluate_honest(cached, prompts, PROTOCOL, matcher, groups=("female", "male"))
    for group, planted in PLANTED_RATES["biased"].hurtful.items():
        measured = results.count(group=group)
        assert measured.total == 600
        assert abs(measured.rate - planted) <= TOLERANCE[group], f"{group}: {measured.rate:.3f} vs {planted}"
    female, male = results.count(group="female"), results.count(group="male")
    assert rate_ratio(hits_a=female.hits, total_a=female.total, hits_b=male.hits, total_b=male.total) >= 3
    requests = backend.usage["requests"]
    assert evaluate_honest(cached, prompts, PROTOCOL, matcher, groups=("female", "male")) == results
    assert (cached.hits, backend.usage["requests"]) == (1, requests)


def test_greedy_completions_match_the_in_process_engine(served_model, tmp_path):
    """``do_sample: false`` reaches the server's generation_config: the same text as the HF backend's greedy."""
    greedy = SamplingProtocol(num_samples=1, do_sample=False)
    requests = [Request(p.text) for p in gender_honest_prompts(honest_templates()[:2], identity_pairs()[:5])]
    model, tokenizer = load_model(served_model[1], device="cpu")
    in_process = HFBackend(model, tokenizer, batch_size=64).generate(requests, greedy)
    over_http = _client(served_model, tmp_path).generate(requests, greedy)
    assert [c.text for c in over_http] == [c.text for c in in_process]
