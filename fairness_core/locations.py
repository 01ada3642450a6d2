"""What a ``from_pretrained`` argument names, and a short reason when loading it fails.

Shared by the model loader and the sentiment classifier loader: both take a hub
id or a local folder from the command line.

>>> resolve_location("rinna/japanese-gpt-neox-small")
'rinna/japanese-gpt-neox-small'
"""

from __future__ import annotations

from pathlib import Path


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


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (transformers' are long), or its type's name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
