"""The options of one audit run, as the session, the backends and the evaluations read them.

Built once from the command line by :func:`fairness_core.run.options.audit_options`
(the pytest plugin and ``ja-fairness-audit`` alike).  An evaluation reads its
own options by name with :meth:`AuditOptions.value`, so this module names none.

>>> from fairness_core.backends.base import BackendSettings, ModelReference
>>> options = AuditOptions(BackendSettings(ModelReference("demo", defaults={"scorer": "offline"})), "hf")
>>> options.value("scorer"), AuditOptions(BackendSettings(ModelReference("demo")), "hf", {"scorer": "x"}).value("scorer")
('offline', 'x')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairness_core.backends.base import BackendSettings


@dataclass(frozen=True)
class AuditOptions:
    """``settings``: what the backend factory receives (model, seed, device, ..., its own options, the cache
    folder: ``None`` with ``--no-cache``); ``backend``: its ``--backend`` name; ``values``: every other option's
    value by name (``lexicon_level`` for ``--lexicon-level``)."""

    settings: BackendSettings
    backend: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        """The value given for the option ``name``; where none was given, the model's own default, else ``None``."""
        given = self.values.get(name)
        return given if given is not None else self.settings.model.defaults.get(name)
