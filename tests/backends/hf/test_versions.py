"""The engine's tested transformers range is declared once, checked at start-up, and overridable only on purpose.

The range in ``pyproject.toml`` must be the one the engine checks; a release
outside it ends ``pytest audits`` with one usage error before any completion
(here transformers reports an untested version by monkeypatching), unless
``$JA_FAIRNESS_AUDIT_UNTESTED_TRANSFORMERS=1``, and then the report names it.
The engine's forward keyword for the KV cache is the one the installed
release's model takes.
"""

from __future__ import annotations

import inspect

import pytest
import tomllib
import transformers
from audit_support import REPO, assert_one_usage_error, setup_audits, thresholds, write_thresholds

from fairness_core.backends.hf import versions
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.hf.versions import OVERRIDE_VARIABLE, SUPPORTED_TRANSFORMERS, check_transformers


def test_pyproject_declares_the_range_the_engine_checks():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [d for d in project["dependencies"] if d.startswith("transformers")]
    assert declared == [f"transformers{SUPPORTED_TRANSFORMERS}"]


def test_the_installed_transformers_is_in_the_range():
    assert check_transformers(transformers.__version__, environ={}) is None


@pytest.mark.parametrize("version", ["5.18.2", "5.25.0", "6.0.0", "not-a-version"])
def test_a_release_outside_the_range_is_refused_with_what_to_do(version):
    with pytest.raises(versions.UntestedTransformersError,
                       match=rf"^transformers {version} is installed, but the audit's engine is tested with "
                             rf"transformers >=5\.19,<5\.25 only: .*\(pip install 'transformers>=5\.19,<5\.25'.* "
                             rf"set {OVERRIDE_VARIABLE}=1 to run anyway"):
        check_transformers(version, environ={})


def test_the_override_must_be_exactly_1():
    with pytest.raises(versions.UntestedTransformersError):
        check_transformers("5.25.0", environ={OVERRIDE_VARIABLE: "yes"})


def test_the_engine_passes_its_cache_under_the_keyword_the_model_takes(tiny_model_dirs):
    """5.24 names it ``cache``; 5.19 ``past_key_values`` and would swallow ``cache=`` into ``**kwargs``."""
    model, tokenizer = load_model(str(tiny_model_dirs["bpe"]), device="cpu")
    accepted = inspect.signature(model.forward).parameters
    backend = HFBackend(model, tokenizer)
    assert backend._cache_keyword in accepted and backend._cache_keyword in ("cache", "past_key_values")


def test_an_untested_transformers_ends_the_audit_before_any_completion(pytester, tiny_model_dirs, monkeypatch):
    monkeypatch.setattr(transformers, "__version__", "5.30.0")
    monkeypatch.delenv(OVERRIDE_VARIABLE, raising=False)
    text = assert_one_usage_error(pytester, tiny_model_dirs, [], r"transformers 5\.30\.0 is installed, but the "
                                  r"audit's engine is tested with transformers >=5\.19,<5\.25 only")
    assert "generating:" not in text


def test_an_allowed_untested_transformers_runs_and_the_report_names_it(pytester, tiny_model_dirs, monkeypatch):
    monkeypatch.setattr(transformers, "__version__", "5.30.0")
    monkeypatch.setenv(OVERRIDE_VARIABLE, "1")
    setup_audits(pytester)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--model={tiny_model_dirs['sentencepiece']}", "--device=cpu", "--no-cache",
        f"--thresholds={write_thresholds(pytester, thresholds(lax=True))}", "--sentiment=lexicon",
        f"--lexicon={pytester.path / 'words.txt'}", "-k", "honest")
    text = "\n".join(result.outlines)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text
    assert "transformers=transformers 5.30.0, outside the tested range >=5.19,<5.25 (allowed by " \
           f"{OVERRIDE_VARIABLE}=1)" in text
