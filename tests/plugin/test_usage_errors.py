"""Every bad input ends the run before anything is generated: exit code 4, no traceback, the bad value named.

One table, one row per mistake a user or a CI job makes; each row runs the real
audit modules through ``pytester`` on the session's tiny model and checks that
pytest ends with its usage-error exit code and a message naming the value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from audit_support import REPO, assert_one_usage_error, thresholds


def _thresholds_with(tmp: Path, edit) -> str:
    raw = thresholds(lax=True)
    edit(raw)
    path = tmp / "edited.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return f"--thresholds={path}"


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _bert_classifier(tmp: Path) -> Path:
    from transformers import BertConfig, BertForSequenceClassification

    folder = tmp / "bert-classifier"
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, num_labels=2)
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def _empty_baseline(tmp: Path) -> Path:
    from audit_support import minimal_results

    return _file(tmp, "empty-baseline.json", json.dumps(minimal_results()))


#: name -> (arguments given a temporary folder, a regex the error output must match).
#: ``{model}`` in an argument stands for the tiny model's folder.
CASES = {
    "no-model": (lambda t: ["--model="], r"The fairness audits need a model: pass --model="),
    "missing-model-folder": (lambda t: ["--model=/no/such/model"], r"--model=/no/such/model: no such directory"),
    "unknown-demo": (lambda t: ["--model=demo:biassed"], r"Unknown demo model 'demo:biassed'\. Did you mean"),
    "unknown-backend": (lambda t: ["--backend=hff"], r"argument --backend: Unknown backend 'hff'\. Did you mean 'hf'\? Available: hf, jsonl, openai, vllm"),
    "unknown-attribute-set": (lambda t: ["--attributes=genderr"], r"genderr"),
    "missing-group-file": (lambda t: ["--attributes=/no/such/set.yaml"], r"/no/such/set\.yaml"),
    "bad-device": (lambda t: ["--device=gpu"], r"argument --device: must be auto, cpu, cuda or cuda:N\. Got 'gpu' instead\."),
    "zero-batch-size": (lambda t: ["--batch-size=0"], r"argument --batch-size: must be auto or a positive whole number\. Got '0'"),
    "word-batch-size": (lambda t: ["--batch-size=big"], r"argument --batch-size: must be .* Got 'big'"),
    "negative-seed": (lambda t: ["--seed=-1"], r"argument --seed: must be a whole number >= 0\. Got '-1' instead\."),
    "fractional-seed": (lambda t: ["--seed=1.5"], r"argument --seed: must be a whole number >= 0\. Got '1\.5' instead\."),
    "bad-dtype": (lambda t: ["--dtype=float8"], r"argument --dtype: must be one of auto, float32, bfloat16, float16\. Got 'float8' instead\."),
    "bad-lexicon-level": (lambda t: ["--lexicon-level=medium"], r"argument --lexicon-level: must be one of conservative, inclusive\. Got 'medium' instead\."),
    "missing-thresholds": (lambda t: ["--thresholds=/no/such.yaml"], r"Cannot read the thresholds file '/no/such\.yaml'"),
    "thresholds-typo": (lambda t: [_thresholds_with(t, lambda r: r["honest"].update(max_ratoi=2))],
                        r"honest\.max_ratoi: unknown key 'max_ratoi'; allowed keys here: .*max_ratio"),
    "thresholds-not-yaml": (lambda t: [f"--thresholds={_file(t, 'bad.yaml', 'honest: [unclosed')}"],
                            r"is not valid YAML"),
    "thresholds-wrong-type": (lambda t: [_thresholds_with(t, lambda r: r["honest"].update(max_ratio="two"))],
                              r"honest\.max_ratio: .*'two'"),
    "thresholds-unknown-group": (
        lambda t: [_thresholds_with(t, lambda r: r["honest"].update(max_honest_score={"female": 1, "male": 1,
                                                                                      "woman": 1}))],
        r"honest\.max_honest_score names unknown group\(s\) \['woman'\]"),
    "thresholds-missing-group": (
        lambda t: [_thresholds_with(t, lambda r: r["honest"].update(max_honest_score={"female": 1}))],
        r"honest\.max_honest_score has no limit for the group\(s\) \['male'\]"),
    "thresholds-bad-rule": (lambda t: [_thresholds_with(t, lambda r: r.update(decision_rule="maybe"))],
                            r"decision_rule: .*'maybe'"),
    "thresholds-rate-above-one": (lambda t: [_thresholds_with(t, lambda r: r["honest"].update(max_template_score=1.5))],
                                  r"honest\.max_template_score: .*1\.5"),
    "missing-lexicon": (lambda t: ["--lexicon=/no/such/lexicon.tsv"], r"--lexicon=/no/such/lexicon\.tsv: no such file"),
    "empty-lexicon": (lambda t: [f"--lexicon={_file(t, 'empty.txt', '# nothing here' + chr(10))}"], r"empty\.txt"),
    "missing-classifier": (lambda t: ["--sentiment=/no/such/classifier"],
                           r"--sentiment=/no/such/classifier: .*--sentiment=lexicon"),
    "missing-baseline": (lambda t: ["--baseline=/no/such/results.json"], r"--baseline=/no/such/results\.json: no such file"),
    "baseline-not-json": (lambda t: [f"--baseline={_file(t, 'b.json', 'not json')}"],
                          r"Cannot read the audit results file '.*b\.json'"),
    "baseline-without-metrics": (lambda t: [f"--baseline={_empty_baseline(t)}"], r"empty-baseline\.json"),
    "not-a-causal-lm": (lambda t: [f"--model={_bert_classifier(t)}"], r"bert-classifier.*causal"),
    "audit-json-is-a-folder": (lambda t: [f"--audit-json={t}"], r"--audit-json=.*folder"),
    "audit-json-under-a-file": (lambda t: [f"--audit-json={_file(t, 'f', '')}/r.json"], r"--audit-json=.*f/r\.json"),
    "html-under-a-file": (lambda t: [f"--html={_file(t, 'g', '')}/r.html"], r"--html=.*g/r\.html"),
    "cache-dir-is-a-file": (lambda t: [f"--cache-dir={_file(t, 'c', '')}"], r"--cache-dir=.*c\b"),
    "two-problems-together": (lambda t: ["--model=/no/such/model", "--lexicon=/no/such/lexicon.tsv"],
                              r"(?s)--model=/no/such/model: no such directory.*/no/such/lexicon\.tsv"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_usage_error_naming_the_value(pytester, tiny_model_dirs, tmp_path, case):
    arguments, message = CASES[case]
    assert_one_usage_error(pytester, tiny_model_dirs, arguments(tmp_path), message)


def test_a_cache_variable_naming_a_file_is_refused_before_anything_loads(pytester, tiny_model_dirs, tmp_path,
                                                                        monkeypatch):
    """The default cache folder is checked at start-up as --cache-dir is, by the name of what set it."""
    monkeypatch.setenv("JA_FAIRNESS_AUDIT_CACHE", str(_file(tmp_path, "cache-file", "")))
    assert_one_usage_error(pytester, tiny_model_dirs, [], r"JA_FAIRNESS_AUDIT_CACHE=.*/cache-file is a file; it must "
                           r"be a folder \(or a path where one can be created\)\.", no_cache=False)


def test_generate_refuses_a_cache_variable_naming_a_file_before_generating(tmp_path):
    done = subprocess.run([sys.executable, "-m", "fairness_core.cli", "generate", "--model=demo",
                           f"--output={tmp_path / 'out.jsonl'}"], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "JA_FAIRNESS_AUDIT_CACHE": str(_file(tmp_path, "cache-file", ""))})
    assert done.returncode == 4, done.stderr
    assert f"JA_FAIRNESS_AUDIT_CACHE={tmp_path / 'cache-file'} is a file; it must be a folder" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out.jsonl").exists()
