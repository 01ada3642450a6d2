"""Faster CPU kernels for the model's own arithmetic while the engine generates.

PyTorch's default CPU kernels are often far from what the hardware does on
the shapes of batched decoding.  For the duration of a ``generate`` call the
engine swaps in the kernels that ``kernel_choice.py`` measured fastest on this
CPU, and puts the model back as it was afterwards.  The arithmetic is the
model's: the same products and the same softmax, summed in another order, so
results agree with the defaults to float rounding (about 1e-6 relative in
float32), as the same kernel on two batch shapes does.

**Linear layers** (``nn.Linear`` and GPT-2's ``Conv1D``) run on the chosen
kernel for their shape: MKL (PyTorch's default), oneDNN's inner product, or
either library on weights reordered for the batch.  On the 2-core AMD EPYC
(AVX-512) development machine oneDNN wins in float32, because MKL runs its
AVX2 code on AMD::

    [320 x 768] @ [768 x 3072]     MKL 173 GFLOP/s   oneDNN 445 GFLOP/s

**Attention** runs as ``eager`` (matmul, softmax, matmul) or ``sdpa``
(PyTorch's CPU flash-attention kernel), whichever is faster on one decoding
step; the flash kernel's fixed cost per call exceeds the arithmetic when one
new token attends to a few dozen cached ones (320 rows x 12 heads x 20 keys:
2.3 ms against 1.1 ms in float32 on that machine).

**The LM head** gets the kernel measured fastest on a 4096-column slice of
it: the rate per column is what the choice needs, and timing the whole
32k-wide product would take most of the measurement's budget.  (Computing the
head in cache-sized column chunks with a running top-k, instead of writing the
``[rows, 32000]`` logits, measured slower than one product and one top-k on the
development machine; see benchmarks/README.md.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from transformers.pytorch_utils import Conv1D

from fairness_core.backends.hf.kernel_choice import (
    LINEAR_KERNELS,
    AttentionShape,
    KernelChoice,
    KernelChooser,
    LinearShape,
    distinct_shapes,
)

#: Columns of the LM head that its kernel is timed on.
HEAD_TIMING_COLUMNS = 4096


def on_cpu(model: torch.nn.Module) -> bool:
    parameter = next(model.parameters(), None)
    return parameter is not None and parameter.device.type == "cpu"


def layer_weight_and_bias(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The layer's weight in ``nn.Linear`` layout and its bias, or ``None`` for a layer left alone.

    Only the two plain layer types are swapped: ``nn.Linear`` (Llama, NeoX and
    most models) and ``transformers``' ``Conv1D`` (GPT-2, whose weight is stored
    transposed; the kernels read the transposed view without copying it).
    Subclasses (quantised layers, LoRA wrappers) and modules whose ``forward``
    is already replaced on the instance (accelerate's offloading hooks) keep
    their own code.
    """
    if type(module) not in (torch.nn.Linear, Conv1D) or "forward" in vars(module):
        return None
    if not module.weight.dtype.is_floating_point:
        return None
    weight = module.weight if type(module) is torch.nn.Linear else module.weight.t()
    return weight, module.bias


def head_timing_shape(head: torch.nn.Module) -> LinearShape:
    """The shape the LM head's kernel is chosen at: its first :data:`HEAD_TIMING_COLUMNS` columns."""
    weight, bias = layer_weight_and_bias(head)
    return LinearShape(weight.shape[1], min(HEAD_TIMING_COLUMNS, weight.shape[0]), bias is not None)


def kernel_shapes(model: torch.nn.Module) -> dict[LinearShape, tuple[torch.Tensor, torch.Tensor | None]]:
    """The model's distinct linear-layer shapes, each with a sample layer's weight and bias; the head's timing slice."""
    head = model.get_output_embeddings()
    layers = [layer_weight_and_bias(m) for m in model.modules() if m is not head]
    shapes = distinct_shapes(layer for layer in layers if layer is not None)
    if head is not None and layer_weight_and_bias(head) is not None:
        weight, bias = layer_weight_and_bias(head)
        part = head_timing_shape(head)
        shapes.setdefault(part, (weight[:part.out_features], None if bias is None else bias[:part.out_features]))
    return shapes


def choose_kernels(model: torch.nn.Module, chooser: KernelChooser, *, rows: int, keys: int) -> KernelChoice | None:
    """The kernels for ``model`` decoding ``rows`` rows over about ``keys`` cached tokens, or ``None`` off the CPU."""
    if not on_cpu(model):
        return None
    config = model.config.get_text_config()
    attention = None
    if getattr(config, "_attn_implementation", None) in ("sdpa", "eager"):
        heads = config.num_attention_heads
        attention = AttentionShape(heads, getattr(config, "head_dim", None) or config.hidden_size // heads, keys)
    packed_bytes = sum(m.weight.numel() * m.weight.element_size() for m in model.modules()
                       if layer_weight_and_bias(m) is not None)
    return chooser.choose(kernel_shapes(model), dtype=model.dtype, rows=rows, attention=attention,
                          packed_bytes=packed_bytes)


@contextlib.contextmanager
def fast_cpu_kernels(model: torch.nn.Module, choice: KernelChoice | None) -> Iterator[None]:
    """Within the block, the model runs on the kernels in ``choice``; afterwards it is as it was.

    With ``choice=None`` (a model off the CPU) nothing changes.
    """
    if choice is None:
        yield
        return
    with swapped_linears(model, choice), chosen_attention(model, choice.attention):
        yield


@contextlib.contextmanager
def swapped_linears(model: torch.nn.Module, choice: KernelChoice) -> Iterator[None]:
    """Within the block, every plain linear layer runs on its shape's chosen kernel (the LM head on its slice's)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    swapped = []
    for module in model.modules():
        layer = layer_weight_and_bias(module)
        if layer is None:
            continue
        weight, bias = layer
        shape = head_timing_shape(module) if module is head else LinearShape(weight.shape[1], weight.shape[0],
                                                                             bias is not None)
        kernel = choice.linears.get(shape, "aten")
        if kernel != "aten":
            module.forward = LINEAR_KERNELS[kernel].prepare(weight, bias, choice.rows)
            swapped.append(module)
    try:
        yield
    finally:
        for module in swapped:
            del module.forward


@contextlib.contextmanager
def chosen_attention(model: torch.nn.Module, attention: str | None) -> Iterator[None]:
    """Within the block, a model configured for ``sdpa`` or ``eager`` attention uses ``attention``."""
    configured = getattr(model.config, "_attn_implementation", None)
    swap = attention is not None and configured in ("sdpa", "eager") and configured != attention
    if swap:
        model.set_attn_implementation(attention)
    try:
        yield
    finally:
        if swap:
            model.set_attn_implementation(configured)
