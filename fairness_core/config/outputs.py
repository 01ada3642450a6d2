"""Start-up checks of the paths a run will write: report files and the generation cache folder.

A report path that cannot be written would otherwise fail after the whole
run (a raw traceback from ``--audit-json``, an INTERNALERROR from ``--html``),
and a bad ``--cache-dir`` inside every test.  The plugin calls these before
loading anything, so each problem is one usage error naming the option and
the path.  Nothing is created: a missing folder only has to be creatable.

>>> check_output_file("--audit-json", Path("/"))
Traceback (most recent call last):
...
fairness_core.config.outputs.OutputPathError: --audit-json=/ is a folder; it must be a file path, e.g. /results.json.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from fairness_core.errors import AuditUsageError


class OutputPathError(AuditUsageError):
    """An output file or cache folder that the run could not use; the message names the option and path."""


def check_output_file(option: str, path: Path) -> None:
    """Raise :class:`OutputPathError` unless ``path`` can be written as a file (its folder may still be missing)."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{option}={path} is a folder; it must be a file path, e.g. {path / 'results.json'}.")
    if path.exists():
        try:
            os.close(os.open(path, os.O_WRONLY))  # neither truncates nor changes the file
        except OSError as err:
            raise OutputPathError(f"{option}={path} cannot be written: {err.strerror}.") from None
        return
    _check_creatable(option, path)


def check_cache_dir(option: str, path: Path) -> Literal["writable", "read-only"]:
    """How the generation cache at ``path`` can be used; :class:`OutputPathError` when not at all.

    A read-only cache is still useful (a warm cache shared by CI): its entries
    are read, and what it lacks is generated without being stored.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{option}={path} is a file; it must be a folder (or a path where one can be created).")
    if not path.exists():
        _check_creatable(option, path)
        return "writable"
    if _writable(path) is None:
        return "writable"
    try:
        os.listdir(path)
    except OSError as err:
        raise OutputPathError(f"{option}={path} can be neither written nor read: {err.strerror}.") from None
    return "read-only"


def _check_creatable(option: str, path: Path) -> None:
    """``path`` does not exist: its nearest existing ancestor must be a folder this process can write in."""
    ancestor = path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(f"{option}={path} cannot be created: {ancestor} is a file, not a folder.")
    problem = _writable(ancestor)
    if problem is not None:
        raise OutputPathError(f"{option}={path} cannot be created: the folder {ancestor} is not writable ({problem}).")


def _writable(folder: Path) -> str | None:
    """``None`` when a file can be created in ``folder``, else the reason.

    Tried rather than asked with ``os.access``, which says yes to root and knows
    nothing of read-only mounts and immutable folders.
    """
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".ja-fairness-audit-probe-")
    except OSError as err:
        return err.strerror or str(err)
    os.close(handle)
    os.unlink(probe)
    return None


def no_cache_with_cache_dir(cache_dir: Path) -> str:
    """Why ``--no-cache`` and ``--cache-dir`` are refused together: one of them would be silently ignored."""
    return (f"--no-cache and --cache-dir={cache_dir} contradict each other: --no-cache generates everything anew and "
            f"stores nothing, so no cache folder is used. Give one of them.")
