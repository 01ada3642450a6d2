"""A chat model over a real ``transformers serve``'s ``/v1/chat/completions`` agrees with the in-process engine.

The server serves the committed ``demo:chat-biased`` (a ChatML template in its
tokenizer) on 127.0.0.1 and a free port, offline, and is stopped by pid.  The
audit asks it in ``chat-instruction``, the format ``transformers serve``'s chat
route can take (it cannot continue an assistant message), and reads its answers
as the audit does (the echo rule, the refusal detector).  Each group's HONEST
score among the answers and its refusal rate must agree with the in-process
engine's: their 95% intervals overlap: the two routes sample
differently (one process-wide generator on the server), so the same
distribution is what is checked, not the same texts.
"""

from __future__ import annotations

import pytest
from audit_support import gender_honest_prompts, shares_agree
from http_support import ServerStartError, transformers_serve

from fairness_core.api.answers import AnswerReader
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.scoring import HonestCompletions, evaluate_honest
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.run.demo_names import resolve_demo

pytestmark = pytest.mark.slow

FORMAT = "chat-instruction"
#: 3 templates x 30 pairs x 4 samples: 360 outputs per group and route.
PROTOCOL = SamplingProtocol(num_samples=4)
GROUPS = ("female", "male")


@pytest.fixture(scope="module")
def served_chat_model(tmp_path_factory):
    model = str(resolve_demo("demo:chat-biased"))
    try:
        with transformers_serve(model, tmp_path_factory.mktemp("serve-chat") / "serve.log") as base_url:
            yield base_url, model
    except ServerStartError as err:
        pytest.fail(str(err))


def _rates(results: HonestCompletions, group: str) -> dict[str, tuple[int, int]]:
    counts = results.refusal_counts.totals(group)
    honest = results.count(group=group)
    return {"honest_score": (honest.hits, honest.total), "refusal_rate": counts}


def test_chat_instruction_over_transformers_serve_agrees_with_in_process(served_chat_model, tmp_path, capsys):
    base_url, folder = served_chat_model
    prompts = gender_honest_prompts(honest_templates()[:3], identity_pairs())
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    reader = AnswerReader(PromptFormat(FORMAT))
    served = OpenAIBackend(ClientSettings(base_url=base_url, model=folder, concurrency=4, request_timeout=120,
                                          prompt_format=PromptFormat(FORMAT), journal_dir=tmp_path / "journal"))
    assert served.route == "chat" and served.request_format == "transformers"
    model, tokenizer = load_model(folder, device="cpu")
    local = HFBackend(model, tokenizer, batch_size=64, prompt_format=PromptFormat(FORMAT))
    over_http = evaluate_honest(served, prompts, PROTOCOL, matcher, groups=GROUPS, reader=reader)
    in_process = evaluate_honest(local, prompts, PROTOCOL, matcher, groups=GROUPS, reader=reader)
    for group in GROUPS:
        theirs, ours = _rates(over_http, group), _rates(in_process, group)
        with capsys.disabled():
            print(f"\n{group}: " + "; ".join(f"{name} over HTTP {h}/{n} = {h / n:.3f}, in process "
                                            f"{ours[name][0]}/{ours[name][1]} = {ours[name][0] / ours[name][1]:.3f}"
                                            for name, (h, n) in theirs.items()))
        for name in theirs:
            assert shares_agree(theirs[name], ours[name]), f"{group} {name}: {theirs[name]} vs {ours[name]}"
    assert over_http.refused and in_process.refused  # the model refuses: the check is not of an empty share
