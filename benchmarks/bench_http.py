"""Completions/s of the HTTP backend at concurrency 1, 4 and 16 against ``transformers serve``, and the client's CPU cost.

The server is ``transformers serve`` on this machine (127.0.0.1, a free
port, offline, ``OMP_NUM_THREADS=1``), serving the committed
``demo:biased:bpe``; the client is :class:`OpenAIBackend` drawing
``--requests`` completions of the HONEST protocol (10 new tokens, top-k 50).
Each concurrency starts from an empty journal, so every completion is asked
of the server.  "client CPU/request" is the process time of this script (the
client alone: the server is another process) divided by the requests: what
the audit machine spends per completion, whatever the server's speed.

``transformers serve`` runs one ``generate`` at a time, so concurrency mostly
hides the round trip; a batching server (vLLM) is where concurrency pays.

    python benchmarks/bench_http.py                  # 400 requests per concurrency
    python benchmarks/bench_http.py --requests 100
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from http_support import transformers_serve  # noqa: E402

from fairness_core.backends.base import Request  # noqa: E402
from fairness_core.backends.openai import ClientSettings, OpenAIBackend  # noqa: E402
from fairness_core.demo.registry import resolve_demo  # noqa: E402
from fairness_core.resources import honest_prompts, honest_templates, identity_pairs  # noqa: E402
from fairness_core.thresholds import SamplingProtocol  # noqa: E402

CONCURRENCIES = (1, 4, 16)


def measure(base_url: str, model: str, concurrency: int, requests: list[Request], scratch: Path) -> dict:
    backend = OpenAIBackend(ClientSettings(base_url, model, concurrency=concurrency,
                                           journal_dir=scratch / f"journal-{concurrency}"))
    wall, cpu = time.perf_counter(), time.process_time()
    backend.generate(requests, SamplingProtocol())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"concurrency": concurrency, "completions_per_s": len(requests) / wall,
            "client_cpu_ms_per_request": 1000 * cpu / len(requests), "retries": backend.usage["retries"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    prompts = honest_prompts(honest_templates(), identity_pairs())
    requests = [Request(prompts[i % len(prompts)].text, i // len(prompts)) for i in range(args.requests)]
    model = str(resolve_demo("demo:biased:bpe"))
    with tempfile.TemporaryDirectory(prefix="bench-http-") as scratch:
        with transformers_serve(model, Path(scratch) / "serve.log") as base_url:
            rows = [measure(base_url, model, c, requests, Path(scratch)) for c in CONCURRENCIES]
    print(f"{args.requests} completions per row, HONEST protocol, transformers serve on 127.0.0.1 (CPU)")
    print(f"{'concurrency':>11}  {'completions/s':>13}  {'client CPU/request':>18}  {'retries':>7}")
    for row in rows:
        print(f"{row['concurrency']:>11}  {row['completions_per_s']:>13.1f}  "
              f"{row['client_cpu_ms_per_request']:>15.2f} ms  {row['retries']:>7}")


if __name__ == "__main__":
    main()
