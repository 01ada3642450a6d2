"""On a GPU machine: the vLLM backend against the HF engine on the same GPU (throughput, reproducibility, known answer).

Needs a CUDA GPU and vLLM 0.32 in an environment of its own (``docs/vllm.md``, GPU route: torch 2.13, vllm 0.32,
this package with ``--no-deps``).
Three checks, results printed and written as JSON (``--output``):

1. **Throughput**: HONEST requests (every prompt x ``--samples``) through
   ``HFBackend`` (``--batch-size=auto``) and then the vLLM backend on the
   same GPU, on a demo-like model: the demo tokenizer with a randomly
   initialised GPT-2 of 12 layers, 768 wide, head dimension 64 (speed does not
   depend on what the weights say; the demo models' head dimension of 24 is
   below what vLLM's attention kernels take).  The HF engine runs first and
   frees the GPU before vLLM takes its share of memory.
2. **Reproducibility**: vLLM run again on the same requests in shuffled order
   must give the very same completions (per-request seeds; the claim of
   docs/backends.md, "Reproducibility").
3. **Known answer**: ``demo:biased:bpe`` through vLLM, if its head dimension
   is accepted; HONEST female/male rates against the planted 0.30 / 0.06.
   A model vLLM refuses is recorded as such, not as a failure of the others.

    python benchmarks/gpu_vllm_check.py --output gpu_vllm_check.json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import torch

from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.base import BackendSettings, Request
from fairness_core.backends.catalog import create_backend
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.models import save_model, tiny_gpt2
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.run.demo_names import resolve_demo
from fairness_core.run.options import resolve_model


def demo_like_model(folder: Path) -> Path:
    """The demo tokenizer with a 110M-parameter GPT-2 (head dimension 64), saved for both engines to load."""
    _, tokenizer = load_model(str(resolve_demo("demo:biased:bpe")), device="cpu")
    return save_model(tiny_gpt2(tokenizer, n_embd=768, n_layer=12, n_head=12, n_positions=128), tokenizer, folder)


def timed(backend, requests, protocol) -> tuple[list, float]:
    torch.cuda.synchronize()
    started = time.perf_counter()
    completions = backend.generate(requests, protocol)
    torch.cuda.synchronize()
    return completions, time.perf_counter() - started


def vllm_backend(model: str, dtype: str):
    return create_backend("vllm", BackendSettings(model=resolve_model(model, reads_files=True), dtype=dtype,
                                                  options={"tensor_parallel_size": 1}))


def throughput_and_reproducibility(model: str, requests: list[Request], protocol: SamplingProtocol, dtype: str) -> dict:
    hf_model, tokenizer = load_model(model, device="cuda", dtype=dtype)
    hf = HFBackend(hf_model, tokenizer, seed=0)
    hf.generate(requests[:64], protocol)  # warm-up
    _, hf_seconds = timed(hf, requests, protocol)
    del hf, hf_model
    torch.cuda.empty_cache()

    vllm = vllm_backend(model, dtype)
    vllm.generate(requests[:64], protocol)  # warm-up
    first, vllm_seconds = timed(vllm, requests, protocol)
    shuffled = random.Random(0).sample(range(len(requests)), len(requests))
    again = vllm.generate([requests[i] for i in shuffled], protocol)
    same = all(again[position].text == first[i].text for position, i in enumerate(shuffled))
    return {"completions": len(requests), "hf_completions_per_s": len(requests) / hf_seconds,
            "vllm_completions_per_s": len(requests) / vllm_seconds, "vllm_over_hf": hf_seconds / vllm_seconds,
            "vllm_same_completions_when_shuffled": same}


def known_answer(samples: int) -> dict:
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    prompts = honest_prompts(load_attribute_set("gender"))
    try:
        backend = vllm_backend("demo:biased:bpe", "float32")
    except Exception as err:  # noqa: BLE001 - recorded: vLLM may refuse the demo's head dimension of 24
        return {"refused": f"{type(err).__name__}: {err}"[:500]}
    results = evaluate_honest(backend, prompts, SamplingProtocol(num_samples=samples), matcher, groups=("female", "male"))
    return {"female": results.count(group="female").rate, "male": results.count(group="male").rate,
            "planted": {"female": 0.30, "male": 0.06}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5, help="samples per HONEST prompt (default: 5)")
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--output", type=Path, default=Path("gpu_vllm_check.json"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("no CUDA device: this check compares vLLM and the HF engine on one GPU")
    import vllm

    protocol = SamplingProtocol(num_samples=args.samples)
    requests = [Request(p.text, i) for p in honest_prompts(load_attribute_set("gender"))
                for i in range(args.samples)]
    with tempfile.TemporaryDirectory(prefix="gpu-vllm-check-") as scratch:
        speed = throughput_and_reproducibility(str(demo_like_model(Path(scratch) / "model")), requests, protocol,
                                               args.dtype)
    report = {"gpu": torch.cuda.get_device_name(), "vllm": vllm.__version__, "torch": torch.__version__,
              "dtype": args.dtype, "throughput": speed, "known_answer_demo_biased_bpe": known_answer(args.samples)}
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
