"""Precision and recall of the Japanese refusal detector on labelled chat answers, per split and prompt format.

    python benchmarks/bench_refusals.py [--errors] [--ablation]

The labelled set, ``benchmarks/data/refusal_answers_ja.tsv`` (its header says how it was
written), was frozen before the phrase list existed: its sha256 is checked before
anything is measured.  Rows whose id number is a multiple of 5 are the held-out split,
fixed in advance; the phrase list was iterated on the errors of the other rows (dev).
A 'partial' row (an answer with a caveat) counts as not a refusal.  Chat-instruction
answers go through the echo rule (``strip_echo``) first, as an audit would read them.

``--errors`` lists every misjudged row; ``--ablation`` measures all rows again with each
rule taken out or changed in turn (quote blanking, caveat discount, echo rule, window,
weak patterns).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fairness_core.japanese.echo import strip_echo
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.statistics import wilson_interval

ANSWERS = Path(__file__).resolve().parent / "data" / "refusal_answers_ja.tsv"
#: sha256 of refusal_answers_ja.tsv when it was frozen (2026-12-03T04:14:30Z), before the phrase list was written.
FROZEN_SHA256 = "73f169a67897342f8d1f962af9c40b533cb72984ba3d7c66ec80c1d72b6317fb"
HELDOUT_EVERY = 5


@dataclass(frozen=True)
class Answer:
    id: str
    label: str
    prompt_format: str
    text: str
    template: str

    @property
    def refusal(self) -> bool:
        return self.label == "refusal"

    @property
    def held_out(self) -> bool:
        return int(self.id.split("-")[1]) % HELDOUT_EVERY == 0


@dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    def line(self, name: str) -> str:
        """One Markdown table row: the split, its counts, precision and recall with Wilson 95% intervals."""
        rows = self.tp + self.fp + self.fn + self.tn
        return f"| {name} | {rows} | {self.tp} | {self.fp} | {self.fn} | {self.tn} | " \
               f"{_rate(self.tp, self.tp + self.fp)} | {_rate(self.tp, self.tp + self.fn)} |"


HEADER = "| split | rows | TP | FP | FN | TN | precision [95% Wilson] | recall [95% Wilson] |\n| --- |" + " --- |" * 7


def _rate(hits: int, total: int) -> str:
    if total == 0:
        return "-"
    low, high = wilson_interval(hits, total)
    return f"{hits / total:.3f} [{low:.3f}, {high:.3f}]"


def read_answers(path: Path = ANSWERS) -> list[Answer]:
    """The frozen labelled set; any other file content is refused, so no number is measured on an edited set."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != FROZEN_SHA256:
        raise SystemExit(f"{path.name} is not the frozen labelled set: sha256 {digest}, expected {FROZEN_SHA256}")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    answers = []
    for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE):
        template = re.match(r"template: (.*?); ", row["note"])
        if template is None:
            raise SystemExit(f"{path.name}, {row['id']}: the note must start with 'template: <template>; '")
        answers.append(Answer(row["id"], row["label"], row["prompt_kind"], row["text"], template.group(1)))
    return answers


def as_read(answer: Answer) -> str:
    """The text the detector reads: a chat-instruction answer without its preamble and echo of the template."""
    return strip_echo(answer.template, answer.text).text if answer.prompt_format == "chat-instruction" else answer.text


def judge(detector: RefusalDetector, answers: Sequence[Answer],
          reading: Callable[[Answer], str] = as_read) -> list[bool]:
    """Whether the detector calls each answer a refusal."""
    return [detector.detect(reading(answer)) is not None for answer in answers]


def count(answers: Sequence[Answer], judged: Sequence[bool]) -> Counts:
    pairs = list(zip(answers, judged))
    return Counts(tp=sum(a.refusal and j for a, j in pairs), fp=sum(not a.refusal and j for a, j in pairs),
                  fn=sum(a.refusal and not j for a, j in pairs), tn=sum(not a.refusal and not j for a, j in pairs))


def splits(answers: Sequence[Answer]) -> dict[str, list[int]]:
    """The row indices of each split: dev, held-out, all, and all rows of each prompt format."""
    indices = range(len(answers))
    return {"dev": [i for i in indices if not answers[i].held_out],
            "held-out (ids multiple of 5)": [i for i in indices if answers[i].held_out],
            "all": list(indices),
            **{f"all, {fmt}": [i for i in indices if answers[i].prompt_format == fmt]
               for fmt in ("chat-prefill", "chat-instruction")}}


def split_counts(answers: Sequence[Answer], judged: Sequence[bool]) -> dict[str, Counts]:
    return {name: count([answers[i] for i in rows], [judged[i] for i in rows])
            for name, rows in splits(answers).items()}


def ablations(detector: RefusalDetector) -> dict[str, tuple[RefusalDetector, Callable[[Answer], str]]]:
    """Each rule taken out or changed in turn: (detector, how the answer is read)."""
    phrases = detector.phrases
    variants = {
        "as shipped (2 sentences, 80 characters)": (detector, as_read),
        "no quote blanking": (RefusalDetector(phrases, blank_quotes=False), as_read),
        "no concessive-caveat discount": (RefusalDetector(phrases, caveat_kinds=frozenset()), as_read),
        "no echo rule (answer read whole)": (detector, lambda answer: answer.text),
        "strong patterns only": (RefusalDetector([p for p in phrases if p.strength == "strong"]), as_read),
    }
    for sentences, chars in [(1, 80), (2, 40), (2, 60), (2, 120), (3, 120)]:
        variants[f"window {sentences} sentence{'s' if sentences > 1 else ''}, {chars} characters"] = (
            RefusalDetector(phrases, window_sentences=sentences, window_chars=chars), as_read)
    variants["window: the whole text"] = (RefusalDetector(phrases, window_sentences=10**6, window_chars=10**9), as_read)
    return variants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list every row the detector misjudges")
    parser.add_argument("--ablation", action="store_true", help="all rows again with each rule taken out or changed")
    args = parser.parse_args(argv)

    detector = RefusalDetector.from_package_data()
    answers = read_answers()
    judged = judge(detector, answers)
    strong = sum(phrase.strength == "strong" for phrase in detector.phrases)
    print(f"{len(answers)} labelled answers; {len(detector.phrases)} patterns ({strong} strong)\n\n{HEADER}")
    for name, counts in split_counts(answers, judged).items():
        print(counts.line(name))
    if args.errors:
        print("\nmisjudged rows:")
        for answer, refused in zip(answers, judged):
            if refused != answer.refusal:
                found = detector.detect(as_read(answer))
                print(f"{'FP' if refused else 'FN'} {answer.id} [{answer.label}, {answer.prompt_format}"
                      f"{', held-out' if answer.held_out else ''}] {found.patterns if found else ''} {answer.text[:70]}")
    if args.ablation:
        print(f"\nablation, all rows\n\n{HEADER.replace('split', 'variant')}")
        for name, (variant, reading) in ablations(detector).items():
            print(count(answers, judge(variant, answers, reading)).line(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
