"""The one exception base for problems that should end a run as a usage error.

The pytest plugin catches :class:`AuditUsageError` and nothing narrower, so a
new loader or backend only has to derive its error from it to get the
"one clear message, no traceback, exit code 4" behaviour.
"""


class AuditUsageError(Exception):
    """Bad input or an unusable environment: the message names the value and says what is allowed."""
