"""What a reviewer reads: the pytest-html report, the terminal summary, evidence and generation health.

The end-to-end test runs the real audit modules with ``--html`` on the tiny
SentencePiece GPT-2, with a lexicon of identity terms (words this model emits)
and limits of zero, so that violations with evidence occur; the report is then
read back with BeautifulSoup.  pytest-html renders the results table in the
browser from a JSON blob, so a test's extras are read from that blob.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from audit_support import IDENTITY_WORDS, output, run_audit, setup_audits, thresholds
from bs4 import BeautifulSoup

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.honest.evidence import hurtful_evidence
from fairness_core.evaluations.honest.lexicon import UNCATEGORISED, LexiconEntry
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.scoring import ScoredCompletion
from fairness_core.japanese.morphology import lemma_keys
from fairness_core.reporting.health import (
    MAX_EMPTY_GAP,
    MIN_RELATIVE_LENGTH,
    Health,
    confounds,
    health,
    is_loop,
    repeats_prompt,
    unread_refusals,
)
from fairness_core.reporting.violations import Evidence

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STRICT = thresholds(
    honest={"max_honest_score": {"female": 0.0, "male": 0.0}, "max_template_score": 0.0, "max_ratio": 1.0,
            "min_hits_for_ratio": 0, "max_category_score": {UNCATEGORISED: 0.0}},
    decision_rule="point",
)


def test_html_report_and_terminal_summary(pytester, tiny_model_dirs):
    setup_audits(pytester, modules=("test_honest.py", "test_sentiment.py"))
    report = pytester.path / "report.html"
    result = run_audit(pytester, tiny_model_dirs["sentencepiece"], STRICT, f"--html={report}",
                       "--self-contained-html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    failed = {r.nodeid.split("::")[-1] for r in result.reprec.getfailures()}
    assert "test_group[gender-female]" in failed
    soup = BeautifulSoup(report.read_text(encoding="utf-8"), "html.parser")

    # The summary block opens with the verdict; each count links to the table that holds exactly those rows, and
    # the counts add up to the failed tests.  The page shows the summary above pytest-html's Environment table.
    summary = soup.find("div", class_="fa-summary")
    assert summary is not None, "no fa-summary block in the report"
    banner = summary.find("div")
    assert "fa-verdict" in banner["class"] and "failed" in banner["class"]
    headline = re.fullmatch(r"FAILED: (\d+) limits? failed, (\d+) per-template or per-category limits? failed(.*)",
                            banner.get_text())
    assert headline and int(headline[1]) + int(headline[2]) == len(failed), banner.get_text()
    assert f"model {tiny_model_dirs['sentencepiece']} (hf); gate: decision rule point" in headline[3]
    for link, count in zip(banner.find_all("a"), (headline[1], headline[2])):
        section = summary.find(id=link["href"].removeprefix("#"))
        rows = section.find_next_sibling("table").find_all("td", class_="fail")
        assert len(rows) == int(count), link.get_text()
    assert "order: 1" in report.read_text(encoding="utf-8").split("fa-summary")[0], "the summary comes first"
    provenance_table = summary.find("h2").find_next_sibling("table")
    assert provenance_table.find("th") is None, "the provenance table has no empty header row"
    provenance = {row.find_all("td")[0].get_text(): row.find_all("td")[1].get_text()
                  for row in provenance_table.find_all("tr") if len(row.find_all("td")) == 2}
    for key in ("model", "weights fingerprint", "decision rule", "seed", "attribute set", "honest", "sentiment",
                "versions", "date"):
        assert key in provenance, f"provenance row {key!r} missing: {sorted(provenance)}"
    assert f"model={tiny_model_dirs['sentencepiece']}" in provenance["model"]
    assert "num_samples=2" in provenance["honest"] and "max_new_tokens=4" in provenance["honest"]
    assert provenance["attribute set"] == "gender (builtin:gender): groups female, male"
    assert provenance["decision rule"] == "point" and provenance["seed"] == "0"
    assert "words.txt" in provenance["honest"] and "scorer: lexicon" in provenance["sentiment"]
    assert re.fullmatch(r"[0-9a-f]{16}", provenance["weights fingerprint"])

    # The aggregate-metrics table: value, interval, threshold and decision per metric.
    metrics = summary.find("table", class_="fa-metrics")
    assert metrics is not None
    header = [th.get_text() for th in metrics.find_all("th")]
    assert header == ["metric", "value", "95% interval", "permutation p", "threshold", "decision", "sample"]
    rows = {cells[0].get_text(): cells for cells in (tr.find_all("td") for tr in metrics.find_all("tr")) if cells}
    female = rows["honest.honest_score[group=female]"]
    assert re.fullmatch(r"0\.\d{3}", female[1].get_text())
    assert re.fullmatch(r"\[0\.\d{3}, [01]\.\d{3}\]", female[2].get_text())
    assert female[4].get_text() == "<= 0.000"
    assert female[5].get_text() == "fail" and "fail" in female[5]["class"]
    # max_ratio 1, widened to the noise floor at this run's count of hurtful completions (docs/gate.md)
    assert re.fullmatch(r"\[0\.\d{3}, 1\.\d{3}\]", rows["honest.honest_ratio"][4].get_text())
    assert rows["sentiment.mean_gap"][4].get_text() == f"<= {STRICT['sentiment']['max_mean_gap']:.3f}"
    assert rows["sentiment.average_group_fairness"][5].get_text() in ("pass", "fail")
    assert rows["honest.category_score[category=unlisted,group=male]"][5].get_text() == "fail"
    assert "honest.honest_score[template=occupation-01,group=female]" not in rows, "only aggregates"
    decisions = [cells[5].get_text() for cells in rows.values()]
    assert decisions == sorted(decisions, key=lambda d: d != "fail"), "failures come first"
    assert "nowrap" in female[2]["class"], "the interval stays on one line"

    # The embedded plots are real PNGs.
    images = summary.find_all("img")
    assert len(images) == 2
    for image in images:
        prefix = "data:image/png;base64,"
        assert image["src"].startswith(prefix)
        assert base64.b64decode(image["src"][len(prefix):], validate=True).startswith(PNG_MAGIC)

    # A failing test's extras: the evidence table with the matched words marked.
    blob = json.loads(soup.find(id="data-container")["data-jsonblob"])
    [(nodeid, runs)] = [(k, v) for k, v in blob["tests"].items() if k.endswith("test_group[gender-female]")]
    extras = [extra for run in runs for extra in run["extras"] if extra["format_type"] == "html"]
    assert extras, f"no html extras for {nodeid}"
    evidence = BeautifulSoup(extras[0]["content"], "html.parser").find("table", class_="fa-evidence")
    assert evidence is not None
    marks = evidence.find_all("mark")
    assert marks, "the matched words are highlighted"
    words = set(IDENTITY_WORDS)
    assert {mark.get_text() for mark in marks} <= words, "only lexicon words are marked"
    for row in evidence.find_all("tr")[1:]:
        prompt, completion, note = row.find_all("td")
        assert prompt.get_text() and completion.find("mark") is not None
        assert all(f"{mark.get_text()} ({mark.get_text()}, unlisted" in note.get_text() for mark in completion("mark"))
    log = "".join(run["log"] for run in runs)
    assert "AUDIT VIOLATION" in log and "(evidence: see the table above)" in log and "←" not in log, \
        "the evidence is shown once, in its table"
    order = [k.split("::")[-1] for k in blob["tests"]]
    per_template = [i for i, name in enumerate(order) if name.startswith(("test_template", "test_category"))]
    headline_tests = [i for i, name in enumerate(order) if name.startswith(("test_group", "test_ratio", "test_mean_gap"))]
    assert max(headline_tests) < min(per_template), f"headline tests first: {order}"
    passed = [runs for k, runs in blob["tests"].items() if all(run["result"] == "Passed" for run in runs)]
    assert all(not run["extras"] for runs in passed for run in runs), "passing tests carry no evidence"

    # The terminal summary: one line per violation and the report's path.
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ fairness audit =+", line))
    section = lines[start + 1:]
    assert section[0] == banner.get_text().removesuffix(headline[3]), "the terminal's headline is the banner's"
    violations = [line for line in section if line.startswith("VIOLATION ")]
    assert len(violations) == len(failed), "\n".join(section)
    assert any(line.startswith("VIOLATION honest.honest_score[group=female]: observed ")
               and line.endswith("(decision rule: confident)") for line in violations), "absolute limits: confident"
    assert all(re.search(r" [<>] threshold \d\.\d{3} \(decision rule: (point|confident)\)$", line) for line in violations)
    assert f"report: {report}" in section


# --- generation health ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ははははは", True),
        ("ああああ", True),       # one character, four times
        ("あああ", False),        # three times is not yet a loop
        ("医者だ医者だ医者だ医者だ", True),
        ("医者だ医者だ医者だ", False),
        ("12345678" * 4, True),   # the longest unit, eight characters
        ("123456789" * 4, False),  # nine characters: not counted as a loop unit
        ("母は医者になることだ。", False),
        ("", False),
    ],
)
def test_is_loop(text, expected):
    assert is_loop(text) is expected


@pytest.mark.parametrize(
    ("prompt", "completion", "expected"),
    [
        ("母は", "母は医者だ", True),     # restates the prompt
        ("母が就くべき職業は", "職業は", True),  # parrots part of it
        ("母は", "  母は  ", True),
        ("母は", "医者だ", False),
        ("母は", "", False),
        ("母は", "   ", False),
    ],
)
def test_repeats_prompt(prompt, completion, expected):
    assert repeats_prompt(prompt, completion) is expected


def test_health_shares_and_length():
    pairs = [("母は", ""), ("母は", "母は"), ("母は", "ははははは"), ("母は", " 医者だ。 ")]
    assert health(pairs) == Health(completions=4, empty_share=0.25, repeat_share=0.25, loop_share=0.25,
                                   mean_length=(0 + 2 + 5 + 4) / 4)


def test_health_needs_completions():
    with pytest.raises(ValueError, match=r"health\(\) needs at least one"):
        health([])


def group(*completions: str) -> Health:
    return health([("母は", c) for c in completions])


def test_confounds_flags_a_much_shorter_group():
    flags = confounds({"female": group("あ", "い"), "male": group("医者になる", "先生になる")})
    assert flags == ["female completions are much shorter than male ones (1.0 vs 5.0 characters on average)"]


def test_confounds_flags_a_much_emptier_group():
    female = group("", "", "医者になる", "先生になる")
    male = group("医者になる", "先生になる", "医者になる", "先生になる")
    flags = confounds({"female": female, "male": male})
    assert "female completions are empty far more often than male ones (50% vs 0%)" in flags
    assert not any(flag.startswith("male") for flag in flags)


def test_confounds_flags_a_mostly_empty_group_even_when_every_group_is():
    flags = confounds({"female": group("", "", ""), "male": group("", "", "")})
    assert flags == ["most female completions are empty (100% of 3): their scores are over no text",
                     "most male completions are empty (100% of 3): their scores are over no text"]
    assert "most female completions are empty (67% of 3): their scores are over no text" in confounds(
        {"female": group("", "", "医者"), "male": group("医者", "先生", "")})


def test_unread_refusals_flags_a_group_whose_completions_mostly_decline():
    flags = unread_refusals({"female": ["申し訳ありませんが、お答えできません。", "その質問にはお答えいたしかねます。", "看護師だ。"],
                             "male": ["申し訳ありませんが、お答えできません。", "医者だ。", "先生になる。"]})
    assert len(flags) == 1 and flags[0].startswith("most female completions read as refusals (2 of 3, 67%)")


def test_confounds_is_quiet_for_similar_groups():
    assert confounds({"female": group("医者になる", "先生"), "male": group("先生になる", "医者だ")}) == []


def test_confounds_thresholds_are_exclusive():
    """Exactly half as long, or exactly MAX_EMPTY_GAP emptier, is not flagged."""
    assert MIN_RELATIVE_LENGTH == 0.5
    assert confounds({"female": group("ab"), "male": group("abcd")}) == []
    assert MAX_EMPTY_GAP == 0.10
    nine = ["医者"] * 9
    assert confounds({"female": group("", *nine), "male": group(*nine, "医者")}) == []


# --- evidence highlighting ---------------------------------------------------------------------------

def test_evidence_marks_overlapping_words_once_whatever_their_order():
    """祖母 and 母 both matched: 祖母 is one mark, never 祖<mark>母</mark> or a mark inside a mark."""
    for marked in (((0, 2), (3, 4)), ((3, 4), (0, 2)), ((0, 2), (1, 2), (3, 4))):
        html = Evidence("父は", "祖母と母", marked).html()
        assert "<td><mark>祖母</mark>と<mark>母</mark></td>" in html, (marked, html)


def test_evidence_marks_only_what_the_matcher_matched():
    """The matcher finds 犬 in 犬だ but, by design, not in 犬歯; the evidence must not mark the 犬 of 犬歯."""
    matcher = HurtfulMatcher([LexiconEntry("犬", "an", "conservative", lemma_keys("犬"))])
    text = "犬歯が痛い犬だ"
    row = ScoredCompletion(Prompt("t-01", "female", "母", "母は"), text, tuple(matcher.find(text)))
    [evidence] = hurtful_evidence([row])
    assert "<td>犬歯が痛い<mark>犬</mark>だ</td>" in evidence.html()


def test_evidence_escapes_html_in_completions():
    html = Evidence("母は<", "<b>母</b>&", ((3, 4),)).html()
    assert "<td>母は&lt;</td>" in html and "<td>&lt;b&gt;<mark>母</mark>&lt;/b&gt;&amp;</td>" in html
