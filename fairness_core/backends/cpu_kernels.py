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

**The LM head** is the one vocabulary-wide product per step (a 32k-wide
``[rows, 32000]`` block of logits, 41 MB at 320 rows in float32, written and
then read again by the top-k).  :class:`ChunkedHead` computes it in column
chunks whose logits stay in cache and keeps only each chunk's top-k, so no
vocabulary-wide tensor is ever written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from transformers.pytorch_utils import Conv1D

from fairness_core.backends.kernel_choice import (
    LINEAR_KERNELS,
    AttentionShape,
    KernelChoice,
    KernelChooser,
    LinearForward,
    LinearShape,
    distinct_shapes,
)

#: Vocabulary columns per LM-head chunk: 320 rows x 4096 float32 logits are 5 MB, within the L2/L3 caches.
HEAD_CHUNK = 4096
#: Models whose ``forward`` computes ``lm_head(base_model(...).last_hidden_state)`` and nothing more (no
#: logit scaling or soft-capping), so the engine may run the base model and the LM head itself.
PLAIN_HEAD_MODELS = frozenset({
    "GPT2LMHeadModel", "LlamaForCausalLM", "GPTNeoXForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
})


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


def plain_head(model: torch.nn.Module) -> torch.nn.Linear | None:
    """The LM head, where the engine may compute it itself (:data:`PLAIN_HEAD_MODELS`, a plain ``nn.Linear``)."""
    if type(model).__name__ not in PLAIN_HEAD_MODELS or not type(model).__module__.startswith("transformers."):
        return None
    head = model.get_output_embeddings()
    return head if type(head) is torch.nn.Linear and layer_weight_and_bias(head) is not None else None


def head_chunk_shape(head: torch.nn.Linear) -> LinearShape:
    return LinearShape(head.in_features, min(HEAD_CHUNK, head.out_features), head.bias is not None)


def kernel_shapes(model: torch.nn.Module) -> dict[LinearShape, tuple[torch.Tensor, torch.Tensor | None]]:
    """The model's distinct linear-layer shapes, each with a sample layer's weight and bias, the LM head as its chunk.

    The LM head is measured at its chunk's shape (:data:`HEAD_CHUNK` columns),
    which is what the engine runs; timing the whole 32k-wide product would take
    most of the measurement's budget.
    """
    head = model.get_output_embeddings()
    layers = [layer_weight_and_bias(m) for m in model.modules() if m is not head]
    shapes = distinct_shapes(layer for layer in layers if layer is not None)
    if head is not None and layer_weight_and_bias(head) is not None:
        weight, bias = layer_weight_and_bias(head)
        chunk = head_chunk_shape(head)
        shapes.setdefault(chunk, (weight[:chunk.out_features], None if bias is None else bias[:chunk.out_features]))
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


class ChunkedHead:
    """The LM head's top-k over the vocabulary, computed chunk by chunk without writing every logit.

    Each chunk of :data:`HEAD_CHUNK` vocabulary rows of the weight goes through
    the chosen kernel, and only its top-k survive; the top-k of those
    survivors is the top-k of the whole row, with the values the full product
    gives (each logit is the same dot product).
    """

    def __init__(self, head: torch.nn.Linear, kernel: str, rows: int):
        weight, bias = layer_weight_and_bias(head)
        prepare = LINEAR_KERNELS[kernel].prepare
        self.chunks: list[tuple[int, LinearForward]] = [
            (start, prepare(weight[start:start + HEAD_CHUNK], None if bias is None else bias[start:start + HEAD_CHUNK],
                            rows))
            for start in range(0, weight.shape[0], HEAD_CHUNK)
        ]

    def top_k(self, hidden: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``k`` largest logits of each row of ``hidden`` (``[rows, hidden_size]``) and their ids, best first."""
        values, token_ids = [], []
        for start, forward in self.chunks:
            logits = forward(hidden)
            chunk_values, chunk_ids = logits.topk(min(k, logits.shape[-1]), dim=-1)
            values.append(chunk_values)
            token_ids.append(chunk_ids + start)
        values, token_ids = torch.cat(values, dim=-1), torch.cat(token_ids, dim=-1)
        values, best = values.topk(min(k, values.shape[-1]), dim=-1)
        return values, token_ids.gather(-1, best)


@contextlib.contextmanager
def fast_cpu_kernels(model: torch.nn.Module, choice: KernelChoice | None) -> Iterator[ChunkedHead | None]:
    """Within the block, the model runs on the kernels in ``choice``; afterwards it is as it was.

    Yields the chunked LM head where the engine may use it (:func:`plain_head`),
    else ``None``.  With ``choice=None`` (a model off the CPU) nothing changes.
    """
    if choice is None:
        yield None
        return
    head = model.get_output_embeddings()
    chunked = plain_head(model)
    with swapped_linears(model, choice, head, include_head=chunked is None), chosen_attention(model, choice.attention):
        yield None if chunked is None else ChunkedHead(chunked, choice.linears[head_chunk_shape(chunked)], choice.rows)


@contextlib.contextmanager
def swapped_linears(model: torch.nn.Module, choice: KernelChoice, head: torch.nn.Module | None, *,
                    include_head: bool) -> Iterator[None]:
    """Within the block, every plain linear layer runs on its shape's chosen kernel (the head on its chunk's).

    ``include_head=False`` leaves the LM head alone when the engine computes it
    in chunks: a packed copy of a head that is never called would cost memory
    and time for nothing.
    """
    swapped = []
    for module in model.modules():
        layer = layer_weight_and_bias(module)
        if layer is None or (module is head and not include_head):
            continue
        weight, bias = layer
        shape = head_chunk_shape(module) if module is head else LinearShape(weight.shape[1], weight.shape[0],
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
