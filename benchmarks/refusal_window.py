"""How far a chat answer must be read to tell a refusal: the measurement behind ``chat.refusal_window``.

    python benchmarks/refusal_window.py [--tokenizer demo:biased:bpe] [--bounds 20 30 40 50 60]

Under a chat format an answer is scored on the protocol's window of new tokens
(``chat.max_new_tokens``: 10 under ``chat-prefill``, 30 under
``chat-instruction``).  A refusal written as people write it opens with
申し訳ありませんが、 and reaches its verb later, so the refusal reader reads on
from the window's end until the answer's opening sentences (the two the
detector reads) are complete, within a bound
of tokens (``chat.refusal_window``).  On the labelled refusals of
``benchmarks/data/refusal_answers_ja.tsv`` (frozen, sha256-checked) this counts,
per prompt format:

- how many the detector recognises in the whole text, in the window alone (the
  old reading), and read to the sentence end within each bound;
- the tokens the reading needs (from the answer's start to the end of the
  opening sentences): median, 95th percentile, largest;

and on the labelled answers and partial answers, how many become false refusals
with the longer reading.  Tokens are counted with a real tokenizer built
offline: a demo model's or any local folder.  The default, the demo models'
byte-level BPE (1,000 tokens), cuts Japanese finer than a real model's
tokenizer (1 of the 30 prefill refusals fits in 10 of its tokens, 11 of 30 in
llm-jp-3's), so the bounds it needs are upper estimates.  The chat demo
models' SentencePiece (``demo:chat``, 863 pieces) cannot spell most of these
answers (unknown pieces decode to nothing), so it measures nothing here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_refusals import Answer, as_read, read_answers  # noqa: E402

from fairness_core.config.thresholds import SamplingProtocol  # noqa: E402
from fairness_core.japanese.refusals import RefusalDetector  # noqa: E402
from fairness_core.japanese.sentence_reading import cut_reading  # noqa: E402
from fairness_core.run.demo_names import resolve_demo  # noqa: E402

FORMATS = ("chat-prefill", "chat-instruction")


def read_at(tokenizer, answer: Answer, window: int, bound: int | None) -> tuple[str, int]:
    """What the reader reads of ``answer``: its first ``window`` tokens, read on to the end of the sentence they cut
    within ``bound`` tokens (``None``: the window alone); and the tokens that reading needs without a bound."""
    ids = tokenizer(answer.text, add_special_tokens=False)["input_ids"]
    window_text = tokenizer.decode(ids[:window], skip_special_tokens=True)
    whole = cut_reading(answer.text, len(window_text))
    needed = len(tokenizer(whole, add_special_tokens=False)["input_ids"]) if len(whole) > len(window_text) else window
    if bound is None:
        return window_text, needed
    longer = tokenizer.decode(ids[:max(window, bound)], skip_special_tokens=True)
    return cut_reading(longer, len(window_text)), needed


def detected(detector: RefusalDetector, answer: Answer, text: str) -> bool:
    return detector.detect(as_read(Answer(answer.id, answer.label, answer.prompt_format, text, answer.template))) \
        is not None


def _percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="demo:biased:bpe")
    parser.add_argument("--bounds", type=int, nargs="+", default=[20, 30, 40, 50, 60])
    args = parser.parse_args()
    location = resolve_demo(args.tokenizer) or args.tokenizer
    tokenizer = AutoTokenizer.from_pretrained(str(location), local_files_only=True)
    detector = RefusalDetector.from_package_data()
    protocol = SamplingProtocol()
    answers = read_answers()
    print(f"tokenizer {args.tokenizer} ({type(tokenizer).__name__}, {len(tokenizer)} tokens); "
          f"bounds {args.bounds}")
    for prompt_format in FORMATS:
        window = protocol.tokens_for(prompt_format)
        refusals = [a for a in answers if a.prompt_format == prompt_format and a.refusal]
        others = [a for a in answers if a.prompt_format == prompt_format and not a.refusal]
        needed = [read_at(tokenizer, a, window, None)[1] for a in refusals]
        fits = sum(len(tokenizer(a.text, add_special_tokens=False)["input_ids"]) <= window for a in refusals)
        print(f"\n{prompt_format}: window {window} tokens, {len(refusals)} labelled refusals "
              f"({fits} fit in the window whole), {len(others)} answers and partial answers")
        print(f"  recognised whole: {sum(detected(detector, a, a.text) for a in refusals)} of {len(refusals)}")
        print(f"  recognised in the window alone: "
              f"{sum(detected(detector, a, read_at(tokenizer, a, window, None)[0]) for a in refusals)}")
        print(f"  tokens the reading needs: median {statistics.median(needed):g}, p95 {_percentile(needed, 0.95)}, "
              f"max {max(needed)}")
        characters = [len(cut_reading(a.text, len(read_at(tokenizer, a, window, None)[0]))) for a in refusals]
        print(f"  characters the reading holds: median {statistics.median(characters):g}, "
              f"p95 {_percentile(characters, 0.95)}, max {max(characters)}")
        for bound in args.bounds:
            found = sum(detected(detector, a, read_at(tokenizer, a, window, bound)[0]) for a in refusals)
            false = sum(detected(detector, a, read_at(tokenizer, a, window, bound)[0]) for a in others)
            false_window = sum(detected(detector, a, read_at(tokenizer, a, window, None)[0]) for a in others)
            cut = sum(n > bound for n in needed)
            print(f"  bound {bound}: recognised {found} of {len(refusals)}; readings cut by the bound {cut}; "
                  f"answers called refusals {false} (window alone: {false_window})")


if __name__ == "__main__":
    main()
