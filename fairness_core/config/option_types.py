"""A command-line option as declared once (:class:`Option`), and the converters of option values.

Cheap to import: the pytest plugin, the CLI, the backends and the evaluations
declare their options with it, and the plugin is imported on every pytest run.  Each raises
``argparse.ArgumentTypeError`` with one message shape, "must be …. Got 'x'
instead.", which argparse (and so pytest, and the CLI) prints after the flag
as it is: ``argument --seed: must be a whole number >= 0. Got '-5' instead.``
(a plain ``ValueError`` would be replaced by argparse's "invalid positive_int
value").

>>> positive_int("4")
4
>>> positive_int("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be a whole number of 1 or more. Got '0' instead.
>>> base_url("http://127.0.0.1:8000/v1/")
'http://127.0.0.1:8000/v1'
>>> device("cuda:1"), batch_size("auto"), seed("7")
('cuda:1', 'auto', 7)
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The commands an option can belong to: the pytest audit, ``ja-fairness-audit generate`` and ``... plan``.
AUDIT, GENERATE, PLAN = "audit", "generate", "plan"


@dataclass(frozen=True)
class Option:
    """One command-line option, named once, with one default, one converter and one help text.

    ``type`` converts the string and raises :func:`invalid` for a bad value;
    ``switch`` options take no value (``--no-cache``).  ``default_text`` is
    what the help says about the default where the value is found at run time
    (``$JA_FAIRNESS_AUDIT_CACHE``, a model's own default).  ``commands`` are the
    commands that take it; ``required`` those that need it.

    >>> Option("--batch-size", "rows per batch", batch_size, "auto").help_text()
    'rows per batch (default: auto)'
    """

    flag: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    switch: bool = False
    default_text: str | None = None
    commands: frozenset[str] = frozenset({AUDIT, GENERATE})
    required: frozenset[str] = frozenset()
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The option's name in code: ``--batch-size`` is ``batch_size``."""
        return self.flag.lstrip("-").replace("-", "_")

    def help_text(self, owner: str = "") -> str:
        """The help line, prefixed with its owner (``[--backend=openai]``) and ending with the default."""
        default = self.default_text or (None if self.switch or self.default is None else str(self.default))
        return (f"[{owner}] " if owner else "") + self.help + (f" (default: {default})" if default else "")

    def argparse_arguments(self, command: str, owner: str = "") -> dict[str, Any]:
        """Keyword arguments of ``add_argument`` / pytest's ``addoption`` for this option under ``command``.

        argparse formats a help text with ``%`` (``%(default)s``), so a literal ``%`` is written ``%%``:

        >>> Option("--share", "at most 5% of prompts").argparse_arguments("audit")["help"]
        'at most 5%% of prompts'
        """
        help_text = self.help_text(owner).replace("%", "%%")
        if self.switch:
            return {"dest": self.dest, "action": "store_true", "help": help_text}
        arguments: dict[str, Any] = {"dest": self.dest, "default": self.default, "help": help_text}
        if self.type is not None:
            arguments["type"] = self.type
        if self.metavar:
            arguments["metavar"] = self.metavar
        if command in self.required:
            arguments["required"] = True
        return arguments


def invalid(requirement: str, text: str) -> argparse.ArgumentTypeError:
    """The one error for a bad option value: what is allowed, then what was given."""
    return argparse.ArgumentTypeError(f"must be {requirement}. Got {text!r} instead.")


def checked(text: str, convert, accept, requirement: str):
    """``convert(text)`` when it converts and ``accept`` takes it; else :func:`invalid`."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not accept(value):  # ``accept`` also turns away nan: no comparison holds for it
        raise invalid(requirement, text)
    return value


def positive_int(text: str) -> int:
    return checked(text, int, lambda v: v >= 1, "a whole number of 1 or more")


def nonnegative_int(text: str) -> int:
    return checked(text, int, lambda v: v >= 0, "a whole number of 0 or more")


def positive_seconds(text: str) -> float:
    return checked(text, float, lambda v: v > 0, "a number of seconds above 0")


def seed(text: str) -> int:
    """A seed is a whole number >= 0: the statistics' random generators reject a negative one after generation."""
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    raise invalid("a whole number >= 0", text)


def device(text: str) -> str:
    if text in ("auto", "cpu") or re.fullmatch(r"cuda(:\d+)?", text):
        return text
    raise invalid("auto, cpu, cuda or cuda:N", text)


def batch_size(text: str) -> int | str:
    if text == "auto":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise invalid("auto or a positive whole number", text)


def base_url(text: str) -> str:
    """An http(s) URL up to the API's version prefix, e.g. ``http://127.0.0.1:8000/v1``; no trailing slash."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise invalid("an http:// or https:// URL such as http://127.0.0.1:8000/v1", text)
    return text.rstrip("/")


def one_of(*allowed: str) -> Callable[[str], str]:
    """A converter that accepts exactly the ``allowed`` words."""
    def convert(text: str) -> str:
        if text not in allowed:
            raise invalid(f"one of {', '.join(allowed)}", text)
        return text
    return convert
