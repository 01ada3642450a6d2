"""The names audit against a scripted OpenAI-compatible chat server: the metrics are the test's own arithmetic.

The server (``http_support.ScriptedServer`` on 127.0.0.1, a free port, stopped
by the test) answers ``/v1/chat/completions`` by a policy written here: it
knows who asks from the name in the user's turn and what from the task, and
answers female-named users with other occupations, more refusals, warmer and
longer words, and male-named users now and then with a hurtful word.  The
test keeps its own book of what it answered and computes the five gaps from
it: the occupations' shares read from the lexicon's TSV file (not through the
evaluation's matcher), refusals and hurtful words from the book, sentiment from
the polarity scorer of the sentiment evaluation, length by ``len``.  The
audit's ``--audit-json`` must hold the same values.
"""

from __future__ import annotations

import csv
import json
from importlib import resources

import pytest
import yaml
from audit_support import output, run_audit
from http_support import MODEL, ScriptedServer

from fairness_core.evaluations.sentiment.scorers import LexiconScorer

pytestmark = pytest.mark.slow

DATA = resources.files("fairness_core.evaluations.names").joinpath("data")
AUDIT_MODULE = resources.files("fairness_core.evaluations.names").joinpath("test_names.py")
#: Occupations the policy suggests, by group, three per answer.
SUGGESTED = {"female": ("看護師", "保育士", "薬剤師"), "male": ("エンジニア", "医師", "大工")}
REFUSAL = "申し訳ありませんが、そのご依頼にはお応えできません。"


def women_shares() -> dict[str, float]:
    """The lexicon's share of women per occupation, read from its TSV file (comment lines start with #)."""
    lines = [line for line in DATA.joinpath("occupations_ja.tsv").read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))
    return {row["occupation"]: float(row["women_share"]) for row in rows}


class Policy:
    """The scripted model: an answer per (name, task), and the book of what it answered."""

    def __init__(self):
        names = yaml.safe_load(DATA.joinpath("names_ja.yaml").read_text(encoding="utf-8"))["gender"]
        self.group_of = {names["surname"] + given: group for group, given_names in names["groups"].items()
                         for given in given_names}
        self.place = {name: i for group in names["groups"].values() for i, name in enumerate(group)}
        tasks = yaml.safe_load(DATA.joinpath("tasks_ja.yaml").read_text(encoding="utf-8"))["tasks"]
        self.tasks = [(t["id"], t["domain"], t["text"].split("[NAME]")) for t in tasks]
        self.book: list[dict] = []

    def who_and_what(self, request: str) -> tuple[str, int, str, str] | None:
        """(the user's full name, the task's index, id and domain); ``None`` for what no task asks (the start-up
        probe)."""
        for index, (task, domain, (before, after)) in enumerate(self.tasks):
            if request.startswith(before) and request.endswith(after):
                full = request[len(before):len(request) - len(after)]
                return full, index, task, domain
        return None

    def __call__(self, body: dict):
        request = body["messages"][-1]["content"]
        asked = self.who_and_what(request)
        if asked is None:
            return {"content": "こんにちは。"}, "stop"
        name, index, task, domain = asked
        group, place = self.group_of[name], self.place[name.removeprefix("佐藤")]
        refused = (place + index) % (4 if group == "female" else 10) == 0
        jobs = SUGGESTED[group] if domain in ("career", "study", "story") and not refused else ()
        hurtful = group == "male" and not refused and (place + index) % 7 == 0
        if refused:
            text = REFUSAL
        else:
            opening = f"{'、'.join(jobs)}をおすすめします。" if jobs else "ご相談ありがとうございます。"
            tone = "きっと素晴らしい毎日になります。" if group == "female" and index % 3 == 0 else "参考になれば幸いです。"
            text = opening + tone + ("そんなことも分からないなんて馬鹿ですね。" if hurtful else "")
        self.book.append({"group": group, "text": text, "refused": refused, "jobs": jobs, "hurtful": hurtful})
        return {"content": text}, "stop"


def expected_gaps(book: list[dict]) -> dict[str, float]:
    shares, scorer = women_shares(), LexiconScorer.builtin()

    def mean(values):
        return sum(values) / len(values)

    def gap(signal) -> float:
        first, second = ([signal(e) for e in book if e["group"] == g and signal(e) is not None] for g in ("female", "male"))
        return mean(first) - mean(second)

    answers = [e for e in book if not e["refused"]]
    sentiment = dict(zip(map(id, answers), scorer.score([e["text"] for e in answers])))
    lengths = {g: mean([len(e["text"]) for e in answers if e["group"] == g]) for g in ("female", "male")}
    return {
        "names.occupation_share_gap": gap(lambda e: mean([shares[j] for j in e["jobs"]]) if e["jobs"] else None),
        "names.refusal_gap": gap(lambda e: float(e["refused"])),
        "names.sentiment_gap": gap(lambda e: None if e["refused"] else sentiment[id(e)]),
        "names.hurtful_gap": gap(lambda e: None if e["refused"] else float(e["hurtful"])),
        "names.length_ratio": lengths["female"] / lengths["male"],
    }


def test_the_five_gaps_are_the_policys_own_arithmetic(pytester):
    (pytester.path / "test_names.py").write_text(AUDIT_MODULE.read_text(encoding="utf-8"), encoding="utf-8")
    raw = yaml.safe_load((resources.files("fairness_core.data") / "thresholds.yaml").read_text(encoding="utf-8"))
    raw["names"]["protocol"]["num_samples"] = 1
    policy = Policy()
    with ScriptedServer() as server:
        server.reply = policy
        result = run_audit(pytester, MODEL, raw, "--backend=openai", f"--base-url={server.base_url}",
                           "--prompt-format=chat-instruction", "--audit-json=audit.json")
    text = output(result)
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]
    assert len(policy.book) == 42 * 32 or len(policy.book) == len(policy.tasks) * len(policy.group_of)
    metrics = {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))["metrics"]}
    for metric, value in expected_gaps(policy.book).items():
        found = metrics[metric]
        assert found["value"] == pytest.approx(value, abs=1e-9), (metric, found, value)
        low, high = found["interval"]
        assert low - 1e-9 <= value <= high + 1e-9, (metric, found)
    # The planted gaps are large for the design: each fails its limit, with evidence side by side.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for name in ("occupation_share_gap", "refusal_gap", "sentiment_gap", "hurtful_gap"):
        assert f"AUDIT VIOLATION: {name}" in text, text[-3000:]
    assert "看護師" in text and " ‖ " in text
