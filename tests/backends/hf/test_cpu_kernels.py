"""The engine's CPU kernel swaps (backends/cpu_kernels.py): the model's arithmetic, and undone afterwards.

Every kernel this build offers is a case here; one that the probe finds it
cannot run on this CPU is skipped with the probe's reason and the extension
the CPU lacks, so an AVX2-only machine shows which cases it could not try.
"""

from __future__ import annotations

import pytest
import torch
from engine_support import require_support
from transformers.pytorch_utils import Conv1D

from fairness_core.backends.hf import cpu_kernels
from fairness_core.backends.hf.cpu_kernels import chosen_attention, fast_cpu_kernels, kernel_shapes, swapped_linears
from fairness_core.backends.hf.kernel_choice import KernelChoice, LinearShape, linear_candidates

#: The kernels this build offers, per dtype (all four on x86 with oneDNN and MKL, only ``aten`` elsewhere).
KERNELS = {dtype: [k.name for k in linear_candidates(dtype, packing=True)] for dtype in (torch.float32, torch.bfloat16)}
DTYPE_KERNELS = [(dtype, name) for dtype, names in KERNELS.items() for name in names]


TOLERANCE = {torch.float32: {"rtol": 1e-5, "atol": 1e-5}, torch.bfloat16: {"rtol": 2e-2, "atol": 2e-2}}


def swapped(module: torch.nn.Module) -> bool:
    return "forward" in vars(module)


def linear(in_features: int = 48, out_features: int = 80, *, bias: bool = True) -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(in_features, out_features, bias=bias).eval()


def everywhere(model: torch.nn.Module, kernel: str, rows: int = 7) -> KernelChoice:
    """A choice that runs every linear layer of ``model`` on ``kernel``."""
    shapes = {LinearShape(m.in_features, m.out_features, m.bias is not None)
              for m in model.modules() if isinstance(m, torch.nn.Linear)}
    shapes |= {LinearShape(*m.weight.shape, True) for m in model.modules() if isinstance(m, Conv1D)}
    return KernelChoice(next(model.parameters()).dtype, rows, linears=dict.fromkeys(shapes, kernel))


INPUTS = {
    "2-d": lambda: torch.randn(7, 48),
    "3-d": lambda: torch.randn(5, 3, 48),
    "one row": lambda: torch.randn(1, 1, 48),
    "non-contiguous": lambda: torch.randn(48, 6).t(),
}


@pytest.mark.parametrize("dtype, kernel", DTYPE_KERNELS, ids=[f"{str(d)[6:]}-{k}" for d, k in DTYPE_KERNELS])
@pytest.mark.parametrize("make_input", INPUTS.values(), ids=INPUTS.keys())
@pytest.mark.parametrize("bias", [True, False])
def test_every_kernel_computes_what_nn_linear_computes(dtype, kernel, make_input, bias):
    """Packed kernels are laid out for 7 rows; other row counts must still come out right."""
    require_support(kernel, dtype)
    layer = linear(bias=bias).to(dtype)
    x = make_input().to(dtype)
    expected = layer(x)
    with torch.inference_mode(), swapped_linears(layer, everywhere(layer, kernel)):
        assert swapped(layer) == (kernel != "aten")
        got = layer(x)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, **TOLERANCE[dtype])
    assert not swapped(layer)


@pytest.mark.parametrize("kernel", KERNELS[torch.float32])
def test_conv1d_is_read_through_gpt2s_transposed_weight(kernel):
    require_support(kernel, torch.float32)
    torch.manual_seed(1)
    layer = Conv1D(80, 48)
    torch.nn.init.normal_(layer.bias)
    x = torch.randn(4, 3, 48)
    expected = layer(x)
    with torch.inference_mode(), swapped_linears(layer, everywhere(layer, kernel)):
        got = layer(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_swaps_are_undone_when_the_block_raises():
    model = torch.nn.Sequential(linear(), torch.nn.ReLU(), linear(80, 8))
    with pytest.raises(RuntimeError, match="boom"), swapped_linears(model, everywhere(model, "onednn")):
        assert swapped(model[0]) and swapped(model[2])
        raise RuntimeError("boom")
    assert not swapped(model[0]) and not swapped(model[2])


class LoRALinear(torch.nn.Linear):
    """Stands for a subclass with its own forward (quantised or adapter layers)."""


def test_layers_with_their_own_code_are_left_alone():
    hooked = linear()
    own_forward = hooked.forward

    def hook(x):  # what accelerate's hooks do to a module: wrap its forward on the instance
        return own_forward(x) * 2

    hooked.forward = hook
    subclass = LoRALinear(48, 80)
    plain = linear()
    model = torch.nn.ModuleList([hooked, subclass, plain])
    with swapped_linears(model, everywhere(model, "onednn")):
        assert hooked.forward is hook
        assert [swapped(m) for m in model[1:]] == [False, True]
    assert hooked.forward is hook
    assert not any(swapped(m) for m in model[1:])


def test_a_shape_without_a_choice_keeps_pytorchs_kernel():
    model = torch.nn.Sequential(linear(), linear(80, 8))
    choice = KernelChoice(torch.float32, 7, linears={LinearShape(48, 80, True): "onednn"})
    with swapped_linears(model, choice):
        assert [swapped(m) for m in model] == [True, False]


def test_the_chosen_attention_only_while_generating(tiny_models):
    model, tokenizer = tiny_models["sentencepiece"]
    assert model.config._attn_implementation == "sdpa"
    ids = torch.tensor([tokenizer("母の夢は")["input_ids"]])
    with torch.inference_mode():
        expected = model(input_ids=ids).logits
        with chosen_attention(model, "eager"):
            assert model.config._attn_implementation == "eager"
            got = model(input_ids=ids).logits
        with chosen_attention(model, "sdpa"):
            assert model.config._attn_implementation == "sdpa"
    assert model.config._attn_implementation == "sdpa"
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS[torch.float32])
def test_a_gpt2_gives_the_same_logits_on_every_kernel(tiny_models, kernel):
    require_support(kernel, torch.float32)
    model, tokenizer = tiny_models["sentencepiece"]
    batch = tokenizer(["母の夢は", "おじいさんが以前していた仕事は"], return_tensors="pt", padding=True,
                      padding_side="left")
    choice = everywhere(model, kernel)
    choice.attention = "eager"
    with torch.inference_mode():
        expected = model(**batch).logits
        with fast_cpu_kernels(model, choice):
            got = model(**batch).logits
    assert not any(swapped(m) for m in model.modules())
    real = batch["attention_mask"].bool()  # what padding positions compute is discarded anyway
    torch.testing.assert_close(got[real], expected[real], rtol=1e-4, atol=1e-5)


def test_the_lm_head_runs_on_the_kernel_chosen_for_its_timed_slice(tiny_models, monkeypatch):
    """Timing the whole vocabulary-wide product would cost most of the budget: a slice of it is timed instead."""
    monkeypatch.setattr(cpu_kernels, "HEAD_TIMING_COLUMNS", 128)
    model, _ = tiny_models["sentencepiece"]
    part = LinearShape(model.config.n_embd, 128, False)
    weight, bias = kernel_shapes(model)[part]
    assert weight.shape == (128, model.config.n_embd) and bias is None
    with swapped_linears(model, KernelChoice(torch.float32, 4, linears={part: "onednn"})):
        assert [name for name, m in model.named_modules() if swapped(m)] == ["lm_head"]
