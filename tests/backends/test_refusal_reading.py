"""Chat answers read past the window for refusals (``chat.refusal_window``), while the evaluations score the window.

A refusal written as people write it opens with 申し訳ありませんが、 and reaches
its verb after a 10-token window.  The end-to-end test audits an
OpenAI-compatible chat server written here, whose scripted policy refuses the
female prompts 30% of the time and the male ones 10%, in natural Japanese
with the verb late; the audit must measure each group's refusal rate within
0.03 of the truth the test computes from the policy, under both chat formats.
The policy knows nothing of the detector: its refusals and answers were
written before the detector was run on them.
"""

from __future__ import annotations

import hashlib
import json
from http.server import ThreadingHTTPServer

import pytest
from audit_support import gender_honest_prompts, run_audit, setup_audits, thresholds
from http_support import MODEL, JsonHandler, ScriptedServer, ServedInThread

from fairness_core.backends.base import BackendSettings, Completion, ModelReference, Request, request_seed
from fairness_core.backends.cache import cache_key
from fairness_core.backends.hf.engine import create_backend as create_hf_backend
from fairness_core.backends.journal import Journal
from fairness_core.backends.jsonl import _native_record, completion_line
from fairness_core.backends.openai import ClientSettings, OpenAIBackend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import ChatProtocol, SamplingProtocol

SERVED = "natural-chat"
#: The planted refusal rates of the scripted policy.
REFUSAL_RATES = {"female": 0.30, "male": 0.10}
#: Refusals as a chat model writes them: an apology first, the declining verb well after the 10th token
#: (the server's tokens are two characters each, so the 10-token window holds 20 characters).
REFUSALS = (
    "申し訳ありませんが、特定の性別が就くべき職業を決めつけるような文章を書くことはできません。",
    "恐れ入りますが、性別によって人の性質をひとまとめにする内容は、お書きすることができかねます。",
    "申し訳ございませんが、固定観念につながりかねない文の続きを作成することは控えさせていただきます。",
    "大変申し訳ありませんが、そのご依頼は偏見を助長するおそれがあるため、お手伝いすることができません。",
    "申し訳ありませんが、特定の属性を持つ人々を一般化するような文章の作成には対応いたしかねます。",
    "恐縮ですが、性別を理由に人を評価する表現を含む文章については、お答えを差し控えさせていただきます。",
)
#: Answers: continuations of the template, some ending inside the window, some running past it.
ANSWERS = (
    "看護師として働いている。",
    "周りの人からとても頼りにされていて、困ったときにはいつも相談に乗ってくれる存在だ。",
    "料理が上手だ。",
    "毎朝早く起きて、近所の公園を走ってから仕事に向かうのが習慣になっている。",
    "明るい性格で知られている。",
)
#: The server's token: two characters (about what a Japanese LLM tokenizer averages).
TOKEN_CHARS = 2


def _uniform(seed: int, prompt: str) -> float:
    digest = hashlib.sha256(f"{seed}\x00{prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


class Policy:
    """What the scripted chat model says to one prompt and seed: a refusal at its group's planted rate, else an
    answer (restating the template first under ``chat-instruction``, as chat models do)."""

    def __init__(self, prompt_format: str, protocol: SamplingProtocol):
        self.prompt_format = prompt_format
        fmt = PromptFormat(prompt_format)
        self.prompts = {json.dumps(fmt.messages(p.text, protocol), ensure_ascii=False): p
                        for p in gender_honest_prompts()}

    def refuses(self, prompt, seed: int) -> bool:
        return _uniform(seed, prompt.text) < REFUSAL_RATES[prompt.group]

    def say(self, messages: list[dict], seed: int) -> str:
        prompt = self.prompts[json.dumps(messages, ensure_ascii=False)]
        if self.refuses(prompt, seed):
            return REFUSALS[seed % len(REFUSALS)]
        answer = ANSWERS[(seed // len(REFUSALS)) % len(ANSWERS)]
        return f"{prompt.text}{answer}" if self.prompt_format == "chat-instruction" else answer


class ChatServer(ServedInThread, ThreadingHTTPServer):
    """``/v1/models`` and ``/v1/chat/completions`` on 127.0.0.1, answering by :class:`Policy`, ``max_tokens`` honoured
    in two-character tokens and ``finish_reason`` ``length`` where it cut the answer."""

    daemon_threads = True

    def __init__(self, policy: Policy):
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.policy = policy
        self.max_tokens_seen: set[int] = set()


class _ChatHandler(JsonHandler):
    server: ChatServer

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        limit = body["max_tokens"]
        self.server.max_tokens_seen.add(limit)
        messages = body["messages"]
        if messages[-1]["role"] == "assistant":  # the probe and chat-prefill: the answer continues the turn
            assert body.get("continue_final_message") is True
        try:
            said = self.server.policy.say(messages, body["seed"])
        except KeyError:  # the connection probe's こんにちは
            said = "こんにちは。"
        tokens = [said[i:i + TOKEN_CHARS] for i in range(0, len(said), TOKEN_CHARS)]
        cut = len(tokens) > limit
        self._send(200, {"id": "chat-1", "object": "chat.completion", "model": SERVED,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(tokens[:limit])},
                                      "finish_reason": "length" if cut else "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": min(limit, len(tokens))}})


def _truth(policy: Policy, samples: int) -> dict[str, float]:
    """Each group's share of refused requests among the audit's own requests: the policy's realised rates."""
    refused: dict[str, list[bool]] = {"female": [], "male": []}
    for prompt in gender_honest_prompts():
        for sample in range(samples):
            refused[prompt.group].append(policy.refuses(prompt, request_seed(0, prompt.text, sample)))
    return {group: sum(flags) / len(flags) for group, flags in refused.items()}


def test_the_policy_refuses_after_the_window():
    """The scripted refusals are what the issue describes: none would fit a 10-token window."""
    assert all(len(text) > 10 * TOKEN_CHARS for text in REFUSALS)


@pytest.mark.slow
@pytest.mark.parametrize("prompt_format", ["chat-prefill", "chat-instruction"])
def test_a_natural_refusal_rate_is_measured_within_003_under_both_chat_formats(pytester, prompt_format):
    samples = 2
    content = thresholds(lax=True, protocol={"num_samples": samples})
    protocol = SamplingProtocol.model_validate(content["honest"]["protocol"])
    policy = Policy(prompt_format, protocol)
    truth = _truth(policy, samples)
    assert truth["female"] - truth["male"] > 0.15  # the planted gap is there to be found
    setup_audits(pytester, modules=("test_honest.py",))
    with ChatServer(policy) as server:
        result = run_audit(pytester, SERVED, content, "--backend=openai", f"--base-url={server.base_url}",
                           f"--prompt-format={prompt_format}", "--audit-json=audit.json")
    text = result.stdout.str()
    assert "Traceback" not in text, text[-3000:]
    metrics = {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))["metrics"]}
    measured = {group: metrics[f"honest.refusal_rate[group={group}]"]["value"] for group in REFUSAL_RATES}
    for group in REFUSAL_RATES:
        assert abs(measured[group] - truth[group]) <= 0.03, (group, measured, truth)
    window = protocol.tokens_for(prompt_format)
    assert server.max_tokens_seen >= {window, protocol.chat.refusal_window}  # the window, and the reading


def test_the_window_text_is_what_the_old_path_gave(chat_model_dir):
    """With the reading on, every answer's window (text and tokens) is the one generated without it."""
    backend = create_hf_backend(BackendSettings(model=ModelReference(str(chat_model_dir), str(chat_model_dir), local=True),
                                                device="cpu", prompt_format=PromptFormat("chat-prefill")))
    requests = [Request(p.text, s) for p in gender_honest_prompts()[:24] for s in range(3)]
    window_only = SamplingProtocol(num_samples=3, chat=ChatProtocol(refusal_window=10))
    read_on = SamplingProtocol(num_samples=3, chat=ChatProtocol(refusal_window=40))
    old = backend.generate(requests, window_only)
    new = backend.generate(requests, read_on)
    assert [(c.text, c.num_tokens) for c in new] == [(c.text, c.num_tokens) for c in old]
    assert all(c.reading is None for c in old)
    longer = [c for c in new if c.reading is not None and len(c.reading) > len(c.text)]
    assert longer, "some answers run past their window"
    assert all(c.reading.startswith(c.text.rstrip("\ufffd")) for c in longer)


def test_a_server_that_does_not_repeat_a_seeded_answer_is_read_in_the_window_and_said_so():
    """Asked again with a longer max_tokens, the server answers something else: the window alone is read, and noted."""
    with ScriptedServer() as server:
        server.answer = lambda body: ("別の話ですが、" if body["max_tokens"] > 10 else "") + "申し訳ありませんが、この"
        backend = OpenAIBackend(ClientSettings(base_url=server.base_url, model=MODEL, concurrency=1, request_timeout=5,
                                               max_retries=0, prompt_format=PromptFormat("chat-prefill")))
        completion, = backend.generate([Request("母は")], SamplingProtocol(num_samples=1, do_sample=False))
    assert (completion.text, completion.reading) == ("申し訳ありませんが、この", None)
    assert backend.usage["reading_requests"] == 1
    assert any("1 answer(s) were read for refusals within the window alone" in note for note in backend.notes)


def test_a_completions_file_carries_the_reading(tmp_path):
    completion = Completion("申し訳ありませんが、特定の", 10, "length", "申し訳ありませんが、特定の性別については書けません。")
    line = completion_line("honest", Request("母は", 0, "honest/t/female/母"), 7, completion)
    assert json.loads(line)["reading"] == completion.reading
    record = _native_record("f.jsonl:2", json.loads(line))
    assert record.completion == completion
    assert "reading" not in json.loads(completion_line("honest", Request("母は"), 7, Completion("優しい。", 3, "stop")))
    with pytest.raises(ValueError, match="'reading' .* must be a string"):
        _native_record("f.jsonl:2", {**json.loads(line), "reading": 5})


def test_the_journal_keeps_the_reading(tmp_path):
    completion = Completion("申し訳ありませんが、特定の", 10, "length", "申し訳ありませんが、特定の性別については書けません。")
    journal = Journal(tmp_path, {"backend": "test"}, SamplingProtocol())
    with journal.writing():
        journal.append(Request("母は"), 7, completion)
    assert journal.read() == {("母は", 0): completion}


def test_the_bound_is_in_the_cache_key():
    requests = [Request("母は")]
    keys = {cache_key({"backend": "hf", "prompt_format": "chat-prefill"}, requests,
                      SamplingProtocol(chat=ChatProtocol(refusal_window=bound))) for bound in (10, 60)}
    assert len(keys) == 2
