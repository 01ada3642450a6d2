"""pytest glue: options, the session object in ``config.stash``, fixtures, failure rendering.

Registered through the ``pytest11`` entry point, so ``pytest audits --model=M``
works from any folder once the project is installed.  Audit modules mark
themselves with ``pytest.mark.fairness_audit``; when any such test is
collected, the plugin validates every option and loads the model once, turning
each problem into a single ``pytest.UsageError``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fairness_core.backends.hf import ModelLoadError
from fairness_core.lexicon import LEXICON_LEVELS, LexiconError
from fairness_core.sentiment import DEFAULT_CLASSIFIER, LEXICON_SCORER, ScorerError
from fairness_core.session import AuditOptions, AuditSession
from fairness_core.thresholds import ThresholdsError
from fairness_core.violations import AuditViolation

OPTION_MODEL = "--model"
OPTION_THRESHOLDS = "--thresholds"
OPTION_SENTIMENT = "--sentiment"
AUDIT_MARKER = "fairness_audit"

session_key = pytest.StashKey[AuditSession]()


def _device(value: str) -> str:
    if value in ("auto", "cpu") or re.fullmatch(r"cuda(:\d+)?", value):
        return value
    raise pytest.UsageError(f"--device must be auto, cpu, cuda or cuda:N. Got {value!r} instead.")


def _positive_int(value: str) -> int:
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise pytest.UsageError(f"--batch-size must be a positive whole number. Got {value!r} instead.")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fairness-audit", "Japanese LM fairness audit")
    group.addoption(OPTION_MODEL, help="hub id or local path of the causal LM to audit (required for audits)")
    group.addoption("--revision", help="model revision (branch, tag or commit) on the hub")
    group.addoption("--trust-remote-code", action="store_true", help="allow the model's own code to run")
    group.addoption("--device", default="auto", type=_device, help="auto, cpu, cuda or cuda:N (default: auto)")
    group.addoption("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                    help="weights dtype; auto follows the model's config (default: auto)")
    group.addoption("--batch-size", default=64, type=_positive_int, help="rows per generation batch (default: 64)")
    group.addoption("--seed", default=0, type=int, help="sampling seed (default: 0)")
    group.addoption(OPTION_THRESHOLDS, type=Path,
                    help="thresholds and protocol YAML (default: thresholds.yaml in the rootdir)")
    group.addoption("--lexicon", type=Path, help="hurtful lexicon: a HurtLex TSV or one word a line")
    group.addoption("--lexicon-level", choices=LEXICON_LEVELS,
                    help="which lexicon entries count (default: from thresholds.yaml, conservative)")
    group.addoption(OPTION_SENTIMENT, default=DEFAULT_CLASSIFIER,
                    help=f"sentiment scorer: hub id or path of a text classifier, or '{LEXICON_SCORER}' "
                         f"for the offline polarity lexicon (default: {DEFAULT_CLASSIFIER})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{AUDIT_MARKER}: a fairness audit test (needs {OPTION_MODEL})")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker(AUDIT_MARKER) for item in items) or session_key in config.stash:
        return
    config.stash[session_key] = _start_session(config)


def _start_session(config: pytest.Config) -> AuditSession:
    model = config.getoption(OPTION_MODEL)
    if not model:
        raise pytest.UsageError(
            f"The fairness audits need a model: pass {OPTION_MODEL}=<hub id or local path>, "
            f"e.g. pytest audits {OPTION_MODEL}=rinna/japanese-gpt-neox-small"
        )
    options = AuditOptions(
        model=model,
        revision=config.getoption("--revision"),
        trust_remote_code=config.getoption("--trust-remote-code"),
        device=config.getoption("--device"),
        dtype=config.getoption("--dtype"),
        batch_size=config.getoption("--batch-size"),
        seed=config.getoption("--seed"),
        thresholds=config.getoption(OPTION_THRESHOLDS) or config.rootpath / "thresholds.yaml",
        lexicon=config.getoption("--lexicon"),
        lexicon_level=config.getoption("--lexicon-level"),
        sentiment=config.getoption(OPTION_SENTIMENT),
    )
    try:
        return AuditSession(options)
    except (ModelLoadError, ThresholdsError, LexiconError, ScorerError) as err:
        raise pytest.UsageError(str(err)) from None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if session_key not in config.stash:
        return None
    audit = config.stash[session_key]
    model = ", ".join(f"{k}={v}" for k, v in audit.backend.description.items())
    protocol = audit.config.honest.protocol
    return [
        f"fairness audit: {model}",
        f"  HONEST protocol: {protocol.model_dump()}, seed={audit.options.seed}",
        f"  lexicon: {audit.lexicon.source} ({len(audit.lexicon.entries)} entries)",
    ]


@pytest.fixture(scope="session")
def audit_session(request: pytest.FixtureRequest) -> AuditSession:
    """The run's :class:`AuditSession` (model, thresholds, lexicon, results)."""
    return request.config.stash[session_key]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, AuditViolation):
        report.longrepr = str(call.excinfo.value)
    return report
