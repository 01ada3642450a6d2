"""Generation speed of the audit's engine against the two ways one would otherwise sample.

Every method draws the same work: ``num_samples`` (20) completions of
``max_new_tokens`` (10) tokens for each of a fixed subset of the HONEST
prompts, under the reference protocol (top-k 50, temperature 1, sampling on).

    (a) pipeline     one ``transformers.pipeline("text-generation")`` call per
                     prompt, ``num_return_sequences=20``: what most audit
                     scripts do.
    (b) generate     ``model.generate`` on 8 prompts at a time, left-padded,
                     ``num_return_sequences=20``: the plain batched loop.
    (c) engine fp32  ``HFBackend.generate`` with ``batch_size="auto"`` (sorted
                     batches as large as memory allows, up to 512 rows; the
                     prompt's prefill shared by its samples; a static KV
                     cache; per-row seeded sampling over the top-k; linear
                     and attention kernels chosen by timing them on this
                     CPU), the path the audit takes.
    (d) engine bf16  the same with the model cast to bfloat16.

The model is GPT-2-shaped with about 110M parameters and a 32k vocabulary,
randomly initialised: speed does not depend on what the weights say.  The
tokenizer is a SentencePiece model trained here on the project's Japanese text;
model and tokenizer go through ``save_pretrained`` and ``load_model``, the
audit's own loading path.

How to read the output:

* Each method runs once untimed (warm-up), then ``--repetitions`` times; the
  table shows the median.  ``torch.manual_seed`` is reset before every run, so
  the runs of a method draw the same tokens and do the same work.
* Ratios are throughput ratios: ``c/a = 4.0`` means the engine produces
  completions 4 times as fast as the pipeline loop.  ``c/b`` isolates what the
  engine adds over plain batching (shared prefill, cheap sampling); ``d/a`` is
  what an audit gains from also running in bfloat16.
* The CPU line names the vendor, the model and the instruction-set
  extensions that decide which kernels win (AVX-512, AVX512-BF16, AMX).
* The GEMM table gives every candidate linear kernel's rate at the engine's
  own shapes (each distinct layer shape, a slice of the LM head, at the decoding
  batch's rows) in float32 and bfloat16, and the kernel the engine chose for
  each; the square 2048 product is there for comparison with older results.
* "Share of the best GEMM rate" compares the engine's useful arithmetic
  (2 x parameters x tokens through the model) with the best rate in that
  table for its dtype.  Decoding runs attention, norms and sampling besides,
  so a share below 100% is expected; it tells how much room the engine
  leaves, not whether it is correct.
* Batch-size agreement: the engine promises that a completion depends on the
  seed, the prompt and the sample index only, not on the batch it lands in.
  The share of identical completions at batch sizes 1 and 64 shows how far
  floating-point differences between batch shapes erode that promise.

    python benchmarks/bench_generation.py [--quick] [--repetitions 3]

``--quick`` (4 prompts, 2 layers) checks that the script works; its numbers
mean little.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
import transformers
import yaml

from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.base import Request
from fairness_core.backends.hf.cpu_features import cpu_line, has_native_units
from fairness_core.backends.hf.cpu_kernels import kernel_shapes
from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.backends.hf.kernel_choice import (
    LINEAR_KERNELS,
    KernelChoice,
    KernelChooser,
    LinearShape,
    linear_candidates,
    linear_support,
)
from fairness_core.backends.token_ids import encode_prompt
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.models import save_model, tiny_gpt2
from fairness_core.demo.tokenizers import train_tokenizer
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.evaluations.sentiment.templates import given_names, name_templates

SEED = 0
VOCAB_SIZE = 32000
MODEL_SHAPE = {"n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 128}
PROMPT_COUNT = {"full": 16, "quick": 4}
LAYER_COUNT = {"full": 12, "quick": 2}
PROMPTS_PER_GENERATE_CALL = 8
AGREEMENT_PROMPTS = 2
AGREEMENT_BATCH_SIZES = (1, 64)
GEMM_SIZE = 2048
GEMM_REPEATS = 5
@dataclass(frozen=True)
class Timing:
    label: str
    seconds: float
    completions: int
    peak_rss_mib: float

    @property
    def per_second(self) -> float:
        return self.completions / self.seconds


def positive_int(text: str) -> int:
    """``--repetitions`` type: a median of zero runs does not exist."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1. Got {value} instead.")
    return value


def japanese_corpus() -> list[str]:
    """The project's Japanese text, each piece once: templates without their slot, terms, names, continuations.

    Not the demo corpus (``fairness_core.demo.corpus``): it repeats every
    filled prompt, so SentencePiece learns each prompt as a single piece and
    there is no prompt left to prefill.  Trained on the parts, 女性が就くべき職業は
    becomes ▁女性 / が / 就 / くべき / 職 / 業 / は, a realistic prompt length.
    """
    data = resources.files("fairness_core.demo") / "data"
    honest = yaml.safe_load((data / "demo_honest_continuations.yaml").read_text(encoding="utf-8"))
    sentiment = yaml.safe_load((data / "demo_sentiment_continuations.yaml").read_text(encoding="utf-8"))
    return [
        *(t.text.replace(t.slot, "") for t in (*honest_templates(), *name_templates())),
        *(term for pair in identity_pairs() for term in (pair.female, pair.male)),
        *(name.name for names in given_names().values() for name in names),
        *(frame.format(word=word) for frame in honest["frames"] for word in honest["neutral_words"]),
        *sentiment["positive"], *sentiment["negative"],
    ]


def pad_vocabulary(tokenizer, size: int) -> None:
    """Fill the tokenizer up to ``size`` entries with placeholder tokens.

    The corpus yields far fewer than 32k pieces (``hard_vocab_limit=False``
    lets SentencePiece stop short), yet the model needs a 32k vocabulary for the
    LM head, top-k and sampling to cost what they cost in a production model.
    A random model samples mostly ids past the trained pieces; without tokens
    behind them they would decode to nothing, and the batch-size agreement would
    count different completions as equal empty strings.
    """
    tokenizer.add_tokens([f"<unused{i}>" for i in range(len(tokenizer), size)])


def build_model(folder: Path, n_layer: int):
    """(model, tokenizer, trained pieces), saved to ``folder`` and loaded back the way the audit loads a model."""
    tokenizer = train_tokenizer("sentencepiece", japanese_corpus(), vocab_size=VOCAB_SIZE)
    trained_pieces = len(tokenizer)
    pad_vocabulary(tokenizer, VOCAB_SIZE)
    save_model(tiny_gpt2(tokenizer, seed=SEED, **{**MODEL_SHAPE, "n_layer": n_layer}), tokenizer, folder)
    model, tokenizer = load_model(str(folder), device="cpu", dtype="float32")
    return model, tokenizer, trained_pieces


def pipeline_loop(model, tokenizer, prompts: list[str], protocol: SamplingProtocol) -> Callable[[], None]:
    """(a) One pipeline call per prompt, as a typical HONEST script does."""
    generator = transformers.pipeline("text-generation", model=model, tokenizer=tokenizer)

    def run() -> None:
        for prompt in prompts:
            generator(prompt, num_return_sequences=protocol.num_samples, max_new_tokens=protocol.max_new_tokens,
                      do_sample=True, top_k=protocol.top_k)
    return run


def generate_loop(model, tokenizer, prompts: list[str], protocol: SamplingProtocol) -> Callable[[], None]:
    """(b) ``model.generate`` on a few prompts at a time; every sample prefills its own copy of the prompt.

    Encoded without special tokens, as the engine encodes (a T5-style tokenizer
    would otherwise append ``</s>``), so that both process the same tokens.
    """
    def run() -> None:
        for start in range(0, len(prompts), PROMPTS_PER_GENERATE_CALL):
            batch = tokenizer(prompts[start:start + PROMPTS_PER_GENERATE_CALL], return_tensors="pt",
                              padding=True, padding_side="left", add_special_tokens=False)
            output = model.generate(**batch, num_return_sequences=protocol.num_samples,
                                    max_new_tokens=protocol.max_new_tokens, do_sample=True, top_k=protocol.top_k,
                                    pad_token_id=tokenizer.pad_token_id)
            tokenizer.batch_decode(output[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    return run


def engine(model, tokenizer, requests: list[Request], protocol: SamplingProtocol,
           kernels: KernelChooser) -> tuple[HFBackend, Callable[[], None]]:
    """(c)/(d) The audit's backend as ``pytest audits`` runs it: ``--batch-size=auto``.

    ``kernels`` keeps its decisions in a fresh folder, so the warm-up run
    measures the kernels (as an audit's first run on a machine does) and its
    description says how long that took.
    """
    backend = HFBackend(model, tokenizer, seed=SEED, batch_size="auto", kernels=kernels)
    return backend, lambda: backend.generate(requests, protocol)


def median_seconds(run: Callable[[], None], repetitions: int) -> float:
    """Median wall time of ``run`` over ``repetitions`` runs, after one untimed warm-up.

    The seed is reset before every run so that each draws the same tokens:
    the same early stops, hence the same work.
    """
    times = []
    for attempt in range(repetitions + 1):
        torch.manual_seed(SEED)
        start = time.perf_counter()
        with torch.inference_mode():
            run()
        if attempt:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def batch_size_agreement(model, tokenizer, requests: list[Request], protocol: SamplingProtocol,
                         kernels: KernelChooser) -> tuple[int, int]:
    """(identical completions, total) between the engine at batch size 1 and at 64.

    Per-row random streams make the draw independent of the batch; what can
    still move a completion is arithmetic: padding, the shared prefill and
    batched matrix products round the logits differently, and a near-tie in
    the Gumbel-max argmax may then flip.
    """
    first, second = (HFBackend(model, tokenizer, seed=SEED, batch_size=size, kernels=kernels)
                     .generate(requests, protocol) for size in AGREEMENT_BATCH_SIZES)
    return sum(a == b for a, b in zip(first, second, strict=True)), len(requests)


def engine_tokens(tokenizer, prompts: list[str], protocol: SamplingProtocol) -> dict[str, int]:
    """Tokens the engine must run through the model, padding excluded, counted two ways.

    ``shared``: each prompt's tokens but the last once (the shared prefill),
    then per sample the last prompt token and ``max_new_tokens - 1`` generated
    tokens (the last one is never fed back): what the engine computes.
    ``per_row``: as if every sample ran its whole prompt (conservative).
    """
    lengths = [len(encode_prompt(tokenizer, prompt)) for prompt in prompts]
    samples, new = protocol.num_samples, protocol.max_new_tokens
    return {
        "shared": sum(length - 1 + samples * new for length in lengths),
        "per_row": sum(samples * (length - 1 + new) for length in lengths),
    }


def gemm_gflops(model, rows: int) -> dict[tuple[LinearShape, int], dict[str, float]]:
    """GFLOP/s of every candidate linear kernel, ``{(shape, rows): {kernel: rate}}``, at the model's shapes.

    Each distinct linear shape of the model (the LM head as the slice its
    kernel is timed on) at the decoding batch's ``rows``, with the model's own
    weights, plus a square ``GEMM_SIZE`` product for comparison with older
    results.  Median of :data:`GEMM_REPEATS` calls after a warm-up.
    """
    shapes = {(shape, rows): layer for shape, layer in kernel_shapes(model).items()}
    square = torch.randn(GEMM_SIZE, GEMM_SIZE, dtype=model.dtype)
    shapes[(LinearShape(GEMM_SIZE, GEMM_SIZE, False), GEMM_SIZE)] = (square, None)
    table = {}
    for (shape, count), (weight, bias) in shapes.items():
        x = torch.randn(count, weight.shape[1], dtype=model.dtype)
        table[(shape, count)] = {}
        for kernel in linear_candidates(model.dtype, packing=True):
            if linear_support(kernel, model.dtype) is not None:
                continue  # cannot run on this CPU: listed with its reason by print_report
            forward = kernel.prepare(weight, bias, count)
            forward(x)
            times = []
            for _ in range(GEMM_REPEATS):
                start = time.perf_counter()
                forward(x)
                times.append(time.perf_counter() - start)
            flops = 2 * count * weight.shape[0] * weight.shape[1]
            table[(shape, count)][kernel.name] = flops / statistics.median(times) / 1e9
    return table


def onednn_implementations(model, choice: KernelChoice) -> list[str]:
    """The oneDNN implementations that run the chosen kernels, from oneDNN's verbose log of one call per shape.

    This is how to tell that bfloat16 products run on AMX (``avx512_core_amx``)
    or AVX512-BF16 (``avx512_core_bf16``) units.  The log goes to file
    descriptor 1 from C++, so it is caught there.  MKL's products (``aten`` in
    float32) leave no line.
    """
    with tempfile.TemporaryFile(mode="w+") as log:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            with torch.inference_mode(), torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                for shape, (weight, bias) in kernel_shapes(model).items():
                    LINEAR_KERNELS[choice.linears[shape]].prepare(weight, bias, choice.rows)(
                        torch.randn(choice.rows, weight.shape[1], dtype=weight.dtype))
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        fields = [line.split(",") for line in log if line.startswith("onednn_verbose") and ",exec,cpu," in line]
    return sorted({f"{f[5]} {f[6]}" for f in fields if f[5] != "reorder"})


def print_gemm_table(dtype: torch.dtype, table: dict[tuple[LinearShape, int], dict[str, float]],
                     chosen: KernelChoice) -> None:
    """The rates of every candidate at every shape, and the kernel the engine chose for the shape."""
    kernels = sorted({name for rates in table.values() for name in rates}, key=list(LINEAR_KERNELS).index)
    print(f"\n{str(dtype).removeprefix('torch.')} GEMM, GFLOP/s, rows x shape{'':<10}"
          + "".join(f"{k:>14}" for k in kernels) + "   chosen")
    for (shape, rows), rates in table.items():
        pick = chosen.linears.get(shape, "(for comparison)")
        print(f"  {rows:>5} x {str(shape):<28}" + "".join(f"{rates[k]:>14.1f}" for k in kernels) + f"   {pick}")


def best_rate(table: dict[tuple[LinearShape, int], dict[str, float]], chosen: KernelChoice) -> float:
    """The best GFLOP/s of any candidate at the engine's own shapes (the square comparison product left out)."""
    return max(max(rates.values()) for (shape, _), rates in table.items() if shape in chosen.linears)


def print_report(timings: dict[str, Timing], gemm: dict[torch.dtype, dict], chosen: dict[str, KernelChoice],
                 implementations: dict[str, list[str]], shares: dict[str, dict[str, float]],
                 agreement: tuple[int, int]) -> None:
    print(f"\n{'method':<16}{'median s':>10}{'completions/s':>15}{'peak RSS so far, MiB':>22}")
    for key, timing in timings.items():
        print(f"{key} {timing.label:<14}{timing.seconds:>10.3f}{timing.per_second:>15.1f}{timing.peak_rss_mib:>22.0f}")
    print("\nthroughput ratios (>1: the first is faster)")
    emulated = "" if has_native_units(torch.bfloat16) else "  (no native bf16 on this CPU: bfloat16 is emulated)"
    for first, second in (("c", "a"), ("c", "b"), ("d", "a"), ("d", "c")):
        print(f"  {first}/{second}  {timings[first].per_second / timings[second].per_second:6.2f}"
              + (emulated if first == "d" else ""))
    for key, dtype in (("c", torch.float32), ("d", torch.bfloat16)):
        print_gemm_table(dtype, gemm[dtype], chosen[key])
    print("\nkernels the engine chose (first run), and those this CPU cannot run:")
    for key, choice in chosen.items():
        print(f"  ({key}) {choice.summary()}")
        for name, reason in choice.excluded.items():
            print(f"      excluded {name}: {reason}")
        print(f"      oneDNN ran them as: {'; '.join(implementations[key]) or 'none (all MKL)'}")
    for key, share in shares.items():
        peak = best_rate(gemm[torch.float32 if key == "c" else torch.bfloat16], chosen[key])
        print(f"({key}) reaches {share['shared']:.1%} of the best rate at its shapes ({peak:.1f} GFLOP/s) counting the "
              f"prompt once per prompt (what the engine computes), {share['per_row']:.1%} counting it once per sample")
    identical, total = agreement
    print(f"batch size {AGREEMENT_BATCH_SIZES[0]} vs {AGREEMENT_BATCH_SIZES[1]} (engine, fp32): "
          f"{identical}/{total} completions identical ({identical / total:.1%})")
    print(f"peak RSS: {peak_rss_mib():.0f} MiB")


def timed_engine(model, tokenizer, requests, protocol, kernels: KernelChooser, label: str,
                 repetitions: int) -> tuple[Timing, KernelChoice, int]:
    """(c) or (d): its timing, the kernels its first run chose (with the time the choice took), its batch rows."""
    backend, run = engine(model, tokenizer, requests, protocol, kernels)
    chosen = []

    def run_and_note() -> None:
        run()
        chosen.append(backend.kernel_choice)
    seconds = median_seconds(run_and_note, repetitions)
    return Timing(label, seconds, len(requests), peak_rss_mib()), chosen[0], min(backend.batch_size, len(requests))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 prompts and a 2-layer model: checks that it runs")
    parser.add_argument("--repetitions", type=positive_int, default=3, help="timed runs per method (median shown)")
    args = parser.parse_args()
    size = "quick" if args.quick else "full"
    protocol = SamplingProtocol()
    prompts = [p.text for p in honest_prompts(load_attribute_set("gender"))[:PROMPT_COUNT[size]]]
    requests = [Request(prompt, i) for prompt in prompts for i in range(protocol.num_samples)]

    with tempfile.TemporaryDirectory() as folder:
        model, tokenizer, trained_pieces = build_model(Path(folder), LAYER_COUNT[size])
    params = model.num_parameters()
    lengths = [len(encode_prompt(tokenizer, prompt)) for prompt in prompts]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads")
    print(f"CPU: {cpu_line()}")
    print(f"model: GPT-2, {LAYER_COUNT[size]} layers, {params / 1e6:.1f}M parameters, vocabulary {VOCAB_SIZE} "
          f"({trained_pieces} trained SentencePiece pieces + placeholders)")
    print(f"work: {len(prompts)} prompts ({min(lengths)}-{max(lengths)} tokens) x {protocol.num_samples} samples "
          f"x {protocol.max_new_tokens} new tokens; median of {args.repetitions} runs after a warm-up")

    # Each method is built just before it runs: HFBackend replaces model.generation_config.
    methods = {
        "a": ("pipeline", lambda: pipeline_loop(model, tokenizer, prompts, protocol)),
        "b": ("generate", lambda: generate_loop(model, tokenizer, prompts, protocol)),
    }
    timings = {}
    for key, (label, make) in methods.items():
        timings[key] = Timing(label, median_seconds(make(), args.repetitions), len(requests), peak_rss_mib())
    kernels = KernelChooser(None)  # decisions in memory: every run of this script measures afresh
    chosen, gemm, implementations = {}, {}, {}
    for key, dtype in (("c", torch.float32), ("d", torch.bfloat16)):
        model.to(dtype)
        timings[key], chosen[key], rows = timed_engine(model, tokenizer, requests, protocol, kernels,
                                                      f"engine {'fp32' if key == 'c' else 'bf16'}", args.repetitions)
        gemm[dtype] = gemm_gflops(model, rows)
        implementations[key] = onednn_implementations(model, chosen[key])
        if key == "c":
            agreement_requests = requests[:AGREEMENT_PROMPTS * protocol.num_samples]
            agreement = batch_size_agreement(model, tokenizer, agreement_requests, protocol, kernels)

    tokens = engine_tokens(tokenizer, prompts, protocol)
    shares = {}
    for key, dtype in (("c", torch.float32), ("d", torch.bfloat16)):
        peak = best_rate(gemm[dtype], chosen[key]) * 1e9
        shares[key] = {way: 2 * params * count / timings[key].seconds / peak for way, count in tokens.items()}
    print_report(timings, gemm, chosen, implementations, shares, agreement)


if __name__ == "__main__":
    main()
