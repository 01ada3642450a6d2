"""The kernel chooser (backends/kernel_choice.py) with injected timings: the faster kernel wins, whichever it is.

The development machine is one CPU; which kernel is fastest on another is
simulated by a timer that says so.  The choice must be cached per CPU, torch
version, dtype, shape and batch, recorded in the backend's description, and
leave the completions what ``model.generate`` gives.
"""

from __future__ import annotations

import json

import pytest
import torch
from test_generation import REQUESTS, SAMPLING, expected_completion

from fairness_core.backends import kernel_choice
from fairness_core.backends.hf import HFBackend
from fairness_core.backends.kernel_choice import (
    CHOICES_FILE,
    TIMED_CALLS,
    AttentionShape,
    KernelChooser,
    LinearShape,
    cpu_name,
    linear_candidates,
)

FLOAT32_KERNELS = [k.name for k in linear_candidates(torch.float32, packing=True)]
BFLOAT16_KERNELS = [k.name for k in linear_candidates(torch.bfloat16, packing=True)]
SMALL = LinearShape(48, 80, True)
LARGE = LinearShape(80, 160, False)
ATTENTION = AttentionShape(heads=4, head_dim=8, keys=12)


def layers(dtype=torch.float32) -> dict:
    torch.manual_seed(0)
    return {SMALL: (torch.randn(80, 48, dtype=dtype), torch.randn(80, dtype=dtype)),
            LARGE: (torch.randn(160, 80, dtype=dtype), None)}


class FakeTimer:
    """Says the run named ``fastest[shape]``, else ``fastest[kind]``, else ``fastest["*"]`` takes 1 ms, others 5 ms.

    Labels read ``<kind> <shape> <name>``, e.g. ``linear 48x80+bias onednn``; every call is logged.
    """

    def __init__(self, **fastest: str):
        self.fastest = fastest
        self.labels: list[str] = []

    def __call__(self, label: str, run) -> float:
        self.labels.append(label)
        what, name = label.rsplit(" ", 1)
        kind, shape = what.split(" ", 1)
        fastest = self.fastest.get(shape) or self.fastest.get(kind) or self.fastest["*"]
        return 0.001 if name == fastest else 0.005


def never_called(label, run):
    raise AssertionError(f"measured {label!r} although the decision was cached")


@pytest.mark.parametrize("fastest", FLOAT32_KERNELS)
def test_the_faster_float32_kernel_is_chosen_whichever_it_is(tmp_path, fastest):
    timer = FakeTimer(**{"*": fastest})
    choice = KernelChooser(tmp_path, timer=timer, packing=True).choose(layers(), dtype=torch.float32, rows=6,
                                                                       attention=None)
    assert choice.linears == {SMALL: fastest, LARGE: fastest}
    assert len(timer.labels) == 2 * TIMED_CALLS * len(FLOAT32_KERNELS)  # every candidate, every shape


@pytest.mark.parametrize("fastest", BFLOAT16_KERNELS)
def test_the_faster_bfloat16_kernel_is_chosen_whichever_it_is(tmp_path, fastest):
    timer = FakeTimer(**{"*": fastest})
    choice = KernelChooser(tmp_path, timer=timer, packing=True).choose(layers(torch.bfloat16), dtype=torch.bfloat16,
                                                                       rows=6, attention=None)
    assert choice.linears == {SMALL: fastest, LARGE: fastest}
    assert "mkl-packed" not in {label.rsplit(" ", 1)[1] for label in timer.labels}  # MKL has no bfloat16 GEMM


@pytest.mark.skipif(len(FLOAT32_KERNELS) < 2, reason="only PyTorch's own kernel runs on this CPU")
def test_each_shape_gets_its_own_fastest_kernel(tmp_path):
    timer = FakeTimer(**{str(SMALL): FLOAT32_KERNELS[0], str(LARGE): FLOAT32_KERNELS[-1]})
    choice = KernelChooser(tmp_path, timer=timer).choose(layers(), dtype=torch.float32, rows=6, attention=None)
    assert choice.linears == {SMALL: FLOAT32_KERNELS[0], LARGE: FLOAT32_KERNELS[-1]}


@pytest.mark.parametrize("fastest", ["eager", "sdpa"])
def test_the_faster_attention_is_chosen(tmp_path, fastest):
    timer = FakeTimer(attention=fastest, **{"*": "aten"})
    choice = KernelChooser(tmp_path, timer=timer).choose({}, dtype=torch.float32, rows=6, attention=ATTENTION)
    assert choice.attention == fastest
    assert timer.labels == [f"attention {ATTENTION} eager", f"attention {ATTENTION} sdpa"] * TIMED_CALLS


def test_real_timings_pick_a_kernel_that_exists(tmp_path):
    """The default timer on this machine: whatever wins, it is a candidate, and the time spent is recorded."""
    choice = KernelChooser(tmp_path).choose(layers(), dtype=torch.float32, rows=6, attention=ATTENTION)
    assert set(choice.linears.values()) <= set(FLOAT32_KERNELS)
    assert choice.attention in ("eager", "sdpa")
    assert 0 < choice.measured_seconds < 5


def test_the_decision_is_cached_per_cpu_torch_dtype_shape_and_rows(tmp_path):
    fastest = FLOAT32_KERNELS[-1]
    first = KernelChooser(tmp_path, timer=FakeTimer(**{"*": fastest, "attention": "sdpa"})).choose(
        layers(), dtype=torch.float32, rows=6, attention=ATTENTION)
    saved = json.loads((tmp_path / CHOICES_FILE).read_text())
    assert saved[f"{cpu_name()} | torch {torch.__version__} | {torch.get_num_threads()} threads | float32 | "
                 f"linear {SMALL} | 6 rows"] == fastest
    assert len(saved) == 3

    again = KernelChooser(tmp_path, timer=never_called).choose(layers(), dtype=torch.float32, rows=6,
                                                              attention=ATTENTION)
    assert (again.linears, again.attention) == (first.linears, first.attention) == (
        {SMALL: fastest, LARGE: fastest}, "sdpa")
    assert first.measured_seconds > 0 and again.measured_seconds == 0
    assert "measured earlier" in again.summary()

    other_rows = FakeTimer(**{"*": "aten"})
    KernelChooser(tmp_path, timer=other_rows).choose(layers(), dtype=torch.float32, rows=7, attention=None)
    other_dtype = FakeTimer(**{"*": "aten"})
    KernelChooser(tmp_path, timer=other_dtype).choose(layers(torch.bfloat16), dtype=torch.bfloat16, rows=6,
                                                      attention=None)
    assert other_rows.labels and other_dtype.labels
    assert len(json.loads((tmp_path / CHOICES_FILE).read_text())) == 7


def test_a_damaged_cache_file_is_measured_again_and_rewritten(tmp_path):
    (tmp_path / CHOICES_FILE).write_text("{not json")
    timer = FakeTimer(**{"*": "aten"})
    choice = KernelChooser(tmp_path, timer=timer).choose(layers(), dtype=torch.float32, rows=6, attention=None)
    assert choice.linears == {SMALL: "aten", LARGE: "aten"} and timer.labels
    assert len(json.loads((tmp_path / CHOICES_FILE).read_text())) == 2


def test_without_a_folder_the_decision_lives_in_memory(tmp_path):
    chooser = KernelChooser(None, timer=FakeTimer(**{"*": "aten"}))
    chooser.choose(layers(), dtype=torch.float32, rows=6, attention=None)
    chooser.timer = never_called
    assert chooser.choose(layers(), dtype=torch.float32, rows=6, attention=None).linears[SMALL] == "aten"
    assert not list(tmp_path.iterdir())


def test_packed_kernels_only_where_memory_allows(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_choice, "_free_memory", lambda: 1000)  # far less than the weights' 4 x 24,320 bytes
    timer = FakeTimer(**{"*": "aten"})
    KernelChooser(tmp_path, timer=timer).choose(layers(), dtype=torch.float32, rows=6, attention=None)
    assert not any(label.endswith("-packed") for label in timer.labels)


def test_packing_counts_every_layer_of_the_model_not_only_the_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_choice, "_free_memory", lambda: 4 * 10**9)
    timer = FakeTimer(**{"*": "aten"})
    KernelChooser(tmp_path, timer=timer).choose(layers(), dtype=torch.float32, rows=6, attention=None,
                                                packed_bytes=2 * 10**9)  # a 500M-parameter float32 model
    assert not any(label.endswith("-packed") for label in timer.labels)


@pytest.mark.parametrize("fastest, attention", [(k, ("eager", "sdpa")[i % 2]) for i, k in enumerate(FLOAT32_KERNELS)])
def test_the_engine_runs_and_records_the_chosen_kernels_and_decodes_as_model_generate(
        tiny_models, tmp_path, fastest, attention):
    model, tokenizer = tiny_models["sentencepiece"]
    chooser = KernelChooser(tmp_path, timer=FakeTimer(attention=attention, **{"*": fastest}))
    backend = HFBackend(model, tokenizer, seed=0, batch_size=8, kernels=chooser)
    got = backend.generate(REQUESTS, SAMPLING)
    assert got == [expected_completion(model, tokenizer, r, SAMPLING) for r in REQUESTS]
    recorded = backend.description["kernels"]
    assert recorded.startswith("float32 x8: ")
    assert f"{model.config.n_embd}x{model.config.vocab_size} {fastest}" in recorded  # the LM head
    assert f"attention {attention}" in recorded
    assert cpu_name() in recorded
