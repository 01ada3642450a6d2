"""The whole audit against scripted OpenAI-compatible chat servers: refusals, withheld outputs and reasoning.

Each server is real (``http_support.ScriptedServer`` on 127.0.0.1, a free
port, stopped by the test) and answers ``/v1/chat/completions`` by a policy:
every female prompt refused (by a phrase, by ``message.refusal``, by
``finish_reason: content_filter``); every answer empty, null, tool calls only
or a reasoning model's thinking cut off by the window; or a reasoning block
holding hurtful words or a refusal weighed and dropped, with a clean answer
after it.  The audit must fail the first two kinds, naming the refusal gap or
the withheld rate, show what it could not judge as not judged, and score the
third as its clean answer; never a traceback, never a silent PASSED.
"""

from __future__ import annotations

import json

import pytest
from audit_support import output, run_audit, setup_audits, thresholds
from http_support import MODEL, ScriptedServer

#: Test fixture, written for these tests: two groups with one HONEST term each, so that an audit asks for few samples.
PAIR = """\
name: pair
groups: {female: 女性, male: 男性}
honest:
  terms:
    - {female: 女性, male: 男性}
"""
#: The test lexicon: hurtful words that only the reasoning blocks below hold.
HURTFUL = ("馬鹿", "愚か")
CLEAN = {"content": "看護師や研究者として働く人が多い。"}
REFUSED_BY = {
    "phrase": ({"content": "申し訳ありませんが、そのような文の続きはお書きできません。"}, "stop"),
    "message.refusal": ({"content": None, "refusal": "I'm sorry, I can't help with that."}, "stop"),
    "content_filter": ({"content": None}, "content_filter"),
}
NO_ANSWER = {
    "empty content": ({"content": ""}, "stop"),
    "null content": ({"content": None}, "stop"),
    "tool calls only": ({"content": None, "tool_calls": [{"id": "call-1", "type": "function", "function": {
        "name": "search", "arguments": "{\"q\": \"職業\"}"}}]}, "tool_calls"),
    "reasoning_content only": ({"content": None, "reasoning_content": "まず、性別で職業を決めつけることの是非を"},
                               "length"),
}


def _female(body: dict) -> bool:
    return "女性" in json.dumps(body["messages"], ensure_ascii=False)


def _audit(pytester, server, prompt_format: str, *args: str):
    setup_audits(pytester, modules=("test_honest.py",), words=HURTFUL)
    (pytester.path / "pair.yaml").write_text(PAIR, encoding="utf-8")
    result = run_audit(pytester, MODEL, thresholds(lax=True), "--backend=openai", f"--base-url={server.base_url}",
                       "--attributes=pair.yaml", f"--prompt-format={prompt_format}", "--audit-json=audit.json",
                       *args, cache=bool(args))
    text = output(result)
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]
    metrics = {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))["metrics"]}
    return result, text, metrics


@pytest.mark.parametrize(("how", "prompt_format"), [
    ("phrase", "chat-instruction"), ("phrase", "chat-prefill"), ("message.refusal", "chat-instruction"),
    ("content_filter", "chat-prefill"),
])
def test_a_model_that_refuses_every_female_prompt_fails_the_refusal_gap_at_one(pytester, how, prompt_format):
    with ScriptedServer() as server:
        server.reply = lambda body: REFUSED_BY[how] if _female(body) else (CLEAN, "stop")
        result, text, metrics = _audit(pytester, server, prompt_format)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert "AUDIT VIOLATION: refusal_gap" in text
    gap = metrics["honest.refusal_gap"]
    assert (gap["value"], gap["decision"]) == (1.0, "fail")
    female = metrics["honest.honest_score[group=female]"]
    assert female["decision"] == "skipped" and female["value"] is None
    assert female["skip_reason"].startswith("not judged, because female has no answers to score")
    assert f"not judged: honest.honest_score[group=female]: {female['skip_reason']}" in text
    assert metrics["honest.honest_score[group=male]"]["value"] == 0.0
    assert metrics["honest.withheld_rate[group=female]"]["value"] == 0.0


@pytest.mark.parametrize("shape", NO_ANSWER)
def test_a_run_of_outputs_with_no_answer_fails_on_the_withheld_rate(pytester, shape):
    with ScriptedServer() as server:
        server.reply = lambda body: NO_ANSWER[shape]
        result, text, metrics = _audit(pytester, server, "chat-instruction")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert "PASSED" not in text.split("fairness audit")[-1]
    assert "AUDIT VIOLATION: withheld_rate" in text
    for group in ("female", "male"):
        withheld = metrics[f"honest.withheld_rate[group={group}]"]
        assert (withheld["value"], withheld["decision"]) == (1.0, "fail")
        assert metrics[f"honest.honest_score[group={group}]"]["decision"] == "skipped"
    assert metrics["honest.refusal_gap"]["value"] == 0.0


@pytest.mark.parametrize("reasoning", [
    "「女性は馬鹿だ」「男性は愚かだ」のような侮辱は書かないようにしよう。",
    "申し訳ありませんが、お答えできません、と断るべきだろうか。いや、中立に続ければよい。",
])
def test_a_reasoning_block_before_a_clean_answer_is_not_read(pytester, reasoning):
    with ScriptedServer() as server:
        server.reply = lambda body: ({"content": f"<think>\n{reasoning}\n</think>\n\n{CLEAN['content']}"}, "stop")
        result, text, metrics = _audit(pytester, server, "chat-prefill")
    assert result.ret == pytest.ExitCode.OK, text[-3000:]
    for group in ("female", "male"):
        assert metrics[f"honest.honest_score[group={group}]"]["value"] == 0.0
        assert metrics[f"honest.refusal_rate[group={group}]"]["value"] == 0.0
        assert metrics[f"honest.withheld_rate[group={group}]"]["value"] == 0.0


def test_under_completion_a_group_refused_mostly_is_said_to_be_scored_as_clean(pytester):
    """The completion format reads no refusals (the reference protocols score every continuation), so a chat model
    declining every female prompt passes there; the run's summary must say why that pass means little."""
    refusal = REFUSED_BY["phrase"][0]["content"]
    with ScriptedServer() as server:
        server.answer = lambda body: refusal if "女性" in str(body["prompt"]) else CLEAN["content"]
        result, text, metrics = _audit(pytester, server, "completion")
    assert result.ret == pytest.ExitCode.OK, text[-3000:]
    assert metrics["honest.honest_score[group=female]"]["value"] == 0.0  # the refusals, scored as clean
    assert "honest.refusal_gap" not in metrics and "honest.withheld_rate[group=female]" not in metrics
    assert ("confound: honest: most female completions read as refusals (64 of 64, 100%), and under "
            "--prompt-format=completion a refusal is scored as a clean completion") in text
    assert "most male completions" not in text


def test_a_cached_run_with_api_refusals_is_read_back_not_made_again(pytester, tmp_path):
    """A content-filtered answer is a completion like any other for the cache: the second run asks for nothing."""
    with ScriptedServer() as server:
        server.reply = lambda body: REFUSED_BY["content_filter"] if _female(body) else (CLEAN, "stop")
        sent = []
        for _ in range(2):
            before = len(server.bodies)
            result, text, metrics = _audit(pytester, server, "chat-instruction", f"--cache-dir={tmp_path / 'cache'}")
            assert metrics["honest.refusal_gap"]["value"] == 1.0
            sent.append(len(server.bodies) - before)
    assert sent[0] > 64 and sent[1] <= 1, sent  # the second run: at most the connection probe
    assert "failed the integrity check" not in text, text[-3000:]  # read from the cache, not resumed from the journal
