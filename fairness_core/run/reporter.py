"""The run's reporter: collects violations from the test reports and writes the outputs at the end.

:class:`AuditReporter` collects the run's violations from the test reports and
writes the terminal summary and the JSON file; :class:`HtmlReport` adds the
summary and the evidence to pytest-html's report.  The plugin builds each once
with its settings and keeps the reporter in ``config.stash`` (pytest's
``junitxml`` pattern).  The rendering itself is :mod:`fairness_core.reporting.report`'s;
what each evaluation adds to it (plots, summary lines) is asked of the registry here.

This module is imported on every pytest run (the plugin registers the
reporter), so what it needs from pydantic, matplotlib and the evaluations is
imported when an audit has results to show.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairness_core.reporting.report import html_log_without_evidence, summary_html, terminal_lines

if TYPE_CHECKING:
    from fairness_core.reporting.results import AuditResults

#: The key of a violation in a test report's ``user_properties``: how xdist workers' violations reach the controller.
VIOLATION_PROPERTY = "fairness_violation"


def evaluation_plots(results: AuditResults) -> list[tuple[str, str]]:
    """Each computed evaluation's plots (title, base64 PNG)."""
    from fairness_core.api.discovery import EVALUATIONS

    return [plot for name in results.provenance.evaluations for plot in EVALUATIONS.load(name).plots(results)]


def evaluation_lines(results: AuditResults) -> list[str]:
    """What each computed evaluation adds to the summary beyond its violations (a group that stands out)."""
    from fairness_core.api.discovery import EVALUATIONS

    return [line for name in results.provenance.evaluations for line in EVALUATIONS.load(name).summary_lines(results)]



@dataclass(eq=False)  # registered with pluggy, which keeps plugins in sets: hashed by identity
class AuditReporter:
    """Collects violations from test reports and writes the outputs at the end (pytest's junitxml pattern).

    Built once by the plugin with the run's settings.  Violations reach it
    through the reports' ``user_properties``, so that those of pytest-xdist
    workers arrive at the controller like its own would.  ``worker`` is what
    the xdist controller sent this process (``None`` outside a worker); a
    controller hands its workers :meth:`shared_folders`.
    """

    audit_json: Path | None = None
    html_path: Path | None = None
    worker: dict[str, Any] | None = None
    #: Builds this process's results once its audit session has computed them (set by the plugin).
    build_results: Callable[[], AuditResults] | None = None
    violations: list[dict] = field(default_factory=list)
    _shared: tuple[str, str] | None = None
    _results: AuditResults | None = None
    _built: bool = False

    def shared_folders(self) -> tuple[str, str]:
        """(results folder, throw-away cache folder) that every xdist worker of this run writes to."""
        if self._shared is None:
            self._shared = (tempfile.mkdtemp(prefix="ja-fairness-audit-results-"),
                            tempfile.mkdtemp(prefix="ja-fairness-audit-xdist-cache-"))
        return self._shared

    def results(self) -> AuditResults | None:
        """The run's results, built once: from this process's session, or, under xdist, from a worker's file.

        ``None`` when no audit ran (an unrelated test run, ``--co``): then nothing is imported.
        """
        if not self._built:
            self._built = True
            if self.build_results is not None:
                self._results = self.build_results()
            elif self._shared is not None:
                files = sorted(Path(self._shared[0]).glob("*.json"))
                if files:
                    from fairness_core.reporting.results import read_results

                    self._results = read_results(files[0])
        return self._results

    def pytest_runtest_logreport(self, report) -> None:
        self.violations += [value for key, value in report.user_properties
                            if key == VIOLATION_PROPERTY and isinstance(value, dict)]

    def pytest_sessionfinish(self, session) -> None:
        if self.worker is not None:
            results = self.results() if self.build_results is not None else None
            target = Path(self.worker[WORKER_RESULTS]) / f"{self.worker['workerid']}.json" if results else None
        else:
            results = self.results()
            target = self.audit_json
            stopped = session.shouldfail or session.shouldstop
            if results is not None and stopped:
                self._results = results = results.model_copy(update={"notes": [*results.notes, (
                    f"the run stopped early ({stopped}): not every audit test ran; the counts and tables of this "
                    f"summary and of the results file are those of every computed metric")]})
        if results is not None and target is not None:
            from fairness_core.reporting.results import write_results

            write_results(results, target)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        results = None if self.worker is not None else self.results()
        if results is None:
            return
        outputs = [str(p) for p in (self.audit_json, self.html_path) if p]
        terminalreporter.write_sep("=", "fairness audit")
        for line in terminal_lines(self.violations, results, outputs, evaluation_lines(results)):
            terminalreporter.write_line(line)


#: pytest-xdist: where the controller tells its workers to leave their results and shared cache.
WORKER_RESULTS = "fairness_audit_results_dir"
WORKER_CACHE = "fairness_audit_cache_dir"


@dataclass(eq=False)
class HtmlReport:
    """pytest-html hooks, registered only when pytest-html is active (and never in an xdist worker)."""

    reporter: AuditReporter

    def pytest_html_report_title(self, report) -> None:
        report.title = "Fairness audit report"

    def pytest_html_results_summary(self, prefix, summary, postfix, session) -> None:
        results = self.reporter.results()
        if results is not None:
            prefix.append(summary_html(results, self.reporter.violations, evaluation_plots(results)))

    def pytest_html_results_table_html(self, report, data) -> None:
        """A violation's evidence is shown once, in its table: the log keeps the violation's text without it."""
        if data and any(key == VIOLATION_PROPERTY for key, _ in report.user_properties):
            data[0] = html_log_without_evidence(data[0])
