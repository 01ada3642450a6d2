"""The options of one audit run, in one place: the backend's settings and the evaluations' own options.

The plugin builds one from the command line; the session and the evaluations
read it.  Nothing here imports the session, so an evaluation that needs an
option (``--lexicon``, ``--sentiment``) depends on this small module only.

>>> from fairness_core.backends.base import BackendSettings
>>> AuditOptions(BackendSettings(model="demo"), sentiment="lexicon").settings.model
'demo'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fairness_core.backends.base import BackendSettings
from fairness_core.backends.registry import DEFAULT_BACKEND
from fairness_core.lexicon import LexiconLevel


@dataclass(frozen=True)
class AuditOptions:
    """``settings``: what the backend factory receives (model, seed, device, ..., its own options, the cache
    folder: ``None`` with ``--no-cache``); ``backend``: its ``--backend`` name; the rest are the evaluations'."""

    settings: BackendSettings
    backend: str = DEFAULT_BACKEND
    lexicon: Path | None = None
    lexicon_level: LexiconLevel | None = None
    sentiment: str | None = None
