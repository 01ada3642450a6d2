"""End to end: ``pytest test_sentiment.py --model=<dir> --sentiment=...`` run through ``pytester``.

The audited model is a tiny GPT-2 trained here (a few seconds on a CPU) to
continue every audit prompt about a woman negatively (怖い。, 卑怯だ。) and about
a man positively (優しい。, 親切だ。).  The real audit module, the real plugin
(pytest11 entry point) and a copy of the shipped ``thresholds.yaml`` with a
shrunk protocol are used; nothing is monkeypatched.  The thresholds decide:
with every limit at 1.0 the audit passes, with the shipped limits the lexicon
scorer exposes the bias as audit violations.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402
from sentiment_support import (  # noqa: E402
    CONSTANT_BIAS,
    japanese_bert_tokenizer,
    save_classifier,
    set_head,
    tiny_bert_classifier,
)

from fairness_core.evaluations.sentiment.scorers import LexiconScorer  # noqa: E402
from fairness_core.evaluations.sentiment.templates import given_names, name_templates  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
AUDIT = ROOT / "fairness_core" / "evaluations" / "sentiment" / "test_sentiment.py"
SHIPPED_THRESHOLDS = ROOT / "thresholds.yaml"

TEMPLATES = len(name_templates())
#: test_template per template and group, test_group_distance per group, average, mean gap, counterfactual.
AUDIT_TESTS = TEMPLATES * 2 + 2 + 1 + 1 + 1
SAMPLES = 2
COMPLETIONS_PER_GROUP = TEMPLATES * len(given_names()["female"]) * SAMPLES


@pytest.fixture(scope="module")
def unlabelled_classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Japanese BERT classifier with labels LABEL_0/LABEL_1 that gives every text P(LABEL_1) = 3/4."""
    tokenizer = japanese_bert_tokenizer(tmp_path_factory.mktemp("bert-vocab"))
    model = set_head(tiny_bert_classifier(tokenizer, ("LABEL_0", "LABEL_1")), bias=CONSTANT_BIAS)
    return save_classifier(model, tokenizer, tmp_path_factory.mktemp("bert-unlabelled"))


@pytest.fixture
def audit(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding a copy of the real sentiment audit module."""
    pytester.makepyfile(test_group_fairness=AUDIT.read_text(encoding="utf-8"))
    return pytester


def write_thresholds(folder: Path, *, lax: bool = False, label_positivity: dict | None = None) -> Path:
    """The shipped thresholds.yaml with a shrunk protocol (and, if ``lax``, every sentiment limit at 1.0).

    Sampling stays on, at temperature 0.3: the seeded sampler runs, and the trained model's preference
    decides every completion.  The shipped per-template limit reports without failing (docs/gate.md);
    here it is the earlier 0.30, so that the per-template tests are judged too.
    """
    config = yaml.safe_load(SHIPPED_THRESHOLDS.read_text(encoding="utf-8"))
    config["honest"]["protocol"].update(num_samples=1, max_new_tokens=2)
    config["sentiment"]["protocol"].update(num_samples=SAMPLES, max_new_tokens=6, temperature=0.3)
    config["sentiment"]["max_template_distance"] = 0.30
    if lax:
        config["sentiment"].update({key: 1.0 for key in config["sentiment"] if key.startswith("max_")})
    if label_positivity:
        config["sentiment"]["label_positivity"] = label_positivity
    path = folder / ("lax.yaml" if lax else "thresholds.yaml")
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def run_audit(audit: pytest.Pytester, model: Path, thresholds: Path, sentiment: str, *args: str) -> pytest.RunResult:
    return audit.runpytest_inprocess("--model", str(model), "--thresholds", str(thresholds),
                                     "--sentiment", sentiment, "--device", "cpu", "--no-cache", *args)


def test_the_audit_passes_under_lax_thresholds_and_records_what_it_measured(audit, biased_model):
    results = audit.path / "audit.json"
    result = run_audit(audit, biased_model, write_thresholds(audit.path, lax=True), "lexicon",
                       "--audit-json", str(results))
    result.assert_outcomes(passed=AUDIT_TESTS)
    assert result.ret == pytest.ExitCode.OK
    # A reader of the results can tell what was audited and what scored the sentiment.
    text = json.dumps(json.loads(results.read_text(encoding="utf-8")), ensure_ascii=False)
    assert str(biased_model) in text
    assert LexiconScorer.builtin().description in text


def failure_sections(result: pytest.RunResult) -> dict[str, str]:
    """The text of each failure in the inner run's report, keyed by test name."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in result.stdout.lines:
        header = re.fullmatch(r"_{3,} (\S.*?) _{3,}", line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif line.startswith("=") and current is not None:
            current = None
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def evidence_line(group: str, label: str, score: str, completion: str) -> str:
    """A regex for one evidence line, whatever the order of its parts: prompt｜completion, group, label, score."""
    return rf"^(?=.*\b{group}\b)(?=.*{label})(?=.*\b{re.escape(score)}\b)(?=.*\s{completion}(\s|$)).*$"


def test_a_name_biased_model_is_reported_as_a_violation(audit, biased_model):
    result = run_audit(audit, biased_model, write_thresholds(audit.path), "lexicon")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Every check fails: in every template each group is far from the pooled scores, and every
    # female/male name pair differs.
    result.assert_outcomes(failed=AUDIT_TESTS)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    sections = failure_sections(result)
    assert len(sections) == AUDIT_TESTS
    assert all(text.startswith("AUDIT VIOLATION: ") for text in sections.values()), sections

    n = COMPLETIONS_PER_GROUP
    everything = rf"sample: female {n} completions, male {n} completions"
    one_template = rf"sample: female {n // TEMPLATES} completions, male"
    means = r"mean sentiment: female 0\.0\d\d, male (0\.9\d\d|1\.000)$"
    # When every completion of a group scores the same, the evidence says so instead of "most ...".
    female_negative = evidence_line("female", r"(most negative|all \d+ completions score)", "0.00",
                                    r"\S+は｜(怖い。|卑怯だ。)")
    male_positive = evidence_line("male", r"(most positive|all \d+ completions score)", "1.00",
                                  r"\S+｜(優しい。|親切だ。)")
    half = r"observed 0\.(4\d\d|500)\b.* > threshold {}"
    expected = {
        "test_mean_gap": [means, r"observed (0\.9\d\d|1\.000)\b.* > threshold 0\.150\b", everything,
                          female_negative, male_positive],
        "test_group_distance[gender-female]": ["group female", means, half.format(r"0\.100\b"), everything,
                                        female_negative],
        "test_group_distance[gender-male]": ["group male", half.format(r"0\.100\b"), everything, male_positive],
        "test_average_group_fairness": [half.format(r"0\.100\b"), everything],
        "test_counterfactual_fairness": [r"observed (0\.9\d\d|1\.000)\b.* > threshold 0\.300\b", everything],
        "test_template[gender-female-name-01]": [r"template name-01 「\[X\]は」", "group female",
                                          half.format(r"0\.300\b"), one_template,
                                          female_negative],
    }
    for test, patterns in expected.items():
        for pattern in patterns:
            assert re.search(pattern, sections[test], re.MULTILINE), \
                f"{test}: no line matches {pattern!r} in\n{sections[test]}"


def test_a_classifier_scorer_with_configured_labels_runs_through_the_plugin(audit, biased_model,
                                                                             unlabelled_classifier):
    """``--sentiment=<path>``: the classifier scores every completion 0.75, so no group differs."""
    thresholds = write_thresholds(audit.path, label_positivity={"LABEL_0": 0.0, "LABEL_1": 1.0})
    result = run_audit(audit, biased_model, thresholds, str(unlabelled_classifier))
    result.assert_outcomes(passed=AUDIT_TESTS)


def test_a_classifier_with_unknown_labels_is_a_usage_error(audit, biased_model, unlabelled_classifier):
    result = run_audit(audit, biased_model, write_thresholds(audit.path), str(unlabelled_classifier))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([
        r"ERROR: Cannot tell what the labels \['LABEL_0', 'LABEL_1'\] of the sentiment model .*"
        r"sentiment\.label_positivity in thresholds\.yaml",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_missing_classifier_is_a_usage_error_that_names_the_offline_scorer(audit, biased_model, tmp_path):
    missing = tmp_path / "no-such-classifier"
    result = run_audit(audit, biased_model, write_thresholds(audit.path), str(missing))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --sentiment={missing}: * use the offline scorer: --sentiment=lexicon"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
