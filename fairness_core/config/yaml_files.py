"""Reading the YAML files users write (thresholds, attribute sets): one error for each way a file can be wrong.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word, so
``max_ratio: 2.0`` followed further down by ``max_ratio: 50.0`` would loosen a
deploy gate silently; here a duplicate key is an error naming both lines.  A
file saved as Shift-JIS (common in Japanese offices) is named with the byte
that is not UTF-8, instead of a traceback from the decoder.

>>> read_yaml_text("a: 1\\nb: 2\\na: 3\\n", source="x.yaml", what="thresholds file", error=ValueError)
Traceback (most recent call last):
...
ValueError: The thresholds file 'x.yaml' is not valid YAML: the key 'a' appears twice, on lines 1 and 3; keep one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class _DuplicateKey(yaml.YAMLError):
    """A mapping with the same key twice; the message names the key and both lines."""


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with a repeated key (merge keys ``<<`` resolved first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, (str, int, float, bool)) and key in lines:
                raise _DuplicateKey(f"the key {key!r} appears twice, on lines {lines[key]} and {line}; keep one.")
            if isinstance(key, (str, int, float, bool)):
                lines[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml_file(path: str | Path, *, what: str, error: type[Exception]) -> tuple[Any, str]:
    """The parsed content of ``path`` and its text; ``error`` says why the file cannot be read or parsed."""
    shown = str(path)
    try:
        raw = Path(path).expanduser().read_bytes()
    except IsADirectoryError:
        raise error(f"Cannot read the {what} {shown!r}: it is a folder; give the path of a YAML file.") from None
    except OSError as err:
        raise error(f"Cannot read the {what} {shown!r}: {err.strerror}.") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(f"The {what} {shown!r} is not UTF-8 text: byte 0x{raw[err.start]:02x} at offset {err.start} "
                    f"cannot be decoded (a Shift-JIS or CP932 file?). Save it as UTF-8.") from None
    return read_yaml_text(text, source=shown, what=what, error=error), text


def read_yaml_text(text: str, *, source: str, what: str, error: type[Exception]) -> Any:
    """The parsed ``text`` of the ``what`` at ``source``; invalid YAML or a duplicate key raises ``error``."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise error(f"The {what} {source!r} is not valid YAML: {err}") from None
