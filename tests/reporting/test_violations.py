"""The text of an audit violation: what a reviewer reads instead of a traceback."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.honest.evidence import hurtful_evidence
from fairness_core.evaluations.honest.matching import Match
from fairness_core.evaluations.honest.scoring import ScoredCompletion
from fairness_core.evaluations.sentiment.evidence import sentiment_evidence
from fairness_core.evaluations.sentiment.scoring import ScoredSentiment, SentimentCompletions
from fairness_core.reporting.violations import EVIDENCE_LIMIT, violation_message


def test_violation_message_layout():
    message = violation_message(
        metric="honest_score", where=["group female", "all 2 templates"],
        verdict="observed 0.500 > threshold 0.100", sample="1 hurtful of 2 completions",
        evidence=["母は｜馬鹿だ   ← 馬鹿 (馬鹿, ddf)"],
    )
    assert message == (
        "AUDIT VIOLATION: honest_score\n"
        "  group female\n"
        "  all 2 templates\n"
        "  observed 0.500 > threshold 0.100\n"
        "  sample: 1 hurtful of 2 completions\n"
        "  evidence (1 of 1):\n"
        "    母は｜馬鹿だ   ← 馬鹿 (馬鹿, ddf)"
    )


def test_violation_message_without_evidence_has_no_evidence_block():
    message = violation_message(metric="m", where=[], verdict="v", sample="s")
    assert message == "AUDIT VIOLATION: m\n  v\n  sample: s"


def test_violation_message_limits_the_evidence_and_reports_the_total():
    evidence = [f"line {i}" for i in range(EVIDENCE_LIMIT + 5)]
    message = violation_message(metric="m", where=[], verdict="v", sample="s", evidence=evidence, evidence_total=40)
    assert f"  evidence ({EVIDENCE_LIMIT} of 40):" in message.splitlines()
    assert f"    line {EVIDENCE_LIMIT - 1}" in message
    assert f"line {EVIDENCE_LIMIT}" not in message


def test_hurtful_evidence_lists_hurtful_rows_only():
    prompt = Prompt("trait-01", "female", "母", "母は")
    rows = [
        ScoredCompletion(prompt, "優しい。", ()),
        ScoredCompletion(prompt, "馬鹿で殺された", (Match("馬鹿", "ddf", "馬鹿", 0, 2), Match("殺す", "re", "殺さ", 3, 5))),
    ]
    [evidence] = hurtful_evidence(rows)
    assert (evidence.prompt, evidence.completion, evidence.marked) == ("母は", "馬鹿で殺された", ((0, 2), (3, 5)))
    line = evidence.text()
    assert line.startswith("母は｜【馬鹿】で【殺さ】れた   ← ")
    assert "馬鹿 (馬鹿, ddf" in line and "殺さ (殺す, re" in line


def test_hurtful_evidence_is_drawn_across_templates():
    """The HONEST ratio's evidence is not the first dozen hurtful rows, which would all be the first template's."""
    hit = (Match("馬鹿", "ddf", "馬鹿", 0, 2),)
    rows = [ScoredCompletion(Prompt(f"trait-0{t}", "female", "母", f"母{t}は"), f"馬鹿{i}", hit)
            for t in (1, 2, 3) for i in range(EVIDENCE_LIMIT)]
    shown = hurtful_evidence(rows)[:EVIDENCE_LIMIT]
    assert [e.prompt for e in shown[:6]] == ["母1は", "母2は", "母3は"] * 2
    assert {e.prompt for e in shown} == {"母1は", "母2は", "母3は"}
    assert [e.completion for e in shown if e.prompt == "母2は"] == [f"馬鹿{i}" for i in range(4)]


# --- sentiment evidence ------------------------------------------------------------------------------------

def sentiment_rows(scores, *, group="female", template_id="name-09") -> SentimentCompletions:
    return SentimentCompletions(tuple(
        ScoredSentiment(Prompt(template_id, group, f"名{i}", f"名{i}と一緒に働いてみて、"), f"文{i}", score)
        for i, score in enumerate(scores)), groups=("female", "male"))


def notes(evidence) -> list[str]:
    return [e.note for e in evidence]


def test_sentiment_evidence_never_calls_a_top_score_most_negative():
    """demo:biased, name-09, female: 15 completions score 1.00, 2 score 0.00 (a real case)."""
    results = sentiment_rows([1.0] * 7 + [0.0] + [1.0] * 7 + [0.0] + [1.0])
    assert notes(sentiment_evidence(results, ("female",), template_id="name-09")) == [
        "female, most negative, score 0.00", "female, most negative, score 0.00",
        "female, most positive, score 1.00", "female, most positive, score 1.00", "female, most positive, score 1.00",
    ]


def test_sentiment_evidence_of_equal_scores_says_so():
    results = sentiment_rows([0.0] * 5)
    assert notes(sentiment_evidence(results, ("female",))) == ["female, all 5 completions score 0.00"] * 3


def test_sentiment_evidence_of_few_rows_shows_no_row_twice():
    shown = sentiment_evidence(sentiment_rows([0.2, 0.9, 0.5]), ("female",))
    assert [(e.completion, e.note) for e in shown] == [("文0", "female, most negative, score 0.20"),
                                                      ("文1", "female, most positive, score 0.90")]


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=12), st.integers(1, 4))
def test_sentiment_evidence_labels_are_truthful(scores, count):
    shown = sentiment_evidence(sentiment_rows(scores), ("female",), count=count)
    negative = [scores[int(e.completion[1:])] for e in shown if "most negative" in e.note]
    positive = [scores[int(e.completion[1:])] for e in shown if "most positive" in e.note]
    completions = [e.completion for e in shown]
    assert len(completions) == len(set(completions)) <= 2 * count
    assert all(n < max(scores) for n in negative) and all(p > min(scores) for p in positive)
    assert not negative or not positive or max(negative) <= min(positive)
    assert all(f"score {scores[int(e.completion[1:])]:.2f}" in e.note for e in shown)
