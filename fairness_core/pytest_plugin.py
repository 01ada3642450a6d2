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
An evaluation that the run cannot judge (the attribute set has no section for
it, :meth:`~fairness_core.api.evaluation.Evaluation.cannot_run` gives a reason,
its prompts do not fit the model) is no usage error: its tests are skipped with
the reason, and ``--require`` turns it into one failing test
(``fairness_core/audits/test_required.py``).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fairness_core.api.generic_options import AUDIT_JSON, BASELINE, BASELINE_MODEL, REQUIRE
from fairness_core.config.option_types import AUDIT
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import add_options
from fairness_core.run.reporter import VIOLATION_PROPERTY, WORKER_CACHE, WORKER_RESULTS, AuditReporter, HtmlReport

if TYPE_CHECKING:
    from fairness_core.run.session import AuditSession
    from fairness_core.run.setup import AuditSetup
    from fairness_core.run.startup import StartUp

AUDIT_MARKER = "fairness_audit"
BASELINE_MARKER = "fairness_baseline"
CHAT_MARKER = "fairness_chat_format"
REQUIRE_MARKER = "fairness_require"
AUDITS_PACKAGE = "fairness_core.audits"
REPORTER_NAME, HTML_REPORT_NAME = "fairness-audit-reporter", "fairness-audit-html"

#: pytest-html's option of its report's path.
HTML_PATH = "htmlpath"

startup_key = pytest.StashKey["StartUp"]()
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
    config.addinivalue_line("markers", f"{REQUIRE_MARKER}: a test that a --require'd evaluation was judged "
                                       f"(collected only with {REQUIRE.flag})")
    html = config.getoption(HTML_PATH, None)
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
    for key in (reporter_key, startup_key, session_key):
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


def _start(config: pytest.Config) -> StartUp:
    """The run's option values, read once on first need, and what they resolve to (problems kept, not raised)."""
    if startup_key not in config.stash:
        from fairness_core.run.startup import StartUp, read_values

        worker = getattr(config, "workerinput", None)
        config.stash[startup_key] = StartUp.resolve(read_values(AUDIT, config.getoption), root=config.rootpath,
                                                    shared_cache=Path(worker[WORKER_CACHE]) if worker else None)
    return config.stash[startup_key]


def _setup(config: pytest.Config) -> AuditSetup | AuditUsageError:
    return _start(config).setup


def _unused_markers(config: pytest.Config) -> list[str]:
    """The markers of tests that this run has nothing for: regression without a baseline, chat answers in a
    completion run, required evaluations without --require."""
    start = _start(config)
    compared = start.values.get(BASELINE.dest) or start.values.get(BASELINE_MODEL.dest)
    return ([BASELINE_MARKER] if not compared else []) + (
        [CHAT_MARKER] if not start.options.settings.prompt_format.is_chat else []) + (
        [REQUIRE_MARKER] if not start.values.get(REQUIRE.dest) else [])


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object):
    """Leave out the tests this run has nothing for (:func:`_unused_markers`): never collected, so never counted as
    deselected, which would read as if the user had passed ``-k``."""
    made = yield
    markers = (BASELINE_MARKER, CHAT_MARKER, REQUIRE_MARKER)
    if not isinstance(made, list) or not any(isinstance(item, pytest.Item) and item.get_closest_marker(m)
                                             for item in made for m in markers):
        return made
    unused = _unused_markers(collector.config)
    return [item for item in made
            if not (isinstance(item, pytest.Item) and any(item.get_closest_marker(m) for m in unused))]


def _not_judged_reason(name: str, why: str) -> str:
    return f"{name} not judged: {why}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize audit tests from the setup: every group, template, limited category, gated metric and required
    evaluation; a test of an evaluation that this run cannot judge is one skipped test, with the reason."""
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
    if "required" in metafunc.fixturenames:
        metafunc.parametrize("required", list(_start(metafunc.config).values.get(REQUIRE.dest) or ()))
        return
    from fairness_core.api.discovery import EVALUATIONS

    evaluation_name = marker.args[0] if marker.args else ""
    evaluation = setup.evaluations.get(evaluation_name)
    values = evaluation.test_parameters() if evaluation is not None else {}
    reason = _start(metafunc.config).not_judged.get(evaluation_name)
    parameters = EVALUATIONS.load(evaluation_name).parameters if evaluation_name else ()
    for name in ("group", *parameters):
        if name not in metafunc.fixturenames:
            continue
        choices = list(groups) if name == "group" else values.get(name, [])
        if reason or not choices:
            why = (_not_judged_reason(evaluation_name, reason) if reason
                   else f"no {name} to audit in this run's thresholds and attribute set")
            metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why))],
                                 ids=["not-judged" if reason else "none"])
        elif name == "group":
            metafunc.parametrize(name, choices, ids=[f"{setup.attributes.name}-{g}" for g in choices])
        else:
            metafunc.parametrize(name, choices)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-k``/``-m`` selection: load what the selected audits need, then generate and score once."""
    from fairness_core.run.startup import start_up_problems

    if not any(item.get_closest_marker(m) for item in items for m in (AUDIT_MARKER, BASELINE_MARKER, CHAT_MARKER)):
        return  # no audit in this run: nothing to resolve
    start = _start(config)
    audits = [item for item in items if item.get_closest_marker(AUDIT_MARKER)]
    if not audits or session_key in config.stash:
        return
    # The headline tests (ratio, group, gaps) run and are listed before the per-template and per-category ones.
    items.sort(key=lambda item: bool({"template_id", "category"} & set(getattr(item, "fixturenames", ()))))
    selected = {m.args[0] for item in audits for m in item.iter_markers(AUDIT_MARKER) if m.args}
    regression = any(item.get_closest_marker(BASELINE_MARKER) for item in audits)
    problems = [] if config.option.collectonly else start_up_problems(start, selected=selected, regression=regression)
    if isinstance(start.setup, AuditUsageError):
        raise pytest.UsageError("\n".join([*problems, str(start.setup)]))
    if problems:
        raise pytest.UsageError("\n".join(problems))
    if config.option.collectonly:
        return
    try:
        config.stash[session_key] = _start_session(config, start, selected, regression=regression)
    except AuditUsageError as err:
        raise pytest.UsageError(str(err)) from None
    not_judged = config.stash[session_key].not_judged
    for item in audits:
        names = [m.args[0] for m in item.iter_markers(AUDIT_MARKER) if m.args and m.args[0] in not_judged]
        if names:
            item.add_marker(pytest.mark.skip(reason=_not_judged_reason(names[0], not_judged[names[0]])))


def _start_session(config: pytest.Config, start: StartUp, selected: set[str], *, regression: bool) -> AuditSession:
    from fairness_core.reporting.results import build_results
    from fairness_core.run.session import AuditSession

    audit = AuditSession(start.options, start.checked_setup(), selected=sorted(selected),
                         baseline=start.values.get(BASELINE.dest) if regression else None,
                         baseline_model=start.values.get(BASELINE_MODEL.dest) if regression else None)
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
    gated = [m for e in audit.evaluations.values() for m in e.gated_metrics()] \
        if BASELINE_MARKER not in _unused_markers(config) else []
    lines += [f"  {note}" for note in audit.config.limits_notes(list(audit.evaluations), gated=gated)]
    lines += [f"  {name}: not judged: {why}" for name, why in audit.not_judged.items()]
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
