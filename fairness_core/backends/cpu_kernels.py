"""Faster CPU kernels for the model's own arithmetic while the engine generates.

Two of PyTorch's default CPU kernels are far from what the hardware does on
the shapes of batched decoding; for the duration of a ``generate`` call the
engine routes around them, and puts the model back as it was afterwards.  The
arithmetic is the model's: the same products and the same softmax, summed in
another order, so results agree with the defaults to float rounding (about
1e-6 relative in float32), as the same kernel on two batch shapes does.

**Float32 linear layers go to oneDNN.**  PyTorch hands a float32
``nn.Linear`` to MKL's sgemm, and MKL picks its kernels by CPU vendor: on AMD
processors it runs its AVX2 code even where the CPU has AVX-512.  oneDNN,
which every x86 build of PyTorch ships and already uses for bfloat16
products, generates its kernels for the instruction set it finds.  On the
2-core AMD EPYC (AVX-512) development machine::

    [320 x 768] @ [768 x 3072]     MKL 173 GFLOP/s   oneDNN 445 GFLOP/s
    [320 x 768] @ [768 x 32000]    MKL 149 GFLOP/s   oneDNN 343 GFLOP/s

The op is ``torch.ops.mkldnn._linear_pointwise``, the one TorchInductor emits
for linear layers on the CPU; it takes the weights as they are (no packed
copy, so no second copy of the model in memory) and returns a dense tensor.

**Attention runs as matmul, softmax, matmul** (``attn_implementation="eager"``)
instead of PyTorch's CPU flash-attention kernel, whose fixed cost per call
exceeds the arithmetic when one new token attends to a few dozen cached ones:
for 320 rows x 12 heads x 20 keys, 2.3 ms against 1.1 ms in float32 and
4.5 ms against 1.2 ms in bfloat16.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch
from transformers.pytorch_utils import Conv1D


@contextlib.contextmanager
def fast_cpu_kernels(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, the model uses the faster kernels where they apply; afterwards it is as it was.

    Does nothing for a model on a GPU.
    """
    with onednn_linears(model), eager_attention(model):
        yield


def _on_cpu(model: torch.nn.Module) -> bool:
    parameter = next(model.parameters(), None)
    return parameter is not None and parameter.device.type == "cpu"


def onednn_available() -> bool:
    """Whether this PyTorch build has oneDNN's linear op and runs on an x86 CPU with AVX2 or better."""
    return (
        torch.backends.cpu.get_cpu_capability() in {"AVX2", "AVX512"}
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def _onednn_linear(x: torch.Tensor, *, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight.T + bias`` by oneDNN; ``weight`` is ``[out_features, in_features]`` as in ``nn.Linear``."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _linear_weight_and_bias(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The layer's float32 weight in ``nn.Linear`` layout and its bias, or ``None`` for a layer left alone.

    Only the two plain layer types are swapped: ``nn.Linear`` (Llama, NeoX and
    most models) and ``transformers``' ``Conv1D`` (GPT-2, whose weight is stored
    transposed; oneDNN reads the transposed view without copying it).
    Subclasses (quantised layers, LoRA wrappers) and modules whose ``forward``
    is already replaced on the instance (accelerate's offloading hooks) keep
    their own code; bfloat16 layers already run on oneDNN.
    """
    if type(module) not in (torch.nn.Linear, Conv1D) or "forward" in vars(module):
        return None
    if module.weight.dtype != torch.float32:
        return None
    weight = module.weight if type(module) is torch.nn.Linear else module.weight.t()
    return weight, module.bias


@contextlib.contextmanager
def onednn_linears(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, the model's float32 linear layers on the CPU run on oneDNN."""
    swapped = []
    if _on_cpu(model) and onednn_available():
        for module in model.modules():
            layer = _linear_weight_and_bias(module)
            if layer is not None:
                weight, bias = layer
                module.forward = functools.partial(_onednn_linear, weight=weight, bias=bias)
                swapped.append(module)
    try:
        yield
    finally:
        for module in swapped:
            del module.forward


@contextlib.contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, a CPU model configured for ``sdpa`` attention uses ``eager`` attention."""
    configured = getattr(model.config, "_attn_implementation", None)
    swap = _on_cpu(model) and configured == "sdpa"
    if swap:
        model.set_attn_implementation("eager")
    try:
        yield
    finally:
        if swap:
            model.set_attn_implementation(configured)
