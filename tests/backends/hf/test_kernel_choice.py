"""The kernel chooser (backends/kernel_choice.py) with injected timings: the faster kernel wins, whichever it is.

The development machine is one CPU; which kernel is fastest on another is
simulated by a timer that says so.  The choice must be cached per CPU, torch
version, dtype, shape and batch, recorded in the backend's description, and
leave the completions what ``model.generate`` gives.

Which kernels can run at all is a fact about the CPU too: kernels that raise
are injected here, so that exclusion is tested on every machine, and an
AVX2-only CPU is reproduced on any x86 one by capping oneDNN with
``ONEDNN_MAX_CPU_ISA=AVX2`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from engine_support import REQUESTS, SAMPLING, expected_completion, require_support

from fairness_core.backends.hf import kernel_choice
from fairness_core.backends.hf.cpu_features import cpu_name
from fairness_core.backends.hf.engine import HFBackend
from fairness_core.backends.hf.kernel_choice import (
    CHOICES_FILE,
    TIMED_CALLS,
    AttentionShape,
    KernelChooser,
    LinearKernel,
    LinearShape,
    attention_support,
    linear_candidates,
    linear_support,
)


def admitted(dtype: torch.dtype) -> list[str]:
    """The kernels offered for ``dtype`` that the probe lets run on this CPU."""
    return [k.name for k in linear_candidates(dtype, packing=True) if linear_support(k, dtype) is None]


FLOAT32_KERNELS = admitted(torch.float32)
BFLOAT16_OFFERED = [k.name for k in linear_candidates(torch.bfloat16, packing=True)]
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


def decisions(folder) -> dict[str, str]:
    """The kernel decisions in ``folder``'s choices file, without the exclusions recorded beside them."""
    saved = json.loads((folder / CHOICES_FILE).read_text())
    return {key: name for key, name in saved.items() if " | unsupported " not in key}


def never_called(label, run):
    raise AssertionError(f"measured {label!r} although the decision was cached")


@pytest.mark.parametrize("fastest", FLOAT32_KERNELS)
def test_the_faster_float32_kernel_is_chosen_whichever_it_is(tmp_path, fastest):
    timer = FakeTimer(**{"*": fastest})
    choice = KernelChooser(tmp_path, timer=timer, packing=True).choose(layers(), dtype=torch.float32, rows=6,
                                                                       attention=None)
    assert choice.linears == {SMALL: fastest, LARGE: fastest}
    assert len(timer.labels) == 2 * TIMED_CALLS * len(FLOAT32_KERNELS)  # every candidate, every shape


@pytest.mark.parametrize("fastest", BFLOAT16_OFFERED)
def test_the_faster_bfloat16_kernel_is_chosen_whichever_it_is(tmp_path, fastest):
    require_support(fastest, torch.bfloat16)
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
    saved = decisions(tmp_path)
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
    assert len(decisions(tmp_path)) == 7


def test_a_damaged_cache_file_is_measured_again_and_rewritten(tmp_path):
    (tmp_path / CHOICES_FILE).write_text("{not json")
    timer = FakeTimer(**{"*": "aten"})
    choice = KernelChooser(tmp_path, timer=timer).choose(layers(), dtype=torch.float32, rows=6, attention=None)
    assert choice.linears == {SMALL: "aten", LARGE: "aten"} and timer.labels
    assert len(decisions(tmp_path)) == 2


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


def failing(message: str, *, when=lambda weight: True):
    """A kernel's ``prepare`` that raises ``RuntimeError(message)`` for weights where ``when(weight)`` holds."""
    def prepare(weight, bias, rows):
        if when(weight):
            raise RuntimeError(message)
        return lambda x: torch.nn.functional.linear(x, weight, bias)
    return prepare


@pytest.fixture
def offer(monkeypatch):
    """``offer(kernel)``: this build's candidates plus ``kernel``, as if a library offered one more."""
    def add(kernel: LinearKernel) -> None:
        offered = kernel_choice.linear_candidates
        monkeypatch.setitem(kernel_choice.LINEAR_KERNELS, kernel.name, kernel)
        monkeypatch.setattr(kernel_choice, "linear_candidates",
                            lambda dtype, *, packing: [*offered(dtype, packing=packing), kernel])
    return add


BROKEN = LinearKernel("broken", failing("could not create a primitive descriptor (injected)"),
                      frozenset({torch.float32}))


def test_a_kernel_that_cannot_run_is_excluded_with_its_reason_and_never_timed(tmp_path, offer):
    offer(BROKEN)
    timer = FakeTimer(**{"*": "broken"})  # it would win if it were timed
    choice = KernelChooser(tmp_path, timer=timer, packing=True).choose(layers(), dtype=torch.float32, rows=6,
                                                                       attention=None)
    assert not any(label.endswith(" broken") for label in timer.labels)
    assert set(choice.linears.values()) <= set(FLOAT32_KERNELS)
    assert choice.excluded == {"broken": "RuntimeError: could not create a primitive descriptor (injected)"}
    assert choice.summary().startswith("float32: broken unsupported on this CPU")
    saved = json.loads((tmp_path / CHOICES_FILE).read_text())
    assert saved[f"{cpu_name()} | torch {torch.__version__} | {torch.get_num_threads()} threads | float32 | "
                 f"unsupported broken"] == "RuntimeError: could not create a primitive descriptor (injected)"


def test_a_kernel_that_fails_only_on_a_real_shape_is_left_out_there_and_kept_elsewhere(tmp_path, offer):
    """The probe's tiny product passes; the 160-column layer raises at its untimed warm-up."""
    offer(LinearKernel("wide-fails", failing("too wide (injected)", when=lambda w: w.shape[0] > 100),
                       frozenset({torch.float32})))
    timer = FakeTimer(**{"*": "wide-fails"})
    choice = KernelChooser(tmp_path, timer=timer, packing=True).choose(layers(), dtype=torch.float32, rows=6,
                                                                       attention=None)
    assert choice.linears[SMALL] == "wide-fails" and choice.linears[LARGE] in FLOAT32_KERNELS
    assert choice.excluded == {"wide-fails": f"RuntimeError: too wide (injected) (at linear {LARGE})"}
    assert f"linear {LARGE} wide-fails" not in timer.labels


def test_a_kernel_that_computes_another_product_is_excluded(tmp_path, offer):
    offer(LinearKernel("wrong", lambda w, b, rows: lambda x: torch.nn.functional.linear(x, w, b) * 1.5,
                       frozenset({torch.float32})))
    choice = KernelChooser(tmp_path, timer=FakeTimer(**{"*": "wrong"}), packing=True).choose(
        layers(), dtype=torch.float32, rows=6, attention=None)
    assert "wrong" not in choice.linears.values()
    assert choice.excluded["wrong"].startswith("computes a different product (largest difference ")


@pytest.fixture
def fresh_attention_probes():
    attention_support.cache_clear()
    yield
    attention_support.cache_clear()


def test_an_attention_that_cannot_run_is_excluded_and_the_other_is_used(tmp_path, monkeypatch, fresh_attention_probes):
    real = kernel_choice._attention_run

    def sdpa_fails(name, shape, dtype, rows):
        if name == "sdpa":
            def make():
                raise RuntimeError("no flash kernel for this dtype (injected)")
            return make
        return real(name, shape, dtype, rows)

    monkeypatch.setattr(kernel_choice, "_attention_run", sdpa_fails)
    timer = FakeTimer(attention="sdpa", **{"*": "aten"})
    choice = KernelChooser(tmp_path, timer=timer).choose({}, dtype=torch.float32, rows=6, attention=ATTENTION)
    assert choice.attention == "eager"
    assert choice.excluded == {"attention sdpa": "RuntimeError: no flash kernel for this dtype (injected)"}
    assert not any(label.endswith(" sdpa") for label in timer.labels)


def test_the_engine_with_a_candidate_that_cannot_run_decodes_as_model_generate(tiny_models, tmp_path, offer):
    offer(BROKEN)
    model, tokenizer = tiny_models["sentencepiece"]
    chooser = KernelChooser(tmp_path, timer=FakeTimer(**{"*": "broken", "attention": "eager"}))
    backend = HFBackend(model, tokenizer, seed=0, batch_size=8, kernels=chooser)
    got = backend.generate(REQUESTS, SAMPLING)
    assert got == [expected_completion(model, tokenizer, r, SAMPLING) for r in REQUESTS]
    assert backend.description["kernels"].startswith("float32: broken unsupported on this CPU")


#: Run in a subprocess with oneDNN capped at AVX2: the bfloat16 chooser and engine on a tiny saved model.
AVX2_ONLY_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, sys.argv[2])
    from engine_support import GREEDY, REQUESTS, expected_completion
    from fairness_core.backends.hf.engine import HFBackend, load_model
    from fairness_core.backends.hf.kernel_choice import KernelChooser, LINEAR_KERNELS, linear_support

    with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):  # logs the ISA oneDNN runs at
        torch.ops.mkldnn._linear_pointwise(torch.randn(2, 8), torch.randn(4, 8), None, "none", [], "")
    sys.stdout.flush()
    result = {"onednn": linear_support(LINEAR_KERNELS["onednn"], torch.bfloat16)}
    try:  # PyTorch's own bfloat16 product under the cap (on an AMX CPU it may route to oneDNN as well)
        F.linear(torch.randn(2, 8, dtype=torch.bfloat16), torch.randn(4, 8, dtype=torch.bfloat16))
        result["aten_runs"] = True
    except RuntimeError:
        result["aten_runs"] = False
    model, tokenizer = load_model(sys.argv[1], device="cpu", dtype="float32")
    model.to(torch.bfloat16)
    backend = HFBackend(model, tokenizer, seed=0, batch_size=1, kernels=KernelChooser(None))
    if result["aten_runs"]:
        got = backend.generate(REQUESTS[:4], GREEDY)
        result["identical"] = got == [expected_completion(model, tokenizer, r, GREEDY) for r in REQUESTS[:4]]
        choice = backend.kernel_choice
    else:  # the model cannot run in bfloat16 at all here; the chooser must still choose without a crash
        from fairness_core.backends.hf.cpu_kernels import choose_kernels
        choice = choose_kernels(model, backend.kernels, rows=1, keys=8)
    result.update(excluded=choice.excluded, summary=choice.summary())
    print("RESULT " + json.dumps(result))
""")


@pytest.mark.skipif("onednn" not in BFLOAT16_OFFERED, reason="this build offers no oneDNN kernels (not x86)")
def test_an_avx2_only_cpu_reproduced_by_capping_onednn_excludes_its_bfloat16_kernels(tiny_model_dirs, tmp_path):
    """``ONEDNN_MAX_CPU_ISA=AVX2`` makes oneDNN's bfloat16 inner product unavailable, as on a CPU without AVX-512.

    The oneDNN log's ISA line shows the cap took effect; the engine must then
    leave both oneDNN kernels out, say so, and decode what ``model.generate`` decodes (where PyTorch's own
    bfloat16 product still runs under the cap; where it does not, the chooser must still choose).
    """
    script = tmp_path / "avx2_only.py"
    script.write_text(AVX2_ONLY_SCRIPT, encoding="utf-8")
    tests = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, str(script), str(tiny_model_dirs["sentencepiece"]), tests],
                          env={**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "isa:Intel AVX2" in done.stdout  # oneDNN runs as on an AVX2-only CPU, whatever this one has
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert result["onednn"] and {"onednn", "onednn-packed"} <= set(result["excluded"]), result
    assert "bfloat16: onednn, onednn-packed unsupported on this CPU" in result["summary"]
    assert result.get("identical", not result["aten_runs"]), result
