"""The run's options, assembled once: the one table that the pytest plugin and ``ja-fairness-audit`` both read.

Each option is named once, with one default, one converter and one help text
(:class:`~fairness_core.config.option_types.Option`): the generic ones in
:mod:`fairness_core.api.generic_options`,
each backend's in its catalog entry (:mod:`fairness_core.backends.catalog`),
each evaluation's in its class.  The plugin adds every option of the ``audit``
command to pytest's parser, the CLI those of ``generate`` and ``plan`` to its
subcommands, and both turn the parsed values into one
:class:`~fairness_core.api.options.AuditOptions` with
:func:`audit_options`.  Two more things are resolved here, once, by one rule
each: where the thresholds file is (:func:`resolve_thresholds`) and what
``--model`` names (:func:`resolve_model`).

>>> [option.flag for _, option in run_options("plan")][:2]
['--attributes', '--thresholds']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.generic_options import (
    BACKEND,
    BATCH_SIZE,
    CACHE_DIR,
    DEVICE,
    DTYPE,
    GENERIC,
    MODEL,
    NO_CACHE,
    PROMPT_FORMAT,
    REVISION,
    SEED,
    TRUST_REMOTE_CODE,
)
from fairness_core.api.options import AuditOptions
from fairness_core.backends.base import BackendSettings, ModelReference
from fairness_core.backends.catalog import BACKENDS, DEFAULT_BACKEND, backend_entry
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.option_types import Option
from fairness_core.errors import AuditUsageError

#: The files in a folder that make it a project root, as pytest finds its rootdir.
PROJECT_MARKERS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


class OptionTableError(AuditUsageError):
    """Two parts of the run declare the same option flag differently."""


def run_options(command: str, *, problems: list[str] | None = None) -> list[tuple[str, Option]]:
    """Every option of ``command`` with its owner's label for the help (``""``, ``--backend=openai``, ``honest``).

    An evaluation that cannot be loaded contributes no options: its problem is
    added to ``problems`` when given (the pytest plugin reports it only when an
    audit runs), else raised.
    """
    owned: list[tuple[str, Option]] = [("", option) for option in GENERIC]
    owned += [(f"--backend={name}", option) for name, entry in sorted(BACKENDS.items()) for option in entry.options]
    try:
        names = list(EVALUATIONS)
    except AuditUsageError as err:
        if problems is None:
            raise
        problems.append(str(err))
        names = []
    for name in names:
        try:
            evaluation = EVALUATIONS.load(name)
        except AuditUsageError as err:
            if problems is None:
                raise
            problems.append(str(err))
            continue
        owned += [(name, option) for option in evaluation.options]
    table: dict[str, tuple[str, Option]] = {}
    for owner, option in owned:
        first = table.setdefault(option.flag, (owner, option))
        if first[1] != option:
            raise OptionTableError(f"The option {option.flag} is declared twice, differently: by {first[0] or 'the run'} "
                                   f"and by {owner or 'the run'}")
    return [(owner, option) for owner, option in table.values() if command in option.commands]


def add_options(add: Callable[..., Any], command: str, *, problems: list[str] | None = None) -> None:
    """Declare every option of ``command`` with ``add`` (argparse's ``add_argument``, pytest's ``addoption``)."""
    for owner, option in run_options(command, problems=problems):
        add(option.flag, **option.argparse_arguments(command, owner))


def audit_options(values: Mapping[str, Any], *, cache_dir: Path | None) -> tuple[AuditOptions, list[str]]:
    """The run's options from the parsed ``values`` (by name), and what is wrong with its ``--model``.

    ``cache_dir`` is the run's cache folder (``None`` with ``--no-cache``).  A
    model that cannot be resolved is reported, and the options keep it as given,
    so that the run can report its other problems with it.
    """
    backend = values.get(BACKEND.dest) or DEFAULT_BACKEND
    entry = backend_entry(backend)
    spec = values.get(MODEL.dest) or ""
    problems = []
    try:
        model = resolve_model(spec, reads_files=entry.reads_model_files)
    except AuditUsageError as err:
        problems.append(str(err))
        model = ModelReference(spec)
    settings = BackendSettings(
        model=model, seed=values.get(SEED.dest, SEED.default), revision=values.get(REVISION.dest),
        trust_remote_code=bool(values.get(TRUST_REMOTE_CODE.dest)), device=values.get(DEVICE.dest, DEVICE.default),
        dtype=values.get(DTYPE.dest, DTYPE.default), batch_size=values.get(BATCH_SIZE.dest, BATCH_SIZE.default),
        prompt_format=prompt_format_of(values),
        options={option.dest: values.get(option.dest, option.default) for option in entry.options},
        cache_dir=cache_dir)
    return AuditOptions(settings, backend=backend, values=dict(values)), problems


def prompt_format_of(values: Mapping[str, Any]) -> PromptFormat:
    """The ``--prompt-format`` of the option ``values`` (``completion`` when none was given)."""
    return PromptFormat(values.get(PROMPT_FORMAT.dest) or PROMPT_FORMAT.default)


def cache_folder(values: Mapping[str, Any]) -> Path | None:
    """The run's generation cache: ``None`` with ``--no-cache``, else ``--cache-dir`` or the default folder."""
    from fairness_core.backends.cache import default_cache_dir

    if values.get(NO_CACHE.dest):
        return None
    return values.get(CACHE_DIR.dest) or default_cache_dir()


def resolve_model(spec: str, *, reads_files: bool, flag: str = MODEL.flag) -> ModelReference:
    """What ``--model`` (or ``flag``) names: a demo model's folder, a local folder, or a hub id or served name as given.

    ``reads_files``: the backend loads the model in this process, so a path
    (``/…``, ``./…``, ``~/…``) must be a folder.
    """
    from fairness_core.config.locations import MissingFolderError, resolve_location
    from fairness_core.run.demo_names import option_defaults, resolve_demo

    folder = resolve_demo(spec)
    if folder is not None:
        return ModelReference(spec, str(folder), local=True, defaults=option_defaults())
    if not spec:
        return ModelReference(spec)
    try:
        location = resolve_location(spec)
    except MissingFolderError:
        if reads_files:
            raise AuditUsageError(f"{flag}={spec}: no such directory.") from None
        return ModelReference(spec)
    return ModelReference(spec, location, local=Path(location).is_dir())


def project_root(start: Path) -> Path:
    """The folder pytest takes as its rootdir when run from ``start``: the nearest one with a project file.

    ``ja-fairness-audit`` uses it to find the same ``thresholds.yaml`` as the
    audit that will read its completions.
    """
    for folder in (start, *start.parents):
        if any((folder / marker).is_file() for marker in PROJECT_MARKERS):
            return folder
    return start


def resolve_thresholds(given: Path | None, *, root: Path) -> Path:
    """The thresholds file of a run: ``--thresholds``, else ``thresholds.yaml`` in the project root, else the package's."""
    from fairness_core.config.package_data import default_thresholds_path

    if given:
        return Path(given).expanduser()
    local = root / "thresholds.yaml"
    return local if local.is_file() else default_thresholds_path()
