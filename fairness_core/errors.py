"""The one base class of every error that should end an audit run as a usage error.

A bad option value, a model that cannot be loaded, an unreadable results file:
each is the user's to fix, not a bug, so the plugin catches this one class and
turns it into a single ``pytest.UsageError`` instead of listing every error
class of every module.
"""


class AuditUsageError(Exception):
    """A problem with what the user passed (an option, a file, a model); the message says what to change."""
