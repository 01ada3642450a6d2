"""A run's start: the option values read once, what they resolve to, the checks both doors make, the backend opened.

``pytest --pyargs fairness_core.audits`` and ``ja-fairness-audit generate``
start the same way: every option of the command is read once into one mapping
(:func:`read_values`), from which :class:`StartUp` resolves the thresholds
file, the attribute set and evaluations (:class:`~fairness_core.run.setup.AuditSetup`),
the cache folder and ``--model`` (:class:`~fairness_core.api.options.AuditOptions`).
:func:`start_up_problems` then finds what can be told wrong without loading
anything (missing files, unwritable outputs, options that contradict each
other), and :func:`open_backend` opens the backend, behind the generation
cache unless ``--no-cache``.  Neither door reads an option by name or wraps a
backend itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairness_core.api.generic_options import (
    ATTRIBUTES,
    AUDIT_JSON,
    BASELINE,
    BASELINE_MODEL,
    CACHE_DIR,
    MODEL,
    NO_CACHE,
    OUTPUT,
    SAMPLING,
    THRESHOLDS,
)
from fairness_core.api.options import AuditOptions
from fairness_core.backends.base import Backend
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import audit_options, cache_folder, resolve_model, resolve_thresholds, run_options
from fairness_core.run.setup import AuditSetup
from fairness_core.sampling import ADAPTIVE


def read_values(command: str, read: Callable[[str], Any]) -> dict[str, Any]:
    """Every option of ``command`` by name (its ``dest``), read once with ``read`` (pytest's ``getoption``, or a
    parsed namespace's ``__getitem__``)."""
    return {option.dest: read(option.dest) for _, option in run_options(command, problems=[])}


@dataclass(frozen=True)
class StartUp:
    """What one run's option values resolve to; a problem found while resolving is kept, not raised.

    ``setup`` is the :class:`AuditSetup`, or the usage error that loading it
    raised (the plugin reports it after collection, with the run's other
    problems); ``model_problems`` is what resolving ``--model`` found wrong.
    """

    values: Mapping[str, Any]
    thresholds: Path
    setup: AuditSetup | AuditUsageError
    options: AuditOptions
    model_problems: list[str] = field(default_factory=list)

    @classmethod
    def resolve(cls, values: Mapping[str, Any], *, root: Path, shared_cache: Path | None = None) -> StartUp:
        """Resolve ``values``; ``root`` is the project root (where a ``thresholds.yaml`` is looked for), and
        ``shared_cache`` the throw-away cache that pytest-xdist workers share under ``--no-cache``."""
        thresholds = resolve_thresholds(values.get(THRESHOLDS.dest), root=root)
        setup: AuditSetup | AuditUsageError
        try:
            setup = AuditSetup.load(thresholds, values.get(ATTRIBUTES.dest) or ATTRIBUTES.default, values)
        except AuditUsageError as err:
            setup = err
        cache_dir = shared_cache if values.get(NO_CACHE.dest) and shared_cache else cache_folder(values)
        options, model_problems = audit_options(values, cache_dir=cache_dir)
        return cls(values, thresholds, setup, options, model_problems)

    @functools.cached_property
    def not_judged(self) -> dict[str, str]:
        """The evaluations that this run cannot judge, known from the options alone, and why (empty when the setup
        failed to load: that error ends the run)."""
        return {} if isinstance(self.setup, AuditUsageError) else self.setup.not_judged(self.options)

    def checked_setup(self) -> AuditSetup:
        """The setup; its usage error raised."""
        if isinstance(self.setup, AuditUsageError):
            raise self.setup
        return self.setup


def start_up_problems(start: StartUp, *, selected: Collection[str], regression: bool = False) -> list[str]:
    """What can be told wrong without loading anything, model first: missing files, unwritable outputs, options that
    contradict each other.

    Only the options that the ``selected`` evaluations use are checked (``-k
    honest`` does not check a sentiment scorer's folder); outputs are checked
    now rather than after an hour of generation.  Loading then finds what only
    loading can.  ``regression``: the run's regression tests are selected (the
    baseline is read).
    """
    from fairness_core.backends.cache import default_cache_dir, default_cache_source
    from fairness_core.backends.catalog import BACKENDS
    from fairness_core.config.locations import missing_file
    from fairness_core.config.outputs import check_cache_dir, check_output_file, no_cache_with_cache_dir

    values, options = start.values, start.options
    problems = list(start.model_problems)
    if not options.settings.model.name and BACKENDS[options.backend].needs_model:
        problems.append(f"The fairness audits need a model: pass {MODEL.flag}=<hub id or local path>, "
                        f"e.g. pytest --pyargs fairness_core.audits {MODEL.flag}=rinna/japanese-gpt-neox-small")
    if not isinstance(start.setup, AuditUsageError):
        problems += [problem for name, evaluation in start.setup.evaluations.items() if name in selected
                     for problem in type(evaluation).input_problems(options)]
    baseline, audit_json = values.get(BASELINE.dest), values.get(AUDIT_JSON.dest)
    if regression and baseline and (missing := missing_file(BASELINE.flag, Path(baseline))):
        problems.append(missing)
    if baseline and values.get(BASELINE_MODEL.dest):
        problems.append(f"{BASELINE.flag}={baseline} and {BASELINE_MODEL.flag}={values[BASELINE_MODEL.dest]}: the gate "
                        f"compares with one baseline; pass the earlier run's --audit-json or the model to generate, "
                        f"not both")
    production = values.get(BASELINE_MODEL.dest)
    if regression and production and not BACKENDS[options.backend].needs_model:
        problems.append(f"{BASELINE_MODEL.flag} with --backend={options.backend}: that backend reads completions "
                        f"files and generates nothing; compare with the baseline's --audit-json ({BASELINE.flag}=PATH)")
    elif regression and production:
        try:
            resolve_model(production, reads_files=BACKENDS[options.backend].reads_model_files, flag=BASELINE_MODEL.flag)
        except AuditUsageError as err:
            problems.append(str(err))
    if baseline and audit_json and Path(baseline).expanduser().resolve() == Path(audit_json).expanduser().resolve():
        problems.append(f"{AUDIT_JSON.flag}={audit_json} would overwrite the {BASELINE.flag} it is compared with, and the "
                        f"next run would gate against this model. Write the new results to another file.")
    prompt_format = options.settings.prompt_format
    if values.get(SAMPLING.dest) == ADAPTIVE and prompt_format.is_chat:
        problems.append(f"{SAMPLING.flag}={ADAPTIVE} with --prompt-format={prompt_format.name}: the sequential tests "
                        f"count every prompt's samples alike, and refused answers leave prompts with fewer; audit a chat "
                        f"format with {SAMPLING.flag}={SAMPLING.default}")
    cache, no_cache = values.get(CACHE_DIR.dest), values.get(NO_CACHE.dest)
    if no_cache and cache:
        problems.append(no_cache_with_cache_dir(cache))
    outputs = [(flag, Path(path)) for flag, path in ((AUDIT_JSON.flag, audit_json), (OUTPUT.flag, values.get(OUTPUT.dest)))
               if path]
    checks: list[Callable[[], object]] = [functools.partial(check_output_file, flag, path) for flag, path in outputs]
    if not no_cache:
        checks.append(lambda: check_cache_dir(CACHE_DIR.flag, Path(cache)) if cache
                      else check_cache_dir(default_cache_source(), default_cache_dir()))
    for check in checks:
        try:
            check()
        except AuditUsageError as err:
            problems.append(str(err))
    return problems


def open_backend(options: AuditOptions) -> Backend:
    """The run's backend, behind the generation cache unless ``--no-cache`` (then ``settings.cache_dir`` is ``None``)."""
    from fairness_core.backends.cache import CachedBackend
    from fairness_core.backends.catalog import create_backend

    backend = create_backend(options.backend, options.settings)
    cache_dir = options.settings.cache_dir
    return backend if cache_dir is None else CachedBackend(backend, cache_dir=cache_dir)
