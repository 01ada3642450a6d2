"""The dtype a model runs in: ``--dtype`` against the checkpoint's own dtype and what this CPU computes natively.

Most current Japanese LMs ship in bfloat16.  On a GPU, or on a CPU with
bfloat16 units (AVX512-BF16 or AMX), the engine runs them as shipped.  On a
CPU without such units every bfloat16 product is emulated, about 80 times
slower than float32 on the AVX2-only machine this was measured on, and
oneDNN's fast kernels refuse to run at all; a full HONEST protocol would take
most of a day.  So there the model runs in float32, whether the dtype came from
the config (``--dtype=auto``) or from an explicit ``--dtype=bfloat16``, and the
choice and its reason are stated in the header and the provenance.  Float32
holds every bfloat16 and float16 weight exactly, so the audit measures the
shipped weights, computed with more precision than the narrow type would.
The same rule holds for float16 (AVX512-FP16 or AMX-FP16).  Where the flags
cannot be read, the dtype asked for is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairness_core.backends.hf.cpu_features import has_native_units, units_wanted

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype to load the weights in (``None``: as the checkpoint says) and, where it differs, why."""

    dtype: torch.dtype | None
    reason: str = ""

    def describe(self, loaded: torch.dtype) -> str:
        """What the header and provenance show: ``float32 (config bfloat16; this CPU has no native ...)``."""
        name = str(loaded).removeprefix("torch.")
        return f"{name} ({self.reason})" if self.reason else name


def choose_dtype(asked: str, configured: torch.dtype | str | None, device: torch.device) -> DtypeChoice:
    """The dtype for ``--dtype=asked`` on ``device``, for a checkpoint whose config says ``configured``.

    >>> choose_dtype("float32", "bfloat16", torch.device("cpu"))
    DtypeChoice(dtype=torch.float32, reason='')
    >>> choose_dtype("auto", None, torch.device("cuda"))
    DtypeChoice(dtype=None, reason='')
    """
    wanted = DTYPES[asked] if asked != "auto" else _as_dtype(configured)
    keep = DtypeChoice(None if asked == "auto" else wanted)
    if device.type != "cpu" or wanted is None or has_native_units(wanted) is not False:
        return keep
    name = str(wanted).removeprefix("torch.")
    origin = f"config {name}" if asked == "auto" else f"asked {name}"
    return DtypeChoice(torch.float32, f"{origin}; this CPU has no native {name} units ({units_wanted(wanted)}), "
                                      f"where {name} is emulated many times slower than float32")


def _as_dtype(configured: torch.dtype | str | None) -> torch.dtype | None:
    """The config's ``dtype`` (a ``torch.dtype``, or its name in older configs), or ``None`` when it names none."""
    if isinstance(configured, torch.dtype):
        return configured
    return DTYPES.get(str(configured).removeprefix("torch.")) if configured else None
