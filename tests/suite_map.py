"""The map of the test suite in ``tests/README.md``: which files hold unit, property and end-to-end tests.

The map is the one place where a file's kind is written down.  ``conftest.py``
marks every test with its file's kind, so that ``pytest tests -m property``
runs one group, and ``test_docs.py`` checks that the map lists every file
and that each file is of the kind the map gives it.
"""

from __future__ import annotations

import re
from pathlib import Path

MAP = Path(__file__).with_name("README.md")
KINDS = ("unit", "property", "end-to-end")
#: A row names a test file by its path (``tests/backends/hf/test_engine.py``) and gives its kind; the map keys it
#: by its path under ``tests/``.
ROW = re.compile(r"^\| `tests/((?:\w+/)*test_\w+\.py)` \| (" + "|".join(KINDS) + r") \|", flags=re.M)


def map_rows() -> list[tuple[str, str]]:
    """Every (file, kind) row of the map, in order, duplicates included."""
    return ROW.findall(MAP.read_text(encoding="utf-8"))


def file_kinds() -> dict[str, str]:
    return dict(map_rows())


def marker(kind: str) -> str:
    """The pytest marker of a kind: ``-m`` takes Python names, so ``end-to-end`` is ``end_to_end``."""
    return kind.replace("-", "_")
