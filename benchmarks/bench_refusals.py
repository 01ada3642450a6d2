"""Precision and recall of the Japanese refusal detector on labelled sets of chat answers, per set and split.

    python benchmarks/bench_refusals.py [--errors] [--ablation]

The first set, ``benchmarks/data/refusal_answers_ja.tsv`` (its header says how it was
written), was frozen before the phrase list existed: rows whose id number is a multiple
of 5 are its held-out split, fixed in advance; the phrase list was iterated on the errors
of the other rows (dev).  Chat-instruction answers go through the echo rule
(``strip_echo``) first, as an audit would read them.

The natural sets (issue 40, ``NATURAL_SETS``) hold chat answers with no template:
refusals in many registers (polite, long, casual, English), evasions, 遠慮 forms and hard
negatives that use the same words in other senses.  ``refusal_answers_natural_ja.tsv`` was
frozen before rev 5 of the rules; its ``split`` column names the dev rows rev 5 was written
on and the held-out rows it was not.  Each later set was written after a revision was
frozen, measured once on it, and then used as dev for the next revision; the last one
(after rev 7) is the held-out set of the shipped rules.

The 1105 sentences of the other benchmarks' labelled files (hurtful-word matching, sentiment),
none a refusal, give a false-positive rate on text written without the refusal rules in mind.

Every refusal set's sha256 is checked before anything is measured.  A 'partial' row (an
answer with a caveat) counts as not a refusal.  ``--errors`` lists every misjudged row;
``--ablation`` measures all rows of every set again with each rule taken out or changed in
turn (quote blanking, caveat discount, echo rule, window, the apology-opened sentence,
weak patterns, final patterns and their sentence-end check).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import platform
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fairness_core.japanese.echo import strip_echo
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.statistics import wilson_interval

DATA = Path(__file__).resolve().parent / "data"
ANSWERS = DATA / "refusal_answers_ja.tsv"
#: sha256 of refusal_answers_ja.tsv when it was frozen (2026-12-03T04:14:30Z), before the phrase list was written.
FROZEN_SHA256 = "73f169a67897342f8d1f962af9c40b533cb72984ba3d7c66ec80c1d72b6317fb"
HELDOUT_EVERY = 5
#: The natural sets (answers with no template, read whole without the echo rule): each name, file and the sha256 it
#: is frozen with (the first three were re-frozen once, when their provenance headers were amended to say that a
#: later revision was written on them; git shows that no row changed).  "natural" was written before rev 5 of the
#: rules (its split column names its dev and held-out rows); each later one was written after the named revision was
#: frozen, measured once on it, and then used as dev for the next revision.  The last is the held-out set of the
#: shipped rules.
NATURAL_SETS: dict[str, tuple[Path, str]] = {
    "natural": (DATA / "refusal_answers_natural_ja.tsv",
                "aaeb7cf7d8a68cc43cf76975a06a520951ccb2f3353555f3b51a4913cc6dae1b"),
    "after rev 5": (DATA / "refusal_answers_after_freeze_ja.tsv",
                    "6d373869220b723d66fca3e49eb66b9cf19f850f12e89a3e3d1c435e139424f4"),
    "after rev 6": (DATA / "refusal_answers_after_rev6_ja.tsv",
                    "a0fbe1657a7850add32b1c8df764fc3d93acd2e23395650e97350f2b893f6db1"),
    "after rev 7": (DATA / "refusal_answers_after_rev7_ja.tsv",
                    "a7188d93c7f5d03121a4dc6a8ebc89efed1057f0544eeba3342a926a1d59c246"),
}
NATURAL = "natural"
SHIPPED_HELD_OUT = "after rev 7"
#: Sentences written for the other benchmarks (hurtful words, sentiment), none a refusal and none written with the
#: refusal rules in mind: every one the detector calls a refusal is a false positive.
OTHER_SENTENCES = (*sorted(DATA.glob("matching_sentences*_ja.tsv")), DATA / "sentiment_sentences_ja.tsv")
SPLITS = ("dev", "held-out")


@dataclass(frozen=True)
class Answer:
    id: str
    label: str
    prompt_format: str
    text: str
    template: str
    split: str
    register: str = ""

    @property
    def refusal(self) -> bool:
        return self.label == "refusal"

    @property
    def held_out(self) -> bool:
        return self.split == "held-out"


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
        return "not judged, no rows"
    low, high = wilson_interval(hits, total)
    return f"{hits / total:.3f} [{low:.3f}, {high:.3f}]"


def _frozen_rows(path: Path, expected: str) -> list[dict[str, str]]:
    """The rows of a frozen labelled file; any other file content is refused, so no number is measured on an edit."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise SystemExit(f"{path.name} is not the frozen labelled set: sha256 {digest}, expected {expected}")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_answers(path: Path = ANSWERS) -> list[Answer]:
    """The first labelled set (template continuations); its held-out split is every id that is a multiple of 5."""
    answers = []
    for row in _frozen_rows(path, FROZEN_SHA256):
        template = re.match(r"template: (.*?); ", row["note"])
        if template is None:
            raise SystemExit(f"{path.name}, {row['id']}: the note must start with 'template: <template>; '")
        split = "held-out" if int(row["id"].split("-")[1]) % HELDOUT_EVERY == 0 else "dev"
        answers.append(Answer(row["id"], row["label"], row["prompt_kind"], row["text"], template.group(1), split))
    return answers


def read_natural_answers(name: str = NATURAL, path: Path | None = None) -> list[Answer]:
    """One natural set (``NATURAL_SETS``; ``path`` reads another copy of it against its frozen sha256)."""
    frozen_path, expected = NATURAL_SETS[name]
    return _natural_rows(path or frozen_path, expected, name)


def read_all_natural_answers() -> list[Answer]:
    return [answer for name in NATURAL_SETS for answer in read_natural_answers(name)]


def _natural_rows(path: Path, expected: str, source: str) -> list[Answer]:
    answers = []
    for row in _frozen_rows(path, expected):
        if row["split"] not in SPLITS:
            raise SystemExit(f"{path.name}, {row['id']}: split must be one of {SPLITS}. Got {row['split']!r} instead.")
        answers.append(Answer(row["id"], row["label"], source, row["text"], "", row["split"], row["register"]))
    return answers


def read_other_sentences(paths: Sequence[Path] = OTHER_SENTENCES) -> list[str]:
    """The ``sentence`` column of the other benchmarks' labelled files."""
    sentences = []
    for path in paths:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
        sentences += [row["sentence"] for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)]
    return sentences


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
    """The row indices of each split of the first set: dev, held-out, all, and all rows of each prompt format."""
    indices = range(len(answers))
    return {"dev": [i for i in indices if not answers[i].held_out],
            "held-out (ids multiple of 5)": [i for i in indices if answers[i].held_out],
            "all": list(indices),
            **{f"all, {fmt}": [i for i in indices if answers[i].prompt_format == fmt]
               for fmt in ("chat-prefill", "chat-instruction")}}


def natural_splits(answers: Sequence[Answer]) -> dict[str, list[int]]:
    """The row indices of each split of the natural sets: the first one's dev, held-out and all rows, then each set
    written after a revision froze."""
    indices = range(len(answers))
    natural = [i for i in indices if answers[i].prompt_format == NATURAL]
    later = {f"written {name} froze"
             f"{' (held-out of the shipped rules)' if name == SHIPPED_HELD_OUT else ''}":
             [i for i in indices if answers[i].prompt_format == name] for name in NATURAL_SETS if name != NATURAL}
    return {"natural, dev": [i for i in natural if not answers[i].held_out],
            "natural, held-out": [i for i in natural if answers[i].held_out],
            "natural, all": natural, **later}


def registers(answers: Sequence[Answer]) -> dict[str, list[int]]:
    """The row indices of each register of the natural sets (all rows of both)."""
    names = dict.fromkeys(answer.register for answer in answers)
    return {name: [i for i, answer in enumerate(answers) if answer.register == name] for name in names}


def split_counts(answers: Sequence[Answer], judged: Sequence[bool],
                 by: Callable[[Sequence[Answer]], dict[str, list[int]]] = splits) -> dict[str, Counts]:
    return {name: count([answers[i] for i in rows], [judged[i] for i in rows]) for name, rows in by(answers).items()}


def ablations(detector: RefusalDetector) -> dict[str, tuple[RefusalDetector, Callable[[Answer], str]]]:
    """Each rule taken out or changed in turn: (detector, how the answer is read)."""
    phrases = detector.phrases
    variants: dict[str, tuple[RefusalDetector, Callable[[Answer], str]]] = {
        "as shipped": (detector, as_read),
        "no quote blanking": (RefusalDetector(phrases, blank_quotes=False), as_read),
        "no concessive-caveat discount": (RefusalDetector(phrases, caveat_kinds=frozenset()), as_read),
        "no echo rule (answer read whole)": (detector, lambda answer: answer.text),
        "no weak patterns (strong and final only)": (RefusalDetector([p for p in phrases if p.strength != "weak"]),
                                                     as_read),
        "final patterns read as strong (no sentence-end or morpheme check)": (
            RefusalDetector([replace(p, strength="strong") if p.strength == "final" else p for p in phrases]), as_read),
        "no final patterns": (RefusalDetector([p for p in phrases if p.strength != "final"]), as_read),
        "apology-opened first sentence not read to its end": (RefusalDetector(phrases, apology_sentence_chars=0),
                                                               as_read),
    }
    for sentences, chars in [(1, 80), (2, 40), (2, 60), (2, 120), (3, 120)]:
        variants[f"window {sentences} sentence{'s' if sentences > 1 else ''}, {chars} characters"] = (
            RefusalDetector(phrases, window_sentences=sentences, window_chars=chars), as_read)
    variants["window: the whole text"] = (RefusalDetector(phrases, window_sentences=10**6, window_chars=10**9), as_read)
    return variants


def _errors(detector: RefusalDetector, answers: Sequence[Answer], judged: Sequence[bool]) -> None:
    for answer, refused in zip(answers, judged):
        if refused != answer.refusal:
            found = detector.detect(as_read(answer))
            print(f"{'FP' if refused else 'FN'} {answer.id} [{answer.label}, {answer.prompt_format}, {answer.split}"
                  f"{', ' + answer.register if answer.register else ''}] {found.patterns if found else ''} "
                  f"{answer.text[:70]}")


def cpu() -> str:
    """The processor's name, as the operating system gives it, and how many cores this process sees."""
    cpuinfo = Path("/proc/cpuinfo")
    names = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M) if cpuinfo.exists() else []
    return f"{names[0] if names else platform.processor() or platform.machine()}, {os.cpu_count()} cores visible"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list every row the detector misjudges")
    parser.add_argument("--ablation", action="store_true", help="all rows again with each rule taken out or changed")
    args = parser.parse_args(argv)

    detector = RefusalDetector.from_package_data()
    answers = read_answers()
    natural = read_all_natural_answers()
    judged, judged_natural = judge(detector, answers), judge(detector, natural)
    strong = sum(phrase.strength == "strong" for phrase in detector.phrases)
    print(f"{len(answers)} + {len(natural)} labelled answers; {len(detector.phrases)} patterns ({strong} strong); "
          f"CPU: {cpu()}\n\n{HEADER}")
    for name, counts in split_counts(answers, judged).items():
        print(counts.line(name))
    for name, counts in split_counts(natural, judged_natural, natural_splits).items():
        print(counts.line(name))
    others = read_other_sentences()
    false_alarms = [(sentence, found) for sentence in others if (found := detector.detect(sentence)) is not None]
    print(f"\nsentences of the other benchmarks (none a refusal): {len(others)} read, {len(false_alarms)} called "
          f"refusals, false-positive rate {_rate(len(false_alarms), len(others))}")
    print(f"\nthe natural sets by register (all rows of all)\n\n{HEADER.replace('split', 'register')}")
    for name, counts in split_counts(natural, judged_natural, registers).items():
        print(counts.line(name))
    if args.errors:
        print("\nmisjudged rows:")
        _errors(detector, answers, judged)
        _errors(detector, natural, judged_natural)
        for sentence, found in false_alarms:
            print(f"FP other-benchmark {found.patterns} {sentence[:70]}")
    if args.ablation:
        print(f"\nablation, all rows of every set\n\n{HEADER.replace('split', 'variant')}")
        for name, (variant, reading) in ablations(detector).items():
            both = [*answers, *natural]
            print(count(both, judge(variant, both, reading)).line(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
