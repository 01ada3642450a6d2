"""The engine's CPU kernel swaps (backends/cpu_kernels.py): the model's arithmetic, and undone afterwards."""

from __future__ import annotations

import pytest
import torch
from transformers.pytorch_utils import Conv1D

from fairness_core.backends.cpu_kernels import eager_attention, fast_cpu_kernels, onednn_available, onednn_linears

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN's linear op needs an x86 CPU (AVX2+)")


def swapped(module: torch.nn.Module) -> bool:
    return "forward" in vars(module)


def linear(in_features: int = 48, out_features: int = 80, *, bias: bool = True) -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(in_features, out_features, bias=bias).eval()


INPUTS = {
    "2-d": lambda: torch.randn(7, 48),
    "3-d": lambda: torch.randn(5, 3, 48),
    "one row": lambda: torch.randn(1, 1, 48),
    "non-contiguous": lambda: torch.randn(48, 6).t(),
}


@needs_onednn
@pytest.mark.parametrize("make_input", INPUTS.values(), ids=INPUTS.keys())
@pytest.mark.parametrize("bias", [True, False])
def test_onednn_linear_computes_what_nn_linear_computes(make_input, bias):
    layer = linear(bias=bias)
    x = make_input()
    expected = layer(x)
    with torch.inference_mode(), onednn_linears(layer):
        assert swapped(layer)
        got = layer(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert not swapped(layer)


@needs_onednn
def test_onednn_conv1d_reads_gpt2s_transposed_weight():
    torch.manual_seed(1)
    layer = Conv1D(80, 48)
    torch.nn.init.normal_(layer.bias)
    x = torch.randn(4, 3, 48)
    expected = layer(x)
    with torch.inference_mode(), onednn_linears(layer):
        assert swapped(layer)
        got = layer(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_swaps_are_undone_when_the_block_raises():
    model = torch.nn.Sequential(linear(), torch.nn.ReLU(), linear(80, 8))
    with pytest.raises(RuntimeError, match="boom"), onednn_linears(model):
        assert swapped(model[0]) and swapped(model[2])
        raise RuntimeError("boom")
    assert not swapped(model[0]) and not swapped(model[2])


class LoRALinear(torch.nn.Linear):
    """Stands for a subclass with its own forward (quantised or adapter layers)."""


@needs_onednn
def test_layers_with_their_own_code_are_left_alone():
    hooked = linear()
    own_forward = hooked.forward

    def hook(x):  # what accelerate's hooks do to a module: wrap its forward on the instance
        return own_forward(x) * 2

    hooked.forward = hook
    subclass = LoRALinear(48, 48)
    half = linear().to(torch.bfloat16)
    plain = linear(80, 48)
    model = torch.nn.ModuleList([hooked, subclass, half, plain])
    with onednn_linears(model):
        assert hooked.forward is hook
        assert [swapped(m) for m in model[1:]] == [False, False, True]
        assert plain.forward.func.__name__ == "_onednn_linear"
    assert hooked.forward is hook
    assert not any(swapped(m) for m in model[1:])


def test_a_bfloat16_model_keeps_its_linears():
    model = torch.nn.Sequential(linear().to(torch.bfloat16))
    with onednn_linears(model):
        assert not swapped(model[0])


def test_eager_attention_only_while_generating(tiny_models):
    model, tokenizer = tiny_models["sentencepiece"]
    assert model.config._attn_implementation == "sdpa"
    ids = torch.tensor([tokenizer("母の夢は")["input_ids"]])
    with torch.inference_mode():
        expected = model(input_ids=ids).logits
        with eager_attention(model):
            assert model.config._attn_implementation == "eager"
            got = model(input_ids=ids).logits
    assert model.config._attn_implementation == "sdpa"
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_a_gpt2_gives_the_same_logits_with_the_fast_kernels(tiny_models):
    model, tokenizer = tiny_models["sentencepiece"]
    batch = tokenizer(["母の夢は", "おじいさんが以前していた仕事は"], return_tensors="pt", padding=True,
                      padding_side="left")
    with torch.inference_mode():
        expected = model(**batch).logits
        with fast_cpu_kernels(model):
            assert all(swapped(m) for m in model.modules() if isinstance(m, (Conv1D, torch.nn.Linear)))
            got = model(**batch).logits
    assert not any(swapped(m) for m in model.modules())
    real = batch["attention_mask"].bool()  # what padding positions compute is discarded anyway
    torch.testing.assert_close(got[real], expected[real], rtol=1e-4, atol=1e-5)
