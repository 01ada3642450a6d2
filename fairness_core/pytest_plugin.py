"""pytest glue: options, the run's setup and session in ``config.stash``, the audits' collection, failure rendering.

Registered through the ``pytest11`` entry point, so every pytest run in an
environment with the package installed imports this module: it imports nothing
heavy (no torch, transformers, matplotlib, scipy or fugashi).  Its options are
the run's one option table (:mod:`fairness_core.run.options`), shared with
``ja-fairness-audit``.  ``pytest --pyargs fairness_core.audits`` collects the
audit tests of every registered evaluation (each evaluation keeps them in its
own package) and the regression tests; they mark themselves
``fairness_audit(<evaluation>)``, and the plugin

1. parametrizes them from the thresholds file and the attribute set (cheap),
2. after ``-k``/``-m`` selection, loads the backend and only the evaluations
   that the selected tests need, and generates and scores once,

turning every problem into one ``pytest.UsageError``.  ``--co`` stops after 1.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from fairness_core.config.option_types import AUDIT
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import (
    ATTRIBUTES,
    AUDIT_JSON,
    BASELINE,
    CACHE_DIR,
    MODEL,
    NO_CACHE,
    PROMPT_FORMAT,
    SAMPLING,
    THRESHOLDS,
    add_options,
    cache_folder,
    resolve_thresholds,
    run_options,
)
from fairness_core.run.reporter import VIOLATION_PROPERTY, WORKER_CACHE, WORKER_RESULTS, AuditReporter, HtmlReport

if TYPE_CHECKING:
    from fairness_core.api.options import AuditOptions
    from fairness_core.run.session import AuditSession, AuditSetup

AUDIT_MARKER = "fairness_audit"
BASELINE_MARKER = "fairness_baseline"
CHAT_MARKER = "fairness_chat_format"
AUDITS_PACKAGE = "fairness_core.audits"
REPORTER_NAME, HTML_REPORT_NAME = "fairness-audit-reporter", "fairness-audit-html"

setup_key = pytest.StashKey["AuditSetup | AuditUsageError"]()
session_key = pytest.StashKey["AuditSession"]()
reporter_key = pytest.StashKey[AuditReporter]()


def pytest_addoption(parser: pytest.Parser) -> None:
    # An evaluation that cannot be loaded adds no options here; an audit run reports it when it loads the setup.
    add_options(parser.getgroup("fairness-audit", "Japanese LM fairness audit").addoption, AUDIT, problems=[])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{AUDIT_MARKER}(evaluation): a fairness audit test of that evaluation")
    config.addinivalue_line("markers", f"{BASELINE_MARKER}: a regression test (collected only with --baseline)")
    config.addinivalue_line("markers", f"{CHAT_MARKER}: a test of chat answers (collected only with a chat "
                                       f"--prompt-format)")
    html = config.getoption("htmlpath", None)
    if html and not _is_worker(config):
        # Before pytest-html's own configure, which would fail on it with an internal error.
        from fairness_core.config.outputs import check_output_file

        try:
            check_output_file("--html", Path(html))
        except AuditUsageError as err:
            raise pytest.UsageError(str(err)) from None
    reporter = AuditReporter(audit_json=config.getoption(AUDIT_JSON.dest), html_path=html and Path(html),
                             worker=getattr(config, "workerinput", None))
    config.stash[reporter_key] = reporter
    config.pluginmanager.register(reporter, REPORTER_NAME)
    if config.pluginmanager.hasplugin("html") and not _is_worker(config):
        config.pluginmanager.register(HtmlReport(reporter), HTML_REPORT_NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Undo :func:`pytest_configure`: the plugins it registered and what it keeps in the stash."""
    for name in (REPORTER_NAME, HTML_REPORT_NAME):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin, name)
    for key in (reporter_key, setup_key, session_key):
        if key in config.stash:  # type: ignore[misc]  # three keys of three value types
            del config.stash[key]  # type: ignore[misc]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist controller: workers share one results folder and, with --no-cache, one throw-away cache."""
    node.workerinput[WORKER_RESULTS], node.workerinput[WORKER_CACHE] = node.config.stash[reporter_key].shared_folders()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class AuditsDirectory(pytest.Directory):
    """``fairness_core/audits``: the audit tests of every registered evaluation, then the folder's own (regression)."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        from fairness_core.api.discovery import EVALUATIONS

        for name in EVALUATIONS:
            try:
                module = EVALUATIONS.load(name).audit_tests()
            except AuditUsageError:
                continue  # the setup reports it, as one usage error with the run's other problems
            spec = importlib.util.find_spec(module)
            if spec is None or spec.origin is None:
                raise self.CollectError(f"The evaluation {name!r} names its audit tests {module!r}, "
                                        f"which is no importable module")
            yield self._module(Path(spec.origin))
        for path in sorted(self.path.glob("test_*.py")):
            yield self._module(path)

    def _module(self, path: Path) -> pytest.Module:
        """A test module of this folder; one elsewhere (an installed package) is named as if it lay here."""
        if path.is_relative_to(self.config.rootpath) or path.parent == self.path:
            return pytest.Module.from_parent(self, path=path)
        return pytest.Module.from_parent(self, path=path, nodeid=f"{self.nodeid}/{path.name}" if self.nodeid else path.name)


@functools.cache
def _audits_folder() -> Path:
    return Path(__file__).resolve().parent / AUDITS_PACKAGE.rpartition(".")[2]


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The audits package (``--pyargs fairness_core.audits``, or ``audits/`` in a checkout) is an :class:`AuditsDirectory`."""
    if path.name == _audits_folder().name and path.resolve() == _audits_folder():
        return AuditsDirectory.from_parent(parent, path=path)
    return None


def _setup(config: pytest.Config) -> AuditSetup | AuditUsageError:
    """The run's setup, loaded once on first need; a problem is kept and raised after collection."""
    if setup_key not in config.stash:
        from fairness_core.run.session import AuditSetup

        thresholds = resolve_thresholds(config.getoption(THRESHOLDS.dest), root=config.rootpath)
        values = {option.dest: config.getoption(option.dest) for _, option in run_options(AUDIT, problems=[])}
        try:
            config.stash[setup_key] = AuditSetup.load(thresholds, config.getoption(ATTRIBUTES.dest), values)
        except AuditUsageError as err:
            config.stash[setup_key] = err
    return config.stash[setup_key]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize audit tests from the setup: every group, template, limited category and gated metric."""
    marker = metafunc.definition.get_closest_marker(AUDIT_MARKER)
    if marker is None:
        return
    setup = _setup(metafunc.config)
    if isinstance(setup, AuditUsageError):
        return
    groups = setup.attributes.groups
    if "metric" in metafunc.fixturenames:
        metafunc.parametrize("metric", [
            pytest.param(metric, marks=pytest.mark.fairness_audit(name), id=metric)
            for name, evaluation in setup.evaluations.items() for metric in evaluation.gated_metrics()])
        return
    from fairness_core.api.discovery import EVALUATIONS

    evaluation_name = marker.args[0] if marker.args else ""
    evaluation = setup.evaluations.get(evaluation_name)
    values = evaluation.test_parameters() if evaluation is not None else {}
    reason = setup.not_applicable().get(evaluation_name, "")
    parameters = EVALUATIONS.load(evaluation_name).parameters if evaluation_name else ()
    for name in ("group", *parameters):
        if name not in metafunc.fixturenames:
            continue
        choices = list(groups) if name == "group" else values.get(name, [])
        if not choices:
            why = reason or f"no {name} to audit in this run's thresholds and attribute set"
            metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why))], ids=["none"])
        elif name == "group":
            metafunc.parametrize(name, choices, ids=[f"{setup.attributes.name}-{g}" for g in choices])
        else:
            metafunc.parametrize(name, choices)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-k``/``-m`` selection: load what the selected audits need, then generate and score once."""
    unused_markers = ([BASELINE_MARKER] if not config.getoption(BASELINE.dest) else []) + (
        [CHAT_MARKER] if (config.getoption(PROMPT_FORMAT.dest) or PROMPT_FORMAT.default) == "completion" else [])
    unused = [item for item in items if any(item.get_closest_marker(m) for m in unused_markers)]
    if unused:
        config.hook.pytest_deselected(items=unused)
        dropped = set(map(id, unused))
        items[:] = [item for item in items if id(item) not in dropped]
    audits = [item for item in items if item.get_closest_marker(AUDIT_MARKER)]
    if not audits or session_key in config.stash:
        return
    # The headline tests (ratio, group, gaps) run and are listed before the per-template and per-category ones.
    items.sort(key=lambda item: bool({"template_id", "category"} & set(getattr(item, "fixturenames", ()))))
    setup = _setup(config)
    selected = {m.args[0] for item in audits for m in item.iter_markers(AUDIT_MARKER) if m.args}
    regression = any(item.get_closest_marker(BASELINE_MARKER) for item in audits)
    options, problems = _options(config)
    if not config.option.collectonly:
        problems += _quick_problems(config, setup, options, selected, regression=regression)
    else:
        problems = []
    if isinstance(setup, AuditUsageError):
        raise pytest.UsageError("\n".join([*problems, str(setup)]))
    if problems:
        raise pytest.UsageError("\n".join(problems))
    if config.option.collectonly:
        return
    try:
        config.stash[session_key] = _start_session(config, setup, options, selected, regression=regression)
    except AuditUsageError as err:
        raise pytest.UsageError(str(err)) from None


def _quick_problems(config: pytest.Config, setup: AuditSetup | AuditUsageError, options: AuditOptions,
                    selected: set[str], *, regression: bool) -> list[str]:
    """What can be told wrong without loading anything, model first: missing files and unwritable outputs.

    Only the options that the selected audits use are checked (``-k honest`` does
    not check a sentiment scorer's folder); outputs are checked now rather than
    after an hour of generation.  Loading then finds what only loading can.
    """
    from fairness_core.backends.cache import default_cache_dir, default_cache_source
    from fairness_core.backends.catalog import BACKENDS
    from fairness_core.config.locations import missing_file
    from fairness_core.config.outputs import check_cache_dir, check_output_file, no_cache_with_cache_dir

    problems = []
    if not options.settings.model.name and BACKENDS[options.backend].needs_model:
        problems.append(f"The fairness audits need a model: pass {MODEL.flag}=<hub id or local path>, "
                        f"e.g. pytest --pyargs fairness_core.audits {MODEL.flag}=rinna/japanese-gpt-neox-small")
    if not isinstance(setup, AuditUsageError):
        problems += [problem for name in setup.evaluations if name in selected
                     for problem in type(setup.evaluations[name]).input_problems(options)]
    baseline = config.getoption(BASELINE.dest)
    if regression and baseline and (missing := missing_file(BASELINE.flag, Path(baseline))):
        problems.append(missing)
    audit_json = config.getoption(AUDIT_JSON.dest)
    if baseline and audit_json and Path(baseline).expanduser().resolve() == Path(audit_json).expanduser().resolve():
        problems.append(f"{AUDIT_JSON.flag}={audit_json} would overwrite the {BASELINE.flag} it is compared with, and the "
                        f"next run would gate against this model. Write the new results to another file.")
    prompt_format = config.getoption(PROMPT_FORMAT.dest) or PROMPT_FORMAT.default
    if config.getoption(SAMPLING.dest) == "adaptive" and prompt_format != "completion":
        problems.append(f"{SAMPLING.flag}=adaptive with {PROMPT_FORMAT.flag}={prompt_format}: the sequential tests count "
                        f"every prompt's samples alike, and refused answers leave prompts with fewer; audit a chat "
                        f"format with {SAMPLING.flag}=fixed")
    cache, no_cache = config.getoption(CACHE_DIR.dest), config.getoption(NO_CACHE.dest)
    if no_cache and cache:
        problems.append(no_cache_with_cache_dir(cache))
    checks: list[Callable[[], object]] = [lambda: check_output_file(AUDIT_JSON.flag, Path(audit_json))] if audit_json else []
    if not no_cache:
        checks.append(lambda: check_cache_dir(CACHE_DIR.flag, Path(cache)) if cache
                      else check_cache_dir(default_cache_source(), default_cache_dir()))
    for check in checks:
        try:
            check()
        except AuditUsageError as err:
            problems.append(str(err))
    return problems


def _options(config: pytest.Config) -> tuple[AuditOptions, list[str]]:
    """The run's options from the command line, once, and what resolving ``--model`` found wrong."""
    from fairness_core.run.options import audit_options

    values: dict[str, Any] = {option.dest: config.getoption(option.dest) for _, option in run_options(AUDIT, problems=[])}
    cache_dir = cache_folder(values)
    worker = getattr(config, "workerinput", None)
    if values[NO_CACHE.dest] and worker:
        cache_dir = Path(worker[WORKER_CACHE])  # xdist workers share one throw-away cache
    return audit_options(values, cache_dir=cache_dir)


def _start_session(config: pytest.Config, setup: AuditSetup, options: AuditOptions, selected: set[str], *,
                   regression: bool) -> AuditSession:
    from fairness_core.reporting.results import build_results
    from fairness_core.run.session import AuditSession

    audit = AuditSession(options, setup, selected=sorted(selected),
                         baseline=config.getoption(BASELINE.dest) if regression else None)
    audit.compute_all()
    config.stash[reporter_key].build_results = functools.partial(build_results, audit)
    return audit


def pytest_report_collectionfinish(config: pytest.Config) -> list[str] | None:
    """The model, the attribute set, each evaluation's setup and what was not run, once the session is set up."""
    if session_key not in config.stash:
        return None
    from fairness_core.gates.deploy import gate_line

    audit = config.stash[session_key]
    model = ", ".join(f"{k}={v}" for k, v in audit.backend.description.items())
    attributes = audit.setup.attributes
    lines = [f"fairness audit: {model}, seed={audit.options.settings.seed}, decision rule {audit.config.decision_rule}",
             f"  attribute set: {attributes.name} (groups: {', '.join(attributes.groups)})"]
    lines += [f"  {evaluation.describe()}" for evaluation in audit.evaluations.values()]
    lines += [f"  {name}: {why}" for name, why in audit.not_run.items()]
    lines.append(f"  {gate_line(audit.config, attributes.name)}")
    return lines


@pytest.fixture(scope="session")
def audit(request: pytest.FixtureRequest) -> AuditSession:
    """The run's :class:`~fairness_core.run.session.AuditSession`: ``audit.check(metric_id, where=..., evidence=...)``."""
    return request.config.stash[session_key]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is None:
        return report
    from fairness_core.reporting.violations import AuditViolation

    violation = call.excinfo.value
    if isinstance(violation, AuditViolation):
        report.longrepr = str(violation)
        report.user_properties.append((VIOLATION_PROPERTY, {"metric": violation.metric, "summary": violation.summary,
                                                            "aggregate": violation.aggregate, "kind": violation.kind}))
        if violation.evidence and item.config.pluginmanager.hasplugin("html"):
            from pytest_html import extras

            from fairness_core.reporting.report import evidence_html

            report.extras = [*getattr(report, "extras", []), extras.html(evidence_html(violation.evidence))]
    return report
