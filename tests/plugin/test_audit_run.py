"""End to end: ``pytest --model=<tiny GPT-2>`` on the real HONEST audit module, through ``pytester``.

The model is the session's tiny SentencePiece GPT-2 (conftest.py).  Its
tokenizer learned the identity terms from the prompts, so the random model
emits them; a word list of identity terms is therefore a lexicon whose words
this model does produce, and thresholds of zero are certain to be exceeded.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from audit_support import write_thresholds

from fairness_core.api.generic_options import MODEL, THRESHOLDS
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.reporting.violations import EVIDENCE_LIMIT

OPTION_MODEL, OPTION_THRESHOLDS = MODEL.flag, THRESHOLDS.flag

REPO = Path(__file__).resolve().parents[2]
AUDIT_MODULE = REPO / "fairness_core" / "evaluations" / "honest" / "test_honest.py"
TINY_PROTOCOL = {"num_samples": 2, "max_new_tokens": 4}
# The sentiment scorer is loaded at start-up; the offline one needs no hub access.  Every run
# generates anew and writes no generation cache outside the test's folder.
ISOLATED = ("--sentiment", "lexicon", "--no-cache")



def thresholds(**honest) -> dict:
    """The repository's thresholds.yaml with a tiny protocol and the given HONEST limits."""
    raw = yaml.safe_load((REPO / "thresholds.yaml").read_text(encoding="utf-8"))
    raw["honest"] = {"protocol": TINY_PROTOCOL, **honest}
    for section in raw.values():
        if isinstance(section, dict) and "protocol" in section:
            # a protocol of one greedy answer per question stays one answer: only its length shrinks
            one = section["protocol"].get("num_samples") == 1
            section["protocol"] = dict(section["protocol"], **(
                {"max_new_tokens": TINY_PROTOCOL["max_new_tokens"]} if one else TINY_PROTOCOL))
    return raw


STRICT = thresholds(
    max_honest_score={"female": 0.0, "male": 0.0}, max_template_score=0.0, max_ratio=1.0, min_hits_for_ratio=0,
)
LAX = thresholds(
    max_honest_score={"female": 1.0, "male": 1.0}, max_template_score=1.0, max_ratio=1000.0, min_hits_for_ratio=0,
)


@pytest.fixture(scope="session")
def audit_model(tiny_model_dirs) -> Path:
    return tiny_model_dirs["sentencepiece"]


@pytest.fixture
def audit_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding a copy of the real audit module and an identity-term word list."""
    shutil.copy(AUDIT_MODULE, pytester.path / AUDIT_MODULE.name)
    words = [term for pair in identity_pairs() for term in (pair.female, pair.male)]
    (pytester.path / "words.txt").write_text("# identity terms\n" + "\n".join(words) + "\n", encoding="utf-8")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "--device", "cpu", *ISOLATED, *args)


def audit_args(pytester, model: Path, content: dict) -> list[str]:
    return [OPTION_MODEL, str(model), OPTION_THRESHOLDS, str(write_thresholds(pytester, content)),
            "--lexicon", str(pytester.path / "words.txt")]


def collected(result: pytest.RunResult) -> int:
    """The number of audit tests the run collected (before any -k), less those the plugin leaves out (a chat-format
    test in a completion run)."""
    found = re.search(r"^collected (\d+) items(?: / (\d+) deselected)?", result.stdout.str(), re.MULTILINE)
    return int(found[1]) - int(found[2] or 0)


def usage_errors(result: pytest.RunResult) -> list[str]:
    return [line for line in result.errlines if line.startswith("ERROR:")]


def assert_single_usage_error(result: pytest.RunResult, *fragments: str) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = usage_errors(result)
    assert len(errors) == 1, result.stderr.str()
    text = result.stderr.str()
    for fragment in fragments:
        assert fragment in text
    assert "Traceback" not in text + result.stdout.str()
    assert not re.search(r"\d+ (passed|failed)", result.stdout.str()), "no test may run"
    return text


# --- full runs ------------------------------------------------------------------------------

def test_strict_thresholds_fail_with_audit_violations_and_no_traceback(audit_dir, audit_model):
    result = run(audit_dir, *audit_args(audit_dir, audit_model, STRICT), "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert collected(result) >= 2 * len(honest_templates())  # one test per template and group, and more
    assert outcomes.get("failed", 0) + outcomes.get("passed", 0) + outcomes.get("skipped", 0) == collected(result)
    assert outcomes["failed"] >= 2 * len(honest_templates()), outcomes

    output = result.stdout.str()
    assert "Traceback" not in output and "def test_" not in output
    assert "Traceback" not in result.stderr.str()

    failures = result.reprec.getfailures()
    assert len(failures) == outcomes["failed"]
    for report in failures:
        text = str(report.longrepr)
        assert text.startswith("AUDIT VIOLATION: "), text
        assert re.search(r"\n  observed \d+\.\d{3}\b.* [<>] threshold \d+\.\d{3}", text), text
        assert re.search(r"\n  sample: ", text), text
        assert "Traceback" not in text and "def test_" not in text

    by_test = {report.nodeid.split("::")[1]: str(report.longrepr) for report in failures}
    group = by_test["test_group[gender-female]"]
    assert group.startswith("AUDIT VIOLATION: honest_score\n  group female, all ")
    match = re.search(r"\n  sample: (\d+) hurtful of (\d+) completions", group)
    hits, total = int(match[1]), int(match[2])
    assert total == len(honest_templates()) * len(identity_pairs()) * TINY_PROTOCOL["num_samples"]
    assert 0 < hits <= total
    assert re.search(rf"\n  observed {hits / total:.3f}\b.* > threshold 0\.000", group), group
    evidence = re.search(r"\n  evidence \((\d+) of (\d+)\):\n", group)
    assert evidence and int(evidence[2]) == hits and int(evidence[1]) == min(hits, EVIDENCE_LIMIT)
    # Each evidence line: prompt｜completion ← matched surface (lemma, category ...)
    assert re.search(r"\n    \S+｜.*   ← .+ \(.+, unlisted", group), group

    # Failure lines in the short summary are the violations' first lines.
    result.stdout.fnmatch_lines(["FAILED test_honest.py::test_group?gender-female? - AUDIT VIOLATION: honest_score*"])


def test_category_limit_on_a_word_list_is_a_violation(audit_dir, audit_model):
    """Entries of a plain word list have the category 'unlisted', which thresholds.yaml accepts as a limit."""
    strict = dict(STRICT, honest=dict(STRICT["honest"], max_category_score={"unlisted": 0.0}))
    result = run(audit_dir, *audit_args(audit_dir, audit_model, strict), "test_honest.py::test_category")
    output = result.stdout.str()
    assert "Traceback" not in output and "def test_" not in output and "KeyError" not in output, output
    result.assert_outcomes(failed=2)
    for report in result.reprec.getfailures():
        assert str(report.longrepr).startswith("AUDIT VIOLATION: "), report.longrepr
        assert "unlisted" in str(report.longrepr)


def test_lax_thresholds_pass(audit_dir, audit_model):
    result = run(audit_dir, *audit_args(audit_dir, audit_model, LAX))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and "error" not in outcomes, outcomes
    # Without max_category_score limits the two category tests skip and say so.
    assert outcomes["passed"] + outcomes.get("skipped", 0) == collected(result)
    assert outcomes["passed"] >= collected(result) - 2


def test_report_header_names_the_model_protocol_and_lexicon(audit_dir, audit_model):
    result = run(audit_dir, *audit_args(audit_dir, audit_model, LAX), "-k", "ratio")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines([
        f"fairness audit: model={audit_model}, *device=cpu, backend=hf, tokenizer=*, kernels=*, seed=0, decision rule point",
        "  attribute set: gender (groups: female, male)",
        f"  HONEST: {len(honest_templates()) * 2 * len(identity_pairs())} prompts x 2 samples, "
        f"lexicon {audit_dir.path / 'words.txt'} (conservative, {2 * len(identity_pairs())} entries); "
        "group and category limits by the confident rule",
        "  sentiment: not selected",
    ])


def test_builtin_lexicon_is_used_without_lexicon_option(audit_dir, audit_model):
    args = [OPTION_MODEL, str(audit_model), OPTION_THRESHOLDS, str(write_thresholds(audit_dir, LAX)), "-k", "ratio"]
    result = run(audit_dir, *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)


# --- usage errors ------------------------------------------------------------------------------

def test_missing_model_directory_is_one_usage_error(audit_dir):
    args = audit_args(audit_dir, Path("/no/such/model"), LAX)
    result = run(audit_dir, *args)
    text = assert_single_usage_error(result, "--model=/no/such/model", "no such directory")
    assert "ERROR: --model=/no/such/model: no such directory." in text


def test_model_option_missing_is_one_usage_error(audit_dir):
    result = run(audit_dir, OPTION_THRESHOLDS, str(write_thresholds(audit_dir, LAX)))
    assert_single_usage_error(result, "The fairness audits need a model", f"{OPTION_MODEL}=")


def test_misspelled_thresholds_key_is_one_usage_error_naming_it(audit_dir, audit_model):
    content = thresholds(max_honest_score={"female": 1.0, "male": 1.0}, max_template_score=1.0, max_ratio=2.0,
                         max_ratoi=3.0)
    result = run(audit_dir, *audit_args(audit_dir, audit_model, content))
    assert_single_usage_error(result, "honest.max_ratoi: unknown key 'max_ratoi'; allowed keys here: ")


def test_missing_thresholds_file_is_one_usage_error(audit_dir, audit_model):
    result = run(audit_dir, OPTION_MODEL, str(audit_model), OPTION_THRESHOLDS, str(audit_dir.path / "nope.yaml"))
    assert_single_usage_error(result, "Cannot read the thresholds file", "nope.yaml")


def test_missing_lexicon_is_one_usage_error(audit_dir, audit_model):
    args = audit_args(audit_dir, audit_model, LAX)
    args[-1] = str(audit_dir.path / "nope.txt")
    result = run(audit_dir, *args)
    assert_single_usage_error(result, "--lexicon=", "nope.txt", "no such file")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--device", "tpu", "argument --device: must be auto, cpu, cuda or cuda:N. Got 'tpu' instead."),
        ("--batch-size", "0", "argument --batch-size: must be auto or a positive whole number. Got '0' instead."),
        ("--batch-size", "many", "argument --batch-size: must be auto or a positive whole number. Got 'many' instead."),
    ],
)
def test_bad_option_value_is_one_usage_error(audit_dir, audit_model, option, value, message):
    result = run(audit_dir, *audit_args(audit_dir, audit_model, LAX), f"{option}={value}")
    assert_single_usage_error(result, message)


def test_bad_dtype_is_a_usage_error(audit_dir, audit_model):
    result = run(audit_dir, *audit_args(audit_dir, audit_model, LAX), "--dtype=float8")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "argument --dtype: must be one of auto, float32, bfloat16, float16. Got 'float8' instead." in result.stderr.str()


def test_unit_tests_need_no_model(pytester):
    """Without audit tests the plugin stays out of the way: no --model needed."""
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_adaptive_sampling_stops_by_rounds_says_why_and_repeats_itself(audit_dir, audit_model):
    """Limits of 0 cannot be shown to hold: a run stops early only on a settled failure, else at the budget."""
    content = thresholds(max_honest_score={"female": 0.0, "male": 0.0}, max_template_score=1.0, max_ratio=1.0,
                         min_hits_for_ratio=0)
    content["honest"]["protocol"] = dict(TINY_PROTOCOL, num_samples=6)
    runs = []
    for name in ("a.json", "b.json"):
        result = run(audit_dir, *audit_args(audit_dir, audit_model, content), "--sampling=adaptive",
                     f"--audit-json={audit_dir.path / name}")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["sampling: honest: adaptive, * of 6 samples per prompt (* completions, *): *"])
        runs.append(json.loads((audit_dir.path / name).read_text(encoding="utf-8")))
    first, second = (r["provenance"]["sampling"]["honest"] for r in runs)
    assert first == second and first["mode"] == "adaptive"
    assert first["ending"] in ("failure", "budget") and first["samples_per_prompt"] <= 6
    assert runs[0]["completions"] == runs[1]["completions"]
    assert len(runs[0]["completions"]["honest"]) == first["completions"]
