"""The dtype a model runs in on a CPU without units for the checkpoint's dtype (backends/dtype_choice.py).

Which CPU runs the suite is not ours to choose, so its flags are replaced
here: an AVX2-only CPU (an AMD EPYC such as this project's CI runs on), one with AVX512-BF16, one
with AMX.  The rule then holds on every machine, whatever it has itself.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from audit_support import output, setup_audits, thresholds, write_thresholds

from fairness_core.backends.hf import cpu_features
from fairness_core.backends.hf.dtype_choice import DtypeChoice, choose_dtype
from fairness_core.backends.hf.engine import load_model_with_notes
from fairness_core.run.demo_names import resolve_demo

AVX2_ONLY = frozenset("fpu sse sse2 avx avx2 fma f16c".split())
AVX512_BF16 = AVX2_ONLY | {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16"}
AMX = AVX512_BF16 | {"amx_tile", "amx_bf16", "amx_int8"}
CPU = torch.device("cpu")
NO_BF16_UNITS = "this CPU has no native bfloat16 units (AVX512-BF16 or AMX)"


@pytest.fixture
def flags(monkeypatch):
    """``flags(set)``: this process sees a CPU with those ``/proc/cpuinfo`` flags (``None``: none listed)."""
    return lambda listed: monkeypatch.setattr(cpu_features, "cpu_flags", lambda: listed)


@pytest.mark.parametrize("asked, configured, origin", [("auto", torch.bfloat16, "config"), ("auto", "bfloat16", "config"),
                                                       ("bfloat16", "float32", "asked"), ("bfloat16", None, "asked")])
def test_bfloat16_on_a_cpu_without_bfloat16_units_runs_in_float32_and_says_why(flags, asked, configured, origin):
    flags(AVX2_ONLY)
    choice = choose_dtype(asked, configured, CPU)
    assert choice.dtype == torch.float32
    assert choice.describe(torch.float32).startswith(f"float32 ({origin} bfloat16; {NO_BF16_UNITS}")


@pytest.mark.parametrize("cpu", [AVX512_BF16, AMX], ids=["avx512-bf16", "amx"])
def test_bfloat16_stays_where_the_cpu_has_units_for_it(flags, cpu):
    flags(cpu)
    assert choose_dtype("auto", torch.bfloat16, CPU) == DtypeChoice(None)
    assert choose_dtype("bfloat16", None, CPU) == DtypeChoice(torch.bfloat16)


def test_float16_needs_its_own_units(flags):
    flags(AMX)  # AMX-BF16 but no AMX-FP16 or AVX512-FP16
    choice = choose_dtype("auto", torch.float16, CPU)
    assert choice.dtype == torch.float32 and "no native float16 units (AVX512-FP16 or AMX-FP16)" in choice.reason
    flags(AMX | {"amx_fp16"})
    assert choose_dtype("auto", torch.float16, CPU) == DtypeChoice(None)


def test_float32_a_gpu_and_unreadable_flags_keep_what_was_asked(flags):
    flags(AVX2_ONLY)
    assert choose_dtype("auto", torch.float32, CPU) == DtypeChoice(None)
    assert choose_dtype("bfloat16", torch.bfloat16, torch.device("cuda")) == DtypeChoice(torch.bfloat16)
    flags(None)
    assert choose_dtype("auto", torch.bfloat16, CPU) == DtypeChoice(None)


@pytest.fixture
def bfloat16_checkpoint(tmp_path):
    """A copy of ``demo:biased:bpe`` whose config says ``"dtype": "bfloat16"``, as current LMs ship."""
    folder = shutil.copytree(resolve_demo("demo:biased:bpe"), tmp_path / "bf16-biased-bpe")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "dtype": "bfloat16"}))
    return folder


@pytest.mark.parametrize("cpu, loaded", [(AVX2_ONLY, torch.float32), (AMX, torch.bfloat16)], ids=["avx2", "amx"])
def test_load_model_follows_the_rule_for_a_bfloat16_config(flags, bfloat16_checkpoint, cpu, loaded):
    flags(cpu)
    model, _, notes = load_model_with_notes(str(bfloat16_checkpoint), device="cpu")
    assert model.dtype == loaded
    assert bool(notes.dtype.reason) == (loaded == torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["config", "option"])
def test_a_bfloat16_audit_on_an_avx2_only_cpu_finds_the_planted_bias_and_says_which_dtype_ran(
        pytester, flags, bfloat16_checkpoint, how):
    """A bf16-config checkpoint with no option, and ``--dtype=bfloat16``: both run in float32 here, and say so."""
    flags(AVX2_ONLY)
    setup_audits(pytester, modules=("test_honest.py",))
    model, extra = (bfloat16_checkpoint, []) if how == "config" else (resolve_demo("demo:biased:bpe"),
                                                                      ["--dtype=bfloat16"])
    content = thresholds(protocol={"num_samples": 5, "max_new_tokens": 10})
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--no-cache", "--device=cpu", f"--model={model}", *extra, "--audit-json=audit.json",
        f"--thresholds={write_thresholds(pytester, content)}")
    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert "INTERNALERROR" not in text and "Traceback" not in text
    origin = "config" if how == "config" else "asked"
    assert f"dtype=float32 ({origin} bfloat16; {NO_BF16_UNITS}" in text
    assert "AUDIT VIOLATION: honest_ratio" in text
    provenance = json.loads((pytester.path / "audit.json").read_text())["provenance"]
    assert provenance["model"]["dtype"].startswith(f"float32 ({origin} bfloat16; {NO_BF16_UNITS}")
