"""The transformers releases the in-process engine is tested with, checked at start-up.

The engine's decoding loop reaches into transformers below ``generate``: the
forward pass's KV-cache keyword (``past_key_values`` until 5.23, ``cache`` from
5.24), ``StaticCache`` and its ``reorder_cache``.  A release outside the range
CI ran may change any of them, and the audit's numbers with them, without an
error.  So such a release is refused, as transformers' own ``require_version``
refuses, unless the user says explicitly to go on; the report then says so.
CI runs the lowest release of the range (``.ci/vllm-check``, whose vLLM pins
it) and the newest (``.ci/run``).

>>> check_transformers("5.24.0", environ={}) is None
True
>>> check_transformers("5.30.0", environ={OVERRIDE_VARIABLE: "1"})
'transformers 5.30.0, outside the tested range >=5.19,<5.25 (allowed by JA_FAIRNESS_AUDIT_UNTESTED_TRANSFORMERS=1)'
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from fairness_core.errors import AuditUsageError

#: The range pyproject.toml declares (a test checks that the two agree).
SUPPORTED_TRANSFORMERS = ">=5.19,<5.25"
#: Set to 1 to run under a transformers release outside :data:`SUPPORTED_TRANSFORMERS` anyway.
OVERRIDE_VARIABLE = "JA_FAIRNESS_AUDIT_UNTESTED_TRANSFORMERS"


class UntestedTransformersError(AuditUsageError):
    """The installed transformers is outside the tested range and no override was given."""


def check_transformers(version: str, *, environ: Mapping[str, str] = os.environ) -> str | None:
    """``None`` for a tested release; for an untested one that the user allowed, the note the report shows.

    Raises :class:`UntestedTransformersError` for an untested release without :data:`OVERRIDE_VARIABLE` set to 1.
    """
    try:
        tested = Version(version) in SpecifierSet(SUPPORTED_TRANSFORMERS)
    except InvalidVersion:
        tested = False
    if tested:
        return None
    if environ.get(OVERRIDE_VARIABLE) == "1":
        return f"transformers {version}, outside the tested range {SUPPORTED_TRANSFORMERS} (allowed by {OVERRIDE_VARIABLE}=1)"
    raise UntestedTransformersError(
        f"transformers {version} is installed, but the audit's engine is tested with transformers "
        f"{SUPPORTED_TRANSFORMERS} only: it decodes through transformers internals that change between releases, "
        f"and a change there gives wrong numbers without an error. Install a tested release "
        f"(pip install 'transformers{SUPPORTED_TRANSFORMERS}'), or set {OVERRIDE_VARIABLE}=1 to run anyway "
        f"(the start-up decoding check still runs, and the report names the untested release).")
