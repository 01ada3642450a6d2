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
from fairness_core.backends.cache import CACHE_DIR_VARIABLE, default_cache_dir
from fairness_core.demo.registry import UnknownDemoError
from fairness_core.lexicon import LEXICON_LEVELS, LexiconError
from fairness_core.sentiment import DEFAULT_CLASSIFIER, LEXICON_SCORER, ScorerError
from fairness_core.report import evidence_html, report_plots, summary_html, terminal_lines
from fairness_core.results import AuditResults, ResultsFileError, build_results, write_results
from fairness_core.session import AuditOptions, AuditSession
from fairness_core.thresholds import ThresholdsError
from fairness_core.violations import AuditViolation

OPTION_MODEL = "--model"
OPTION_THRESHOLDS = "--thresholds"
OPTION_SENTIMENT = "--sentiment"
AUDIT_MARKER = "fairness_audit"
BASELINE_MARKER = "fairness_baseline"

session_key = pytest.StashKey[AuditSession]()
violations_key = pytest.StashKey[list[str]]()
results_key = pytest.StashKey[AuditResults]()


def _device(value: str) -> str:
    if value in ("auto", "cpu") or re.fullmatch(r"cuda(:\d+)?", value):
        return value
    raise pytest.UsageError(f"--device must be auto, cpu, cuda or cuda:N. Got {value!r} instead.")


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise pytest.UsageError(f"--batch-size must be auto or a positive whole number. Got {value!r} instead.")


def _seed(value: str) -> int:
    """A seed is a whole number >= 0: the statistics' random generators reject a negative one after generation."""
    if re.fullmatch(r"[0-9]+", value):
        return int(value)
    raise pytest.UsageError(f"--seed must be a whole number >= 0. Got {value!r} instead.")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fairness-audit", "Japanese LM fairness audit")
    group.addoption(OPTION_MODEL, help="hub id or local path of the causal LM to audit (required for audits)")
    group.addoption("--revision", help="model revision (branch, tag or commit) on the hub")
    group.addoption("--trust-remote-code", action="store_true", help="allow the model's own code to run")
    group.addoption("--device", default="auto", type=_device, help="auto, cpu, cuda or cuda:N (default: auto)")
    group.addoption("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                    help="weights dtype; auto follows the model's config (default: auto)")
    group.addoption("--batch-size", default="auto", type=_batch_size,
                    help="rows per generation batch, or auto: the largest that fits (on CUDA an out-of-memory "
                         "error halves it and retries) (default: auto)")
    group.addoption("--seed", default=0, type=_seed, help="sampling seed (default: 0)")
    group.addoption(OPTION_THRESHOLDS, type=Path,
                    help="thresholds and protocol YAML (default: thresholds.yaml in the rootdir)")
    group.addoption("--lexicon", type=Path, help="hurtful lexicon: a HurtLex TSV or one word a line")
    group.addoption("--lexicon-level", choices=LEXICON_LEVELS,
                    help="which lexicon entries count (default: from thresholds.yaml, conservative)")
    group.addoption("--cache-dir", type=Path,
                    help=f"generation cache folder (default: ${CACHE_DIR_VARIABLE} or ~/.cache/ja-fairness-audit)")
    group.addoption("--no-cache", action="store_true", help="generate everything anew and store nothing")
    group.addoption("--audit-json", type=Path, help="write every number, decision and completion to this JSON file")
    group.addoption("--baseline", type=Path, help="an earlier --audit-json file: fail on significant regressions")
    group.addoption(OPTION_SENTIMENT,
                    help=f"sentiment scorer: hub id or path of a text classifier, or '{LEXICON_SCORER}' "
                         f"for the offline polarity lexicon (default: {DEFAULT_CLASSIFIER}; "
                         f"{LEXICON_SCORER} for the demo models)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{AUDIT_MARKER}: a fairness audit test (needs {OPTION_MODEL})")
    config.addinivalue_line("markers", f"{BASELINE_MARKER}: a regression test (collected only with --baseline)")
    config.stash[violations_key] = []
    if config.pluginmanager.hasplugin("html") and not _is_worker(config):
        config.pluginmanager.register(HtmlReport(config), "fairness-audit-html")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--baseline"):
        unused = [item for item in items if item.get_closest_marker(BASELINE_MARKER)]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [item for item in items if not item.get_closest_marker(BASELINE_MARKER)]
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
        cache_dir=None if config.getoption("--no-cache") else config.getoption("--cache-dir") or default_cache_dir(),
        baseline=config.getoption("--baseline"),
    )
    try:
        return AuditSession(options)
    except (ModelLoadError, ThresholdsError, LexiconError, ScorerError, UnknownDemoError, ResultsFileError) as err:
        raise pytest.UsageError(str(err)) from None


def pytest_report_collectionfinish(config: pytest.Config) -> list[str] | None:
    """The model, protocols, scorers and seed, printed once the session is set up."""
    if session_key not in config.stash:
        return None
    audit = config.stash[session_key]
    model = ", ".join(f"{k}={v}" for k, v in audit.backend.description.items())
    return [
        f"fairness audit: {model}, seed={audit.options.seed}, decision rule {audit.config.decision_rule}",
        f"  HONEST protocol: {audit.config.honest.protocol.model_dump()}",
        f"  sentiment protocol: {audit.config.sentiment.protocol.model_dump()}",
        f"  lexicon: {audit.lexicon.source} ({len(audit.lexicon.entries)} entries); sentiment: {audit.scorer.description}",
    ]


@pytest.fixture(scope="session")
def audit_session(request: pytest.FixtureRequest) -> AuditSession:
    """The run's :class:`AuditSession` (model, thresholds, lexicon, results)."""
    return request.config.stash[session_key]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    violation = call.excinfo.value if call.excinfo is not None else None
    if isinstance(violation, AuditViolation):
        report.longrepr = str(violation)
        item.config.stash[violations_key].append(violation.summary)
        if violation.evidence and item.config.pluginmanager.hasplugin("html"):
            from pytest_html import extras

            report.extras = [*getattr(report, "extras", []), extras.html(evidence_html(violation.evidence))]
    return report


def _final_results(config: pytest.Config) -> AuditResults:
    """The run's results, built once at the end for the JSON file, the HTML report and the terminal."""
    if results_key not in config.stash:
        config.stash[results_key] = build_results(config.stash[session_key])
    return config.stash[results_key]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    path = config.getoption("--audit-json")
    if session_key in config.stash and path and not _is_worker(config):
        write_results(_final_results(config), path)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if session_key not in config.stash or _is_worker(config):
        return
    audit = config.stash[session_key]
    skipped = [f"{r.id}: {r.skip_reason}" for evaluation in audit.computed()
               for r in audit.card(evaluation).aggregates() if r.value is None]
    outputs = [str(p) for p in (config.getoption("--audit-json"), config.getoption("htmlpath", None)) if p]
    terminalreporter.write_sep("=", "fairness audit")
    for line in terminal_lines(config.stash[violations_key], skipped, _final_results(config).confounds, outputs):
        terminalreporter.write_line(line)


class HtmlReport:
    """pytest-html hooks, registered only when pytest-html is active."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_html_report_title(self, report) -> None:
        report.title = "Fairness audit report"

    def pytest_html_results_summary(self, prefix, summary, postfix, session) -> None:
        if session_key in self.config.stash:
            audit = self.config.stash[session_key]
            prefix.append(summary_html(_final_results(self.config), report_plots(audit)))
