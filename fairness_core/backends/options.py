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


def _checked(text: str, convert, accept, requirement: str):
    """``convert(text)`` when it converts and ``accept`` takes it; else the one error message shape."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not accept(value):  # ``accept`` also turns away nan: no comparison holds for it
        raise ValueError(f"must be {requirement}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 1, "a whole number of 1 or more")


def nonnegative_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 0, "a whole number of 0 or more")


def positive_seconds(text: str) -> float:
    return _checked(text, float, lambda v: v > 0, "a number of seconds above 0")


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
