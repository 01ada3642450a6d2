"""Converters for backends' command-line options, cheap to import (the registry names them).

Each raises ``ValueError`` with a message naming the bad value and what is
allowed; argparse (and so pytest) turns it into one usage error.

>>> positive_int("4")
4
>>> positive_int("0")
Traceback (most recent call last):
...
ValueError: must be a whole number of 1 or more, got '0'
>>> base_url("http://127.0.0.1:8000/v1/")
'http://127.0.0.1:8000/v1'
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"must be a whole number of 1 or more, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"must be a whole number of 0 or more, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also rejects nan
        raise ValueError(f"must be a number of seconds above 0, got {text!r}")
    return value


def base_url(text: str) -> str:
    """An http(s) URL up to the API's version prefix, e.g. ``http://127.0.0.1:8000/v1``; no trailing slash."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL such as http://127.0.0.1:8000/v1, got {text!r}")
    return text.rstrip("/")


def one_of(*allowed: str) -> Callable[[str], str]:
    """A converter that accepts exactly the ``allowed`` words."""
    def convert(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, got {text!r}")
        return text
    return convert
