"""The engine's CPU kernels, chosen by timing them on this CPU at the model's own shapes.

Which implementation of a linear layer is fastest depends on the CPU, not on a
rule that holds everywhere: MKL's float32 GEMM runs its AVX2 code on AMD
processors, so oneDNN was twice as fast on the AMD development machine, while on
an Intel Xeon with AMX MKL was the faster of the two on square products; packed
(reordered) weights pay off on some shapes and not on others; bfloat16 runs on
AMX or AVX512-BF16 units only where oneDNN picks those kernels.  So at the
start of a ``generate`` call the engine times every candidate on the shapes it
is about to run - each distinct linear-layer shape of the model at the batch's
row count, a slice of the LM head, and one decoding step's attention - and uses
the fastest of each.

Each candidate runs once untimed and :data:`TIMED_CALLS` times, at most a few
dozen products of the decoding batch's size (the report records how long it
took), and the decision is written to ``kernel-choices.json`` in the cache
folder, keyed by CPU model, torch version, thread count, dtype, shape and rows,
so a second run on the same machine measures nothing.  A decision taken while
other processes compete for the CPU can be a poor one; deleting the file
measures again.  Every candidate computes the layer's own
arithmetic; they differ in the order of the sums, as one kernel on two batch
shapes does.

**Support before speed.**  Which kernels can run at all depends on the CPU
too: oneDNN's bfloat16 and float16 inner products need AVX-512 (or
AVX-NE-CONVERT), MKL has no bfloat16 GEMM.  So before anything is timed,
every candidate is *probed*: one tiny product of its dtype, in both weight
layouts the engine uses and at two row counts, compared with ``F.linear``.  A
candidate that raises or computes something else is excluded, with its reason,
and never timed; the exclusions go into ``kernel-choices.json`` and the
choice's summary ("bfloat16: onednn, onednn-packed unsupported on this CPU (no
AVX-512)").  A candidate that passes the probe but fails on a real shape is
excluded the same way at its untimed warm-up call.  ``aten``, PyTorch's own
kernel, is what the model runs without the engine and is never excluded.

Tests inject ``timer`` (a function of a label and a callable, returning
seconds) to check that the faster candidate wins whichever it is.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from filelock import FileLock

from fairness_core.backends.hf.cpu_features import cpu_name, missing_extensions

#: The file, in the cache folder, that keeps the decisions of earlier runs.
CHOICES_FILE = "kernel-choices.json"
#: Timed calls per candidate after one untimed warm-up; the fastest counts (contention only adds time).
TIMED_CALLS = 2
#: Packed kernels keep a reordered second copy of the weights while the engine generates: only
#: offered when that copy takes at most this share of the free host memory.
PACKING_MEMORY_SHARE = 0.25

Timer = Callable[[str, Callable[[], object]], float]
LinearForward = Callable[[torch.Tensor], torch.Tensor]


def _onednn_forward(x: torch.Tensor, *, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _mkl_packed_forward(x: torch.Tensor, *, packed: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                        rows: int) -> torch.Tensor:
    flat = torch.ops.mkl._mkl_linear(x.reshape(-1, x.shape[-1]), packed, weight, bias, rows)
    return flat.reshape(*x.shape[:-1], weight.shape[0])


def _aten(weight, bias, rows) -> LinearForward:
    return functools.partial(F.linear, weight=weight, bias=bias)


def _onednn(weight, bias, rows) -> LinearForward:
    return functools.partial(_onednn_forward, weight=weight, bias=bias)


def _onednn_packed(weight, bias, rows) -> LinearForward:
    return functools.partial(_onednn_forward, weight=torch.ops.mkldnn._reorder_linear_weight(weight, rows), bias=bias)


def _mkl_packed(weight, bias, rows) -> LinearForward:
    packed = torch.ops.mkl._mkl_reorder_linear_weight(weight, rows)
    return functools.partial(_mkl_packed_forward, packed=packed, weight=weight, bias=bias, rows=rows)


@dataclass(frozen=True)
class LinearKernel:
    """One way to compute ``x @ weight.T + bias``; ``prepare(weight, bias, rows)`` returns the forward function.

    ``weight`` is ``[out_features, in_features]`` as in ``nn.Linear`` (a
    transposed view for GPT-2's ``Conv1D``); ``rows`` is the batch the packed
    kernels lay the weight out for (other row counts still compute correctly).
    """

    name: str
    prepare: Callable[[torch.Tensor, torch.Tensor | None, int], LinearForward]
    dtypes: frozenset[torch.dtype]
    packs: bool = False


#: ``aten``: PyTorch's default, ``F.linear`` (MKL's sgemm for float32, oneDNN's matmul for bfloat16).
#: ``onednn``: oneDNN's inner product on the weights as they are (what TorchInductor emits).
#: ``onednn-packed``/``mkl-packed``: the same libraries on a copy of the weights reordered for the batch.
LINEAR_KERNELS = {
    kernel.name: kernel
    for kernel in (
        LinearKernel("aten", _aten, frozenset({torch.float32, torch.bfloat16, torch.float16})),
        LinearKernel("onednn", _onednn, frozenset({torch.float32, torch.bfloat16})),
        LinearKernel("onednn-packed", _onednn_packed, frozenset({torch.float32, torch.bfloat16}), packs=True),
        LinearKernel("mkl-packed", _mkl_packed, frozenset({torch.float32}), packs=True),
    )
}
ATTENTION_KERNELS = ("eager", "sdpa")


def onednn_available() -> bool:
    """Whether this PyTorch build has oneDNN's linear op and runs on an x86 CPU with AVX2 or better."""
    return (
        torch.backends.cpu.get_cpu_capability() in {"AVX2", "AVX512"}
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def linear_candidates(dtype: torch.dtype, *, packing: bool) -> list[LinearKernel]:
    """The kernels this build offers for ``dtype``: ``aten`` always, the others on x86 with oneDNN (and MKL).

    Offered is not admitted: :func:`linear_support` says which of them run on this CPU.
    """
    if not onednn_available():
        return [LINEAR_KERNELS["aten"]]
    return [
        kernel for kernel in LINEAR_KERNELS.values()
        if dtype in kernel.dtypes and (packing or not kernel.packs)
        and (kernel.name != "mkl-packed" or torch._C.has_mkl)
    ]


#: How far a probed product may differ from ``F.linear``'s, per dtype: a few units in the last place of a
#: 16-term sum (a kernel that sums in another order), far below what a wrong product gives.
PROBE_TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 5e-2, torch.float16: 1e-2}


@functools.cache
def linear_support(kernel: LinearKernel, dtype: torch.dtype) -> str | None:
    """Why the linear ``kernel`` cannot run ``dtype`` products on this CPU, or ``None`` when it can.

    One tiny product per weight layout (``nn.Linear``'s and GPT-2's
    transposed view), with and without a bias, laid out for 3 rows and applied
    to 3 rows and to 1, each compared with ``F.linear``.  Any error is caught:
    a kernel that cannot run here is a fact about the CPU, not a failure of
    the run.  Cached per process (a few milliseconds per kernel and dtype).
    """
    if kernel.name == "aten":
        return None
    generator = torch.Generator().manual_seed(0)
    stored = torch.randn(24, 16, generator=generator).to(dtype)
    try:
        for weight in (stored, stored.t().contiguous().t()):
            for bias in (None, torch.randn(24, generator=generator).to(dtype)):
                forward = kernel.prepare(weight, bias, 3)
                for rows in (3, 1):
                    x = torch.randn(rows, 16, generator=generator).to(dtype)
                    got, expected = forward(x), F.linear(x, weight, bias)
                    error = (got.float() - expected.float()).abs().max().item()
                    if got.shape != expected.shape or not error <= PROBE_TOLERANCE[dtype] * 16:
                        return f"computes a different product (largest difference {error:.3g} from F.linear)"
    except Exception as err:  # noqa: BLE001 - whatever a kernel raises, it only excludes that kernel
        return _reason(err)
    return None


@functools.cache
def attention_support(name: str, dtype: torch.dtype) -> str | None:
    """Why the attention ``name`` cannot run in ``dtype`` here, or ``None`` (one tiny decoding step, errors caught)."""
    try:
        _attention_run(name, AttentionShape(heads=2, head_dim=8, keys=5), dtype, rows=2)()()
    except Exception as err:  # noqa: BLE001 - as for linear kernels
        return _reason(err)
    return None


def _reason(err: BaseException) -> str:
    """An exception as one line of a report: its type and the first line of its message."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else '(no message)'}"


@dataclass(frozen=True, order=True)
class LinearShape:
    """What a linear layer's kernel choice depends on besides the CPU: its size and whether it adds a bias."""

    in_features: int
    out_features: int
    bias: bool

    def __str__(self) -> str:
        return f"{self.in_features}x{self.out_features}{'+bias' if self.bias else ''}"


@dataclass(frozen=True)
class AttentionShape:
    """One decoding step's attention: ``heads`` queries of one token over ``keys`` cached ones, per row."""

    heads: int
    head_dim: int
    keys: int

    def __str__(self) -> str:
        return f"{self.heads}x{self.head_dim} over {self.keys} keys"


@dataclass
class KernelChoice:
    """The kernels the engine uses for one model at one batch size, and how the choice was made."""

    dtype: torch.dtype
    rows: int
    linears: dict[LinearShape, str] = field(default_factory=dict)
    attention: str | None = None
    measured_seconds: float = 0.0
    from_cache: int = 0
    #: Candidates left out because they cannot run here: name (``attention sdpa`` for attention) -> reason.
    excluded: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for the report's provenance, e.g. ``float32 x320: 768x2304+bias onednn, ...; attention eager``.

        Exclusions come first: ``bfloat16: onednn, onednn-packed unsupported on
        this CPU (no AVX-512); x320: 768x2304+bias aten, ...``.
        """
        parts = [f"{shape} {name}" for shape, name in sorted(self.linears.items())]
        if self.attention:
            parts.append(f"attention {self.attention}")
        how = f"measured in {self.measured_seconds:.2f} s" if self.measured_seconds else "measured earlier"
        dtype = str(self.dtype).removeprefix("torch.")
        unsupported = ""
        if self.excluded:
            lacking = missing_extensions()
            unsupported = (f"{dtype}: {', '.join(self.excluded)} unsupported on this CPU"
                           f"{f' ({lacking})' if lacking else ''}; ")
        return f"{unsupported}{dtype} x{self.rows}: {', '.join(parts)} ({how}, on {cpu_name()})"


def wall_timer(label: str, run: Callable[[], object]) -> float:
    """Seconds one call of ``run`` takes (the label is for injected timers in tests)."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


class KernelChooser:
    """Times the candidate kernels for a model's shapes, or reads an earlier decision from ``cache_dir``.

    ``cache_dir=None`` keeps the decisions in memory only.  ``packing`` (None:
    decided by free memory) offers the packed kernels.
    """

    def __init__(self, cache_dir: Path | str | None = None, *, timer: Timer = wall_timer,
                 packing: bool | None = None):
        self.path = Path(cache_dir) / CHOICES_FILE if cache_dir is not None else None
        self.timer = timer
        self.packing = packing
        self._memory: dict[str, str] = {}

    def key(self, kind: str, dtype: torch.dtype, shape, rows: int | None = None) -> str:
        """What a decision depends on: the CPU, the library, the threads, the dtype, the shape and the rows.

        An exclusion (``kind="unsupported"``, ``shape`` the kernel's name) has no rows.
        """
        return (f"{cpu_name()} | torch {torch.__version__} | {torch.get_num_threads()} threads | "
                f"{str(dtype).removeprefix('torch.')} | {kind} {shape}" + ("" if rows is None else f" | {rows} rows"))

    def choose(self, linears: Mapping[LinearShape, tuple[torch.Tensor, torch.Tensor | None]], *,
               dtype: torch.dtype, rows: int, attention: AttentionShape | None,
               packed_bytes: int | None = None) -> KernelChoice:
        """The fastest kernel per linear shape (one sample layer's weight and bias each) and for the attention.

        ``packed_bytes`` is what packed copies of all the model's layers would
        take (by default, of the samples alone).
        """
        packing = self.packing
        if packing is None:
            if packed_bytes is None:
                packed_bytes = sum(w.numel() * w.element_size() for w, _ in linears.values())
            packing = packed_bytes <= PACKING_MEMORY_SHARE * _free_memory()
        choice = KernelChoice(dtype, rows)
        known = self._read()
        fresh: dict[str, str] = {}
        start = time.perf_counter()
        candidates = {k.name: k for k in linear_candidates(dtype, packing=packing)
                      if _admitted(k.name, linear_support(k, dtype), choice.excluded)}
        for shape, (weight, bias) in linears.items():
            key = self.key("linear", dtype, shape, rows)
            name = known.get(key)
            if name not in candidates:
                name = self._fastest(f"linear {shape}", {n: _linear_run(k, weight, bias, rows)
                                                         for n, k in candidates.items()}, choice.excluded) or "aten"
                fresh[key] = name
            choice.linears[shape] = name
        if attention is not None:
            attentions = [n for n in ATTENTION_KERNELS if _admitted(f"attention {n}", attention_support(n, dtype),
                                                                    choice.excluded)]
            key = self.key("attention", dtype, attention, rows)
            fastest = known.get(key)
            if fastest not in attentions and attentions:
                fastest = self._fastest(f"attention {attention}", {n: _attention_run(n, attention, dtype, rows)
                                                                     for n in attentions}, choice.excluded,
                                        prefix="attention ")
                if fastest is not None:
                    fresh[key] = fastest
            choice.attention = fastest if fastest in attentions else None
        if fresh:
            choice.measured_seconds = time.perf_counter() - start
        fresh.update({self.key("unsupported", dtype, name): reason for name, reason in choice.excluded.items()
                      if known.get(self.key("unsupported", dtype, name)) != reason})
        if fresh:
            self._write(fresh)
        return choice

    def _fastest(self, what: str, runs: Mapping[str, Callable[[], Callable[[], object]]],
                 excluded: dict[str, str], *, prefix: str = "") -> str | None:
        """The name of the fastest run: one warm-up each, then :data:`TIMED_CALLS` rounds over all; the minimum counts.

        Interleaving the rounds spreads a burst of contention over every
        candidate.  The timer sees labels such as ``linear 768x3072+bias onednn``.
        A run that raises while it is prepared or warmed up is left out and
        its reason added to ``excluded`` (under ``prefix + name``); the others
        are still timed.  ``None`` when none of them ran.
        """
        prepared = {}
        for name, make in runs.items():
            try:
                run = make()
                run()
            except Exception as err:  # noqa: BLE001 - a candidate that cannot run here is excluded, not fatal
                excluded[prefix + name] = f"{_reason(err)} (at {what})"
                continue
            prepared[name] = run
        if not prepared:
            return None
        best = dict.fromkeys(prepared, float("inf"))
        for _ in range(TIMED_CALLS):
            for name, run in prepared.items():
                best[name] = min(best[name], self.timer(f"{what} {name}", run))
        return min(best, key=best.__getitem__)

    def _read(self) -> dict[str, str]:
        if self.path is None or not self.path.exists():
            return dict(self._memory)
        try:
            return {**json.loads(self.path.read_text()), **self._memory}
        except (OSError, ValueError):
            return dict(self._memory)  # a damaged file is measured again and rewritten

    def _write(self, fresh: dict[str, str]) -> None:
        """Keep ``fresh`` decisions in memory and, where the cache folder can be written, on disk.

        A read-only cache or a full disk only means the next run measures again.
        """
        self._memory.update(fresh)
        if self.path is None:
            return
        temporary = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.path) + ".lock"):
                merged = {**self._read(), **fresh}
                handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
                with os.fdopen(handle, "w") as out:
                    json.dump(merged, out, indent=1, sort_keys=True)
                os.replace(temporary, self.path)
        except OSError:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)


def _admitted(name: str, reason: str | None, excluded: dict[str, str]) -> bool:
    """Whether a probed candidate may be timed; a rejected one is recorded in ``excluded`` with its reason."""
    if reason is not None:
        excluded[name] = reason
    return reason is None


def _free_memory() -> int:
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _linear_run(kernel: LinearKernel, weight, bias, rows) -> Callable[[], Callable[[], object]]:
    """A maker of one timed call: the kernel prepared for the layer, applied to ``rows`` random rows."""
    def make():
        forward = kernel.prepare(weight, bias, rows)
        x = torch.randn(rows, weight.shape[1], dtype=weight.dtype)
        return lambda: forward(x)
    return make


def _attention_run(name: str, shape: AttentionShape, dtype: torch.dtype, rows: int):
    """A maker of one decoding step's attention as ``transformers`` computes it under ``eager`` or ``sdpa``."""
    def make():
        q = torch.randn(rows, shape.heads, 1, shape.head_dim, dtype=dtype)
        k, v = (torch.randn(rows, shape.heads, shape.keys, shape.head_dim, dtype=dtype) for _ in range(2))
        mask = torch.ones(rows, 1, 1, shape.keys, dtype=torch.bool)
        if name == "sdpa":
            return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        bias = torch.zeros(rows, 1, 1, shape.keys, dtype=dtype)
        scale = shape.head_dim ** -0.5

        def eager():
            weights = (torch.matmul(q, k.transpose(2, 3)) * scale + bias).softmax(-1, dtype=torch.float32)
            return torch.matmul(weights.to(dtype), v)
        return eager
    return make


def distinct_shapes(layers: Iterable[tuple[torch.Tensor, torch.Tensor | None]]
                    ) -> dict[LinearShape, tuple[torch.Tensor, torch.Tensor | None]]:
    """Each distinct shape among ``(weight, bias)`` pairs, with the first layer of that shape as its sample."""
    shapes: dict[LinearShape, tuple[torch.Tensor, torch.Tensor | None]] = {}
    for weight, bias in layers:
        shapes.setdefault(LinearShape(weight.shape[1], weight.shape[0], bias is not None), (weight, bias))
    return shapes
