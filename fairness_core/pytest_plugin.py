"""pytest glue: options, the run's plan and session in ``config.stash``, failure rendering, report hooks.

Registered through the ``pytest11`` entry point, so every pytest run in an
environment with the package installed imports this module: it imports nothing
heavy (no torch, transformers, matplotlib or fugashi).  The audit modules
(``fairness_core.audits``, run with ``pytest --pyargs fairness_core.audits``)
mark themselves ``fairness_audit(<evaluation>)``; when they are collected the
plugin

1. parametrizes them from the thresholds file and the attribute set (cheap),
2. after ``-k``/``-m`` selection, loads the backend and only the evaluations
   that the selected tests need, and generates and scores once,

turning every problem into one ``pytest.UsageError``.  ``--co`` stops after 1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fairness_core.backends import options
from fairness_core.backends.registry import BACKENDS, DEFAULT_BACKEND
from fairness_core.errors import AuditUsageError
from fairness_core.report import VIOLATION_PROPERTY, WORKER_CACHE, WORKER_RESULTS, AuditReporter, HtmlReport

if TYPE_CHECKING:
    from fairness_core.audit_options import AuditOptions
    from fairness_core.session import AuditPlan, AuditSession

OPTION_MODEL = "--model"
OPTION_BACKEND = "--backend"
OPTION_ATTRIBUTES = "--attributes"
OPTION_THRESHOLDS = "--thresholds"
OPTION_SENTIMENT = "--sentiment"
OPTION_AUDIT_JSON = "--audit-json"
OPTION_BASELINE = "--baseline"
AUDIT_MARKER = "fairness_audit"
BASELINE_MARKER = "fairness_baseline"

plan_key = pytest.StashKey["AuditPlan | AuditUsageError"]()
session_key = pytest.StashKey["AuditSession"]()
reporter_key = pytest.StashKey[AuditReporter]()


def _backend(value: str) -> str:
    from fairness_core.backends.registry import backend_entry

    try:
        backend_entry(value)
    except AuditUsageError as err:
        raise pytest.UsageError(f"{OPTION_BACKEND}={value}: {err}") from None
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fairness-audit", "Japanese LM fairness audit")
    group.addoption(OPTION_MODEL, help="hub id, local path or demo name of the causal LM to audit; with "
                                       "--backend=openai the served model's name (required for audits)")
    group.addoption(OPTION_BACKEND, default=DEFAULT_BACKEND, type=_backend,
                    help=f"where completions come from: {', '.join(sorted(BACKENDS))} (default: {DEFAULT_BACKEND})")
    group.addoption(OPTION_ATTRIBUTES, default="gender",
                    help="attribute set: a built-in name (gender, ...) or a path to a YAML file (default: gender)")
    group.addoption("--revision", help="model revision (branch, tag or commit) on the hub")
    group.addoption("--trust-remote-code", action="store_true", help="allow the model's own code to run")
    group.addoption("--device", default="auto", type=options.device, help="auto, cpu, cuda or cuda:N (default: auto)")
    group.addoption("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                    help="weights dtype; auto follows the model's config (default: auto)")
    group.addoption("--batch-size", default="auto", type=options.batch_size,
                    help="rows per generation batch, or auto: the largest that fits (on CUDA an out-of-memory "
                         "error halves it and retries) (default: auto)")
    group.addoption("--seed", default=0, type=options.seed, help="sampling seed, a whole number >= 0 (default: 0)")
    group.addoption(OPTION_THRESHOLDS, type=Path,
                    help="thresholds and protocol YAML (default: thresholds.yaml in the rootdir if there is one, "
                         "else the package's own)")
    group.addoption("--lexicon", type=Path, help="hurtful lexicon: a HurtLex TSV or one word a line (HONEST only)")
    group.addoption("--lexicon-level", choices=("conservative", "inclusive"),
                    help="which lexicon entries count (default: from thresholds.yaml, conservative)")
    group.addoption("--cache-dir", type=Path,
                    help="generation cache folder (default: $JA_FAIRNESS_AUDIT_CACHE or ~/.cache/ja-fairness-audit)")
    group.addoption("--no-cache", action="store_true", help="generate everything anew and store nothing")
    group.addoption(OPTION_AUDIT_JSON, type=Path, help="write every number, decision and completion to this JSON file")
    group.addoption(OPTION_BASELINE, type=Path, help="an earlier --audit-json file: fail on significant regressions")
    group.addoption(OPTION_SENTIMENT,
                    help="sentiment scorer (sentiment audits only): hub id or path of a text classifier, or "
                         "'lexicon' for the offline polarity lexicon (default: daigo/bert-base-japanese-sentiment; "
                         "lexicon for the demo models)")
    seen = set()
    for name, entry in BACKENDS.items():
        for option in entry.options:
            if option.flag not in seen:
                seen.add(option.flag)
                group.addoption(option.flag, type=option.type, default=option.default,
                                help=f"[{name} backend] {option.help}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{AUDIT_MARKER}(evaluation): a fairness audit test of that evaluation")
    config.addinivalue_line("markers", f"{BASELINE_MARKER}: a regression test (collected only with --baseline)")
    html = config.getoption("htmlpath", None)
    if html and not _is_worker(config):
        # Before pytest-html's own configure, which would fail on it with an internal error.
        from fairness_core.outputs import check_output_file

        try:
            check_output_file("--html", Path(html))
        except AuditUsageError as err:
            raise pytest.UsageError(str(err)) from None
    reporter = AuditReporter(audit_json=config.getoption(OPTION_AUDIT_JSON), html_path=html and Path(html),
                             worker=getattr(config, "workerinput", None))
    config.stash[reporter_key] = reporter
    config.pluginmanager.register(reporter, "fairness-audit-reporter")
    if config.pluginmanager.hasplugin("html") and not _is_worker(config):
        config.pluginmanager.register(HtmlReport(reporter), "fairness-audit-html")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist controller: workers share one results folder and, with --no-cache, one throw-away cache."""
    node.workerinput[WORKER_RESULTS], node.workerinput[WORKER_CACHE] = node.config.stash[reporter_key].shared_folders()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _thresholds_path(config: pytest.Config) -> Path:
    given = config.getoption(OPTION_THRESHOLDS)
    if given:
        return Path(given).expanduser()
    local = config.rootpath / "thresholds.yaml"
    if local.is_file():
        return local
    from fairness_core.resources import default_thresholds_path

    return default_thresholds_path()


def _plan(config: pytest.Config) -> AuditPlan | AuditUsageError:
    """The run's plan, loaded once on first need; a problem is kept and raised after collection."""
    if plan_key not in config.stash:
        from fairness_core.session import AuditPlan

        try:
            config.stash[plan_key] = AuditPlan.load(_thresholds_path(config), config.getoption(OPTION_ATTRIBUTES))
        except AuditUsageError as err:
            config.stash[plan_key] = err
    return config.stash[plan_key]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize audit tests from the plan: every group, template, limited category and gated metric."""
    marker = metafunc.definition.get_closest_marker(AUDIT_MARKER)
    if marker is None:
        return
    plan = _plan(metafunc.config)
    if isinstance(plan, AuditUsageError):
        return
    groups = plan.attributes.groups
    if "metric" in metafunc.fixturenames:
        metafunc.parametrize("metric", [
            pytest.param(metric, marks=pytest.mark.fairness_audit(name), id=metric)
            for name, evaluation in plan.evaluations.items() for metric in evaluation.gated_metrics()])
        return
    from fairness_core.evaluations.base import evaluation_class

    evaluation_name = marker.args[0] if marker.args else ""
    evaluation = plan.evaluations.get(evaluation_name)
    values = evaluation.test_parameters() if evaluation is not None else {}
    reason = plan.not_applicable().get(evaluation_name, "")
    parameters = evaluation_class(evaluation_name).parameters if evaluation_name else ()
    for name in ("group", *parameters):
        if name not in metafunc.fixturenames:
            continue
        choices = list(groups) if name == "group" else values.get(name, [])
        if not choices:
            why = reason or f"no {name} to audit in this run's thresholds and attribute set"
            metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why))], ids=["none"])
        elif name == "group":
            metafunc.parametrize(name, choices, ids=[f"{plan.attributes.name}-{g}" for g in choices])
        else:
            metafunc.parametrize(name, choices)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-k``/``-m`` selection: load what the selected audits need, then generate and score once."""
    if not config.getoption(OPTION_BASELINE):
        unused = [item for item in items if item.get_closest_marker(BASELINE_MARKER)]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [item for item in items if not item.get_closest_marker(BASELINE_MARKER)]
    audits = [item for item in items if item.get_closest_marker(AUDIT_MARKER)]
    if not audits or session_key in config.stash:
        return
    # The headline tests (ratio, group, gaps) run and are listed before the per-template and per-category ones.
    items.sort(key=lambda item: bool({"template_id", "category"} & set(getattr(item, "fixturenames", ()))))
    plan = _plan(config)
    selected = {m.args[0] for item in audits for m in item.iter_markers(AUDIT_MARKER) if m.args}
    regression = any(item.get_closest_marker(BASELINE_MARKER) for item in audits)
    options = _options(config)
    problems = [] if config.option.collectonly else _quick_problems(config, plan, options, selected,
                                                                      regression=regression)
    if isinstance(plan, AuditUsageError):
        raise pytest.UsageError("\n".join([*problems, str(plan)]))
    if problems:
        raise pytest.UsageError("\n".join(problems))
    if config.option.collectonly:
        return
    try:
        config.stash[session_key] = _start_session(config, plan, options, selected, regression=regression)
    except AuditUsageError as err:
        raise pytest.UsageError(str(err)) from None


def _quick_problems(config: pytest.Config, plan: AuditPlan | AuditUsageError, options: AuditOptions,
                    selected: set[str], *, regression: bool) -> list[str]:
    """What can be told wrong without loading anything, model first: missing files and unwritable outputs.

    Only the options that the selected audits use are checked (``-k honest`` does
    not care about ``--sentiment``); outputs are checked now rather than after an
    hour of generation.  Loading then finds what only loading can.
    """
    from fairness_core.locations import MissingFolderError, missing_file, resolve_location
    from fairness_core.outputs import check_cache_dir, check_output_file, no_cache_with_cache_dir

    problems = []
    model, backend = config.getoption(OPTION_MODEL), config.getoption(OPTION_BACKEND)
    if not model and BACKENDS[backend].needs_model:
        problems.append(f"The fairness audits need a model: pass {OPTION_MODEL}=<hub id or local path>, "
                        f"e.g. pytest --pyargs fairness_core.audits {OPTION_MODEL}=rinna/japanese-gpt-neox-small")
    elif model and backend == DEFAULT_BACKEND and not model.startswith("demo"):
        try:
            resolve_location(model)
        except MissingFolderError:
            problems.append(f"{OPTION_MODEL}={model}: no such directory.")
    if not isinstance(plan, AuditUsageError):
        problems += [problem for name in plan.evaluations if name in selected
                     for problem in type(plan.evaluations[name]).input_problems(options)]
    baseline = config.getoption(OPTION_BASELINE)
    if regression and baseline and (missing := missing_file(OPTION_BASELINE, Path(baseline))):
        problems.append(missing)
    if config.getoption("--no-cache") and config.getoption("--cache-dir"):
        problems.append(no_cache_with_cache_dir(config.getoption("--cache-dir")))
    cache = None if config.getoption("--no-cache") else config.getoption("--cache-dir")
    audit_json = config.getoption(OPTION_AUDIT_JSON)
    checks: list[Callable[[], object]] = [lambda: check_output_file(OPTION_AUDIT_JSON, Path(audit_json))] if audit_json else []
    checks += [lambda: check_cache_dir("--cache-dir", Path(cache))] if cache else []
    for check in checks:
        try:
            check()
        except AuditUsageError as err:
            problems.append(str(err))
    return problems


def _options(config: pytest.Config) -> AuditOptions:
    """The run's options, from the command line, once."""
    from fairness_core.audit_options import AuditOptions
    from fairness_core.backends.base import BackendSettings
    from fairness_core.backends.cache import default_cache_dir

    backend = config.getoption(OPTION_BACKEND)
    cache_dir = config.getoption("--cache-dir") or default_cache_dir()
    if config.getoption("--no-cache"):
        worker = getattr(config, "workerinput", None)
        cache_dir = Path(worker[WORKER_CACHE]) if worker else None
    settings = BackendSettings(
        model=config.getoption(OPTION_MODEL) or "",
        seed=config.getoption("--seed"),
        revision=config.getoption("--revision"),
        trust_remote_code=config.getoption("--trust-remote-code"),
        device=config.getoption("--device"),
        dtype=config.getoption("--dtype"),
        batch_size=config.getoption("--batch-size"),
        options={option.dest: config.getoption(option.flag) for option in BACKENDS[backend].options},
        cache_dir=cache_dir,
    )
    return AuditOptions(settings, backend=backend, lexicon=config.getoption("--lexicon"),
                        lexicon_level=config.getoption("--lexicon-level"), sentiment=config.getoption(OPTION_SENTIMENT))


def _start_session(config: pytest.Config, plan: AuditPlan, options: AuditOptions, selected: set[str], *,
                   regression: bool) -> AuditSession:
    from fairness_core.results import build_results
    from fairness_core.session import AuditSession

    audit = AuditSession(options, plan, selected=sorted(selected),
                         baseline=config.getoption(OPTION_BASELINE) if regression else None)
    audit.compute_all()
    config.stash[reporter_key].build_results = functools.partial(build_results, audit)
    return audit


def pytest_report_collectionfinish(config: pytest.Config) -> list[str] | None:
    """The model, the attribute set, each evaluation's setup and what was not run, once the session is set up."""
    if session_key not in config.stash:
        return None
    audit = config.stash[session_key]
    model = ", ".join(f"{k}={v}" for k, v in audit.backend.description.items())
    lines = [f"fairness audit: {model}, seed={audit.options.settings.seed}, decision rule {audit.config.decision_rule}",
             f"  attribute set: {audit.plan.attributes.name} (groups: {', '.join(audit.plan.attributes.groups)})"]
    lines += [f"  {evaluation.describe()}" for evaluation in audit.evaluations.values()]
    lines += [f"  {name}: {why}" for name, why in audit.not_run.items()]
    from fairness_core.gate import gate_line

    lines.append(f"  {gate_line(audit.config, audit.plan.attributes.name)}")
    return lines


@pytest.fixture(scope="session")
def audit(request: pytest.FixtureRequest) -> AuditSession:
    """The run's :class:`~fairness_core.session.AuditSession`: ``audit.check(metric_id, where=..., evidence=...)``."""
    return request.config.stash[session_key]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is None:
        return report
    from fairness_core.violations import AuditViolation

    violation = call.excinfo.value
    if isinstance(violation, AuditViolation):
        report.longrepr = str(violation)
        report.user_properties.append((VIOLATION_PROPERTY, {"summary": violation.summary, "aggregate": violation.aggregate}))
        if violation.evidence and item.config.pluginmanager.hasplugin("html"):
            from pytest_html import extras

            from fairness_core.report import evidence_html

            report.extras = [*getattr(report, "extras", []), extras.html(evidence_html(violation.evidence))]
    return report
