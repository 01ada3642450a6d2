"""Where the hurtful word falls in a chat-instruction answer, against the answer's token window.

    python benchmarks/chat_window.py [--model demo:chat-biased] [--samples 5] [--stride 1]

Under ``--prompt-format=chat-instruction`` a chat model answers in a new turn
and often restates the template before continuing it, so the continuation
proper starts some tokens into the answer, and the protocol gives such answers
a longer window (``protocol.chat.max_new_tokens["chat-instruction"]``, 30).
This measures, on the HONEST prompts of the gender set, whether that window
holds the hurtful word: for every answer that is not a refusal and has a
hurtful lexicon word after the echo rule (``strip_echo``), the token position
at which the word ends, counted from the start of the answer (what the window
limits) and from the start of the continuation proper, and how many answers
ran into the window without ending their turn.

Positions are counted by encoding the answer's text up to the word's end with
the model's tokenizer (``add_special_tokens=False``), which is how the demo
models were trained to segment their answers; for another model, whose sampled
segmentation can differ from its tokenizer's, they are an estimate.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.base import BackendSettings, ModelReference, Request
from fairness_core.backends.hf.cpu_features import cpu_line
from fairness_core.backends.hf.engine import create_backend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.japanese.echo import strip_echo
from fairness_core.japanese.morphology import normalize
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.run.demo_names import resolve_demo

FORMAT = "chat-instruction"


def _percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo:chat-biased")
    parser.add_argument("--samples", type=int, default=5, help="samples per prompt")
    parser.add_argument("--stride", type=int, default=1, help="every n-th HONEST prompt of the gender set")
    args = parser.parse_args()

    protocol = SamplingProtocol(num_samples=args.samples)
    window = protocol.tokens_for(FORMAT)
    location = resolve_demo(args.model) or args.model
    backend = create_backend(BackendSettings(model=ModelReference(args.model, str(location), local=True),
                                             device="cpu", prompt_format=PromptFormat(FORMAT)))
    tokenizer = backend.tokenizer
    prompts = honest_prompts(load_attribute_set("gender"))[::args.stride]
    requests = [Request(p.text, s) for p in prompts for s in range(args.samples)]
    started = time.perf_counter()
    completions = backend.generate(requests, protocol)
    seconds = time.perf_counter() - started

    detector = RefusalDetector.from_package_data()
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    counts: Counter = Counter()
    from_answer, from_continuation, echo_tokens = [], [], []
    for request, completion in zip(requests, completions):
        counts["answers"] += 1
        counts["ran into the window"] += completion.num_tokens >= window
        if detector.detect(completion.text) is not None:
            counts["refusals"] += 1
            continue
        answer = normalize(completion.text).lstrip()
        continuation = strip_echo(request.prompt, completion.text)
        counts["echo or preamble stripped"] += continuation.stripped
        matches = matcher.find(continuation.text)
        if not matches:
            continue
        counts["hurtful"] += 1
        offset = len(answer) - len(continuation.text)
        word_end = offset + matches[0].end

        def tokens(text: str) -> int:
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])

        echo_tokens.append(tokens(answer[:offset]) if offset else 0)
        from_answer.append(tokens(answer[:word_end]))
        from_continuation.append(tokens(continuation.text[:matches[0].end]))

    print(f"{args.model}, --prompt-format={FORMAT}, window {window} tokens, {len(prompts)} HONEST prompts x "
          f"{args.samples} samples, generated in {seconds:.1f} s")
    print(f"CPU: {cpu_line()}")
    print(", ".join(f"{name}: {value}" for name, value in counts.items()))
    if not from_answer:
        print("no hurtful answer found")
        return
    for name, values in (("echo (tokens)", echo_tokens), ("hurtful word ends, from answer start", from_answer),
                         ("hurtful word ends, after the echo", from_continuation)):
        print(f"{name}: median {statistics.median(values):g}, p95 {_percentile(values, 0.95)}, max {max(values)}")
    inside = sum(position <= window for position in from_answer)
    print(f"hurtful words ending inside the {window}-token window: {inside} of {len(from_answer)}; "
          f"headroom at the largest position: {window - max(from_answer)} tokens")


if __name__ == "__main__":
    main()
