"""Running the real audit modules through ``pytester`` on tiny models, for the end-to-end tests.

A pytester folder gets copies of the audit modules, a ``thresholds.yaml`` built
from the shipped one with shrunk protocols, and a word-list lexicon.  Runs use
the offline sentiment scorer and the CPU; generation is not cached unless a
test passes ``--cache-dir`` itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from fairness_core.api.prompts import Prompt
from fairness_core.evaluations.honest.templates import HonestTemplate, IdentityPair, honest_templates, identity_pairs
from fairness_core.evaluations.sentiment.templates import GivenName, NameTemplate, given_names, name_templates
from fairness_core.reporting.results import SCHEMA_VERSION
from fairness_core.run.setup import AuditSetup

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "fairness_core"
#: The audit modules a pytester folder gets copies of, by the name they are copied as.
AUDITS = {"test_honest.py": PACKAGE / "evaluations" / "honest" / "test_honest.py",
          "test_sentiment.py": PACKAGE / "evaluations" / "sentiment" / "test_sentiment.py",
          "test_regression.py": PACKAGE / "audits" / "test_regression.py"}
AUDIT_MODULES = tuple(AUDITS)
#: Small enough for a few seconds per run on a CPU: 32 x 60 x 2 HONEST and 16 x 34 x 2 sentiment completions.
TINY_PROTOCOL = {"num_samples": 2, "max_new_tokens": 4}
#: Words the tiny random SentencePiece model of conftest.py emits: its tokenizer learned the identity terms.
IDENTITY_WORDS = tuple(term for pair in identity_pairs() for term in (pair.female, pair.male))


def gender_honest_prompts(templates: tuple[HonestTemplate, ...] | None = None,
                          pairs: tuple[IdentityPair, ...] | None = None) -> tuple[Prompt, ...]:
    """The gender set's HONEST prompts from some templates and identity pairs (all by default), in the audit's order."""
    return tuple(Prompt(template.id, group, term, template.fill(term))
                 for template in (honest_templates() if templates is None else templates)
                 for pair in (identity_pairs() if pairs is None else pairs)
                 for group, term in (("female", pair.female), ("male", pair.male)))


def gender_name_prompts(templates: tuple[NameTemplate, ...] | None = None,
                        names: dict[str, tuple[GivenName, ...]] | None = None) -> tuple[Prompt, ...]:
    """The gender set's sentiment prompts from some name templates and names (all by default), in the audit's order."""
    names = given_names() if names is None else names
    return tuple(Prompt(template.id, group, name.name, template.fill(name.name))
                 for template in (name_templates() if templates is None else templates)
                 for group in ("female", "male") for name in names[group])


def thresholds(*, honest: dict | None = None, sentiment: dict | None = None, lax: bool = False,
               protocol: dict | None = None, **top) -> dict:
    """The shipped thresholds.yaml with shrunk protocols; ``lax`` puts every limit where nothing fails."""
    raw = yaml.safe_load((REPO / "thresholds.yaml").read_text(encoding="utf-8"))
    for section in ("honest", "sentiment"):
        raw[section]["protocol"] = {**raw[section]["protocol"], **TINY_PROTOCOL, **(protocol or {})}
    if lax:
        raw["honest"].update(max_honest_score={"female": 1.0, "male": 1.0}, max_template_score=1.0,
                             max_ratio=1000.0, max_category_score={})
        raw["sentiment"].update({key: 1.0 for key in raw["sentiment"] if key.startswith("max_")})
    raw["honest"].update(honest or {})
    raw["sentiment"].update(sentiment or {})
    raw.update(top)
    return raw


def setup_audits(pytester: pytest.Pytester, *, modules=AUDIT_MODULES, words=IDENTITY_WORDS) -> pytest.Pytester:
    """Copy the audit modules into the pytester folder and write ``words.txt`` (one lexicon word a line)."""
    for module in modules:
        shutil.copy(AUDITS[module], pytester.path / module)
    (pytester.path / "words.txt").write_text("# test words\n" + "\n".join(words) + "\n", encoding="utf-8")
    return pytester


def write_thresholds(pytester: pytest.Pytester, content: dict, name: str = "thresholds.yaml") -> Path:
    path = pytester.path / name
    path.write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def run_audit(pytester: pytest.Pytester, model: Path, content: dict, *args: str, cache: bool = False,
              name: str = "thresholds.yaml") -> pytest.RunResult:
    """``pytest <audit modules> --model=<model> --thresholds=... --lexicon=words.txt --sentiment=lexicon``."""
    options = ["-p", "no:cacheprovider", "--device", "cpu", "--sentiment", "lexicon",
               "--model", str(model), "--thresholds", str(write_thresholds(pytester, content, name)),
               "--lexicon", str(pytester.path / "words.txt")]
    if not cache:
        options.append("--no-cache")
    return pytester.runpytest_inprocess(*options, *args)


def audit_demo(pytester: pytest.Pytester, model: str, *options: str) -> tuple[pytest.RunResult, dict[str, dict]]:
    """``pytest --pyargs fairness_core.audits --model=<model>`` as a user runs it, with the shipped thresholds: the
    run, and its ``--audit-json`` metrics by id."""
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = pytester.runpytest_inprocess("--pyargs", "fairness_core.audits", f"--model={model}", *options,
                                          "--audit-json=audit.json", "-p", "no:cacheprovider")
    return result, {m["id"]: m for m in json.loads((pytester.path / "audit.json").read_text("utf-8"))["metrics"]}


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


#: The gated metrics of the default (gender) audit: one regression test each.
GATED_METRICS = tuple(metric for evaluation in AuditSetup.load(REPO / "thresholds.yaml", "gender").evaluations.values()
                      for metric in evaluation.gated_metrics())


def minimal_results() -> dict:
    """The smallest valid --audit-json content: no metrics, no completions."""
    provenance = {"created": "2025-01-01T00:00:00+00:00", "model": {"model": "m"}, "fingerprint": None, "seed": 0,
                  "decision_rule": "point", "attributes": {"name": "gender", "groups": ["female", "male"]},
                  "evaluations": {"honest": {"protocol": {}, "templates": [],
                                             "lexicon": {"source": "s", "level": "conservative", "entries": 1}},
                                  "sentiment": {"protocol": {}, "templates": [], "scorer": "lexicon"}},
                  "not_run": {}, "versions": {}}
    return {"schema_version": SCHEMA_VERSION, "provenance": provenance, "thresholds": {}, "metrics": [],
            "health": [], "confounds": [], "completions": {}}


def assert_one_usage_error(pytester: pytest.Pytester, tiny_model_dirs, given: list[str], message: str, *,
                           no_cache: bool = True) -> str:
    """Run the audits with ``given`` on top of working defaults: exit code 4, ``message`` found, no traceback, no test.

    The defaults are the session's tiny model, lax thresholds, the test word list,
    the offline sentiment scorer, the CPU and ``--no-cache`` (unless ``no_cache``
    is false); an option in ``given`` replaces its default.
    """
    import re

    setup_audits(pytester)
    defaults = {"--model": str(tiny_model_dirs["sentencepiece"]),
                "--thresholds": str(write_thresholds(pytester, thresholds(lax=True))),
                "--sentiment": "lexicon", "--device": "cpu",
                "--lexicon": str(pytester.path / "words.txt")}
    named = {arg.split("=", 1)[0] for arg in given}
    args = [f"{k}={v}" for k, v in defaults.items() if k not in named and v is not None] + given
    if no_cache and not named & {"--baseline", "--cache-dir", "--no-cache"}:
        args.append("--no-cache")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert re.search(message, text), f"{message!r} not in:\n{text}"
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    assert not re.search(r"\d+ (passed|failed)", text), "no test may run"
    return text


def shares_agree(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two routes' shares (hits, total) agree when their 95% Wilson intervals overlap (the routes draw different
    samples)."""
    from fairness_core.statistics import wilson_interval

    (low_a, high_a), (low_b, high_b) = wilson_interval(*a), wilson_interval(*b)
    return low_a <= high_b and low_b <= high_a


#: How far below its training share a chat demo model's refusal rate may sit.  A refusal is one token's choice
#: among a continuation's many first tokens, and the 96-wide model under-fits it: demo:chat-biased refuses female
#: prompts at 0.24 where its corpus holds 0.30, demo:chat at 0.07 where it holds 0.10 (docs/chat-models.md).  The
#: audit's question, the gap between the groups, comes out as planted (0.20 against 0.25 trained).
REFUSAL_UNDERFIT = 0.08


def small_protocol(raw: dict, *, samples: int, window: int) -> dict:
    """A parsed thresholds file with every registered evaluation's protocol (and every attribute set's override of it)
    cut to ``samples`` samples per prompt and ``window`` new tokens: generic, so that an evaluation that registers is
    cut too.  Changes ``raw`` and returns it."""
    from fairness_core.api.discovery import EVALUATIONS

    sections = [raw.get(name) for name in EVALUATIONS]
    sections += [limits.get(name) for limits in (raw.get("attributes") or {}).values() for name in EVALUATIONS]
    for section in sections:
        if isinstance(section, dict) and isinstance(section.get("protocol"), dict):
            protocol = section["protocol"]
            protocol["num_samples"] = min(protocol.get("num_samples", samples), samples)
            protocol["max_new_tokens"] = min(protocol.get("max_new_tokens", window), window)
            windows = (protocol.get("chat") or {}).get("max_new_tokens") or {}
            windows.update({name: min(tokens, window) for name, tokens in windows.items()})
    return raw
