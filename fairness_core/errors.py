"""The one exception base for problems that should end a run as a usage error.

The pytest plugin catches :class:`AuditUsageError` and nothing narrower, so a
new loader or backend only has to derive its error from it to get the
"one clear message, no traceback, exit code 4" behaviour.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AuditUsageError(Exception):
    """Bad input or an unusable environment: the message names the value and says what is allowed."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """The suggestion part of an "unknown name" message: `` Did you mean 'x'?`` for the closest choice, else ``""``.

    >>> did_you_mean("hff", ["hf", "vllm"])
    " Did you mean 'hf'?"
    """
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
