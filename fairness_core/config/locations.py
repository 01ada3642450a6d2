"""What a ``from_pretrained`` argument names, and a short reason when loading it fails.

Shared by the model loader and the sentiment classifier loader: both take a hub
id or a local folder from the command line.

>>> resolve_location("rinna/japanese-gpt-neox-small")
'rinna/japanese-gpt-neox-small'
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from huggingface_hub import constants as hub_constants
from huggingface_hub import try_to_load_from_cache

from fairness_core.errors import AuditUsageError

#: Seconds the hub connectivity probe waits: long enough for a slow link, short enough that an
#: air-gapped CI job fails at once instead of after the 45-106 s of the libraries' own retries.
PROBE_TIMEOUT = 3.0


class MissingFolderError(ValueError):
    """A path-like argument (``/…``, ``./…``, ``~/…`` or an existing path) that is not a folder."""


def resolve_location(name_or_path: str) -> str:
    """A hub id unchanged; a local path expanded (``~``) and checked to be a folder."""
    if not (name_or_path.startswith(("/", ".", "~")) or Path(name_or_path).exists()):
        return name_or_path
    folder = Path(name_or_path).expanduser()
    if not folder.is_dir():
        raise MissingFolderError(f"{name_or_path}: no such directory")
    return str(folder)


class HubUnavailableError(AuditUsageError):
    """A hub id that cannot be had: the hub is offline or unreachable and the id is not in the local cache."""


def local_files_only(name_or_path: str, *, revision: str | None = None) -> bool:
    """Whether ``from_pretrained`` must read ``name_or_path`` from the local Hugging Face cache only.

    ``False`` for a local folder and for a hub id while the hub answers.  With
    ``HF_HUB_OFFLINE`` set, or when the hub does not answer a short probe
    (:data:`PROBE_TIMEOUT`), a hub id in the local cache is read from it
    (``True``) and any other raises :class:`HubUnavailableError` at once.
    """
    if Path(name_or_path).is_dir():
        return False
    if hub_constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set"
    else:
        problem = _hub_unreachable(hub_constants.ENDPOINT)
        if problem is None:
            return False
        why = f"the Hugging Face hub at {hub_constants.ENDPOINT} cannot be reached ({problem})"
    if isinstance(try_to_load_from_cache(name_or_path, "config.json", revision=revision), str):
        return True
    revision_note = f" at revision {revision}" if revision else ""
    raise HubUnavailableError(
        f"{name_or_path}{revision_note} is not in the local Hugging Face cache ({hub_constants.HF_HUB_CACHE}) "
        f"and {why}. Download it where the hub can be reached (hf download {name_or_path}) and copy the cache, "
        f"or pass the path of a local folder."
    )


def _hub_unreachable(endpoint: str) -> str | None:
    """``None`` when ``endpoint`` answers an HTTP request within :data:`PROBE_TIMEOUT`, else why not."""
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=PROBE_TIMEOUT).close()
    except urllib.error.HTTPError:
        return None  # an HTTP error status is still an answer
    except OSError as err:
        reason = getattr(err, "reason", err)
        return str(reason) or type(reason).__name__
    return None


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (transformers' are long), or its type's name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def missing_file(option: str, path: Path) -> str | None:
    """Why ``path``, given as ``option``, is not a readable file (``--lexicon=x: no such file.``), or ``None``."""
    expanded = Path(path).expanduser()
    if expanded.is_file():
        return None
    return f"{option}={path}: {'a folder, not a file' if expanded.is_dir() else 'no such file'}."
