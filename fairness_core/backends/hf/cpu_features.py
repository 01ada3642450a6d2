"""What this CPU can compute natively: its name, its instruction-set extensions, and the dtypes it has units for.

Two decisions depend on it.  The engine's kernel chooser names the missing
extension when it excludes a kernel that cannot run here ("no AVX-512"), and
``--dtype=auto`` runs a bfloat16 or float16 checkpoint in float32 on a CPU
without units for the checkpoint's dtype: there PyTorch emulates the narrow
type by converting every operand, which measured about 80 times slower than
float32 on an AVX2-only AMD EPYC (0.6 against 49 completions/s).

The rule reads ``/proc/cpuinfo`` rather than timing a product: a dtype chosen
by timing could flip between two runs on a loaded machine and change the
completions, and the flags say the same thing every time.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

import torch

#: The x86 ``/proc/cpuinfo`` flags that decide which kernels run and win, and how messages name them.
ISA_FLAGS = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_vnni": "AVX512-VNNI", "avx512_bf16": "AVX512-BF16",
             "avx512_fp16": "AVX512-FP16", "amx_tile": "AMX", "amx_bf16": "AMX-BF16", "amx_fp16": "AMX-FP16",
             "amx_int8": "AMX-INT8"}
#: Flags (x86 ``flags``, Arm ``Features``) of units that compute a narrow dtype natively, any one sufficing.
NATIVE_UNITS = {
    torch.bfloat16: ("avx512_bf16", "amx_bf16", "bf16"),
    torch.float16: ("avx512_fp16", "amx_fp16", "fphp"),
}


@functools.cache
def cpu_info() -> dict[str, str]:
    """``vendor_id``, ``model name`` and ``flags`` of the first CPU in ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_name() -> str:
    """The CPU's marketing name where Linux tells it (torch does not), else what ``platform`` knows."""
    return cpu_info().get("model name") or platform.processor() or platform.machine()


def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (x86 ``flags``, Arm ``Features``), or ``None`` where the system does not list them."""
    info = cpu_info()
    listed = info.get("flags", info.get("Features"))
    return None if listed is None else frozenset(listed.split())


def extensions() -> list[str]:
    """The extensions of :data:`ISA_FLAGS` this CPU has, by their names (``["AVX2", "AVX-512", ...]``)."""
    flags = cpu_flags() or frozenset()
    return [name for flag, name in ISA_FLAGS.items() if flag in flags]


def missing_extensions() -> str:
    """What an x86 CPU lacks that the faster kernels need: ``no AVX-512``, ``no AMX``, or ``""``.

    >>> missing_extensions() in {"", "no AVX-512", "no AMX", "no AVX-512 or AMX"}
    True
    """
    flags = cpu_flags()
    if flags is None or "avx2" not in flags:
        return ""
    lacking = [name for flag, name in (("avx512f", "AVX-512"), ("amx_tile", "AMX")) if flag not in flags]
    return "no " + " or ".join(lacking) if lacking else ""


def cpu_line() -> str:
    """Vendor, model and extensions: the line a speed figure is quoted with."""
    info = cpu_info()
    return (f"{info.get('vendor_id', platform.machine())} {cpu_name()}; "
            f"{', '.join(extensions()) or 'none of ' + ', '.join(ISA_FLAGS.values())}; "
            f"torch sees {torch.backends.cpu.get_cpu_capability()}")


def has_native_units(dtype: torch.dtype) -> bool | None:
    """Whether this CPU computes ``dtype`` natively: always for float32; ``None`` where the flags are unknown."""
    if dtype not in NATIVE_UNITS:
        return True
    flags = cpu_flags()
    if flags is None:
        return None
    return any(flag in flags for flag in NATIVE_UNITS[dtype])


def units_wanted(dtype: torch.dtype) -> str:
    """The units that would compute ``dtype`` natively, as messages name them (``AVX512-BF16 or AMX``)."""
    return {torch.bfloat16: "AVX512-BF16 or AMX", torch.float16: "AVX512-FP16 or AMX-FP16"}.get(dtype, "")
