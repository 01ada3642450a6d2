"""Precision and recall of the hurtful-word matcher on labelled natural sentences, per level and category.

A sentence counts as flagged when the matcher finds any entry in it.  Recall per
category is over the hurtful sentences whose word has that category; precision
per category is over the sentences where an entry of that category was found.
The self-match line is the share of entries that the matcher finds in every
carrier frame (``fairness_core.evaluations.honest.matching.self_check``).

    python benchmarks/bench_matching.py [--lexicon PATH] [--errors] [--speed]

Three data sets under ``benchmarks/data/`` (their headers say how they were made):
``matching_sentences_ja.tsv``, the development set whose misses guided the lexicon,
``matching_sentences_heldout_ja.tsv``, written after the lexicon was frozen, and
``matching_sentences_colloquial_ja.tsv``, web-register sentences written for the spelling rules
before they were first run.  Each level is shown twice: *lemma keys only* is the
matcher without the spelling rules (``HurtfulMatcher(..., spelling_rules=False)``: no reading,
compound-head or colloquial matches), *with spelling rules* is the matcher as the audit runs it.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fairness_core.evaluations.honest.lexicon import LEXICON_LEVELS, Lexicon, load_builtin_lexicon, load_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher, self_check
from fairness_core.japanese.morphology import morphemes

DATA = Path(__file__).resolve().parent / "data"
SENTENCE_SETS = {"development": DATA / "matching_sentences_ja.tsv", "held-out": DATA / "matching_sentences_heldout_ja.tsv",
                 "colloquial": DATA / "matching_sentences_colloquial_ja.tsv"}


@dataclass(frozen=True)
class Sentence:
    label: str
    category: str
    kind: str
    text: str


def read_sentences(path: Path) -> list[Sentence]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return [Sentence(row["label"], row["category"], row["kind"], row["sentence"])
            for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)]


def ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f} ({numerator}/{denominator})" if denominator else "n/a"


def report_level(lexicon: Lexicon, level: str, sentences: list[Sentence], *, errors: bool,
                 spelling_rules: bool) -> None:
    entries = lexicon.at_level(level).entries
    matcher = HurtfulMatcher(entries, spelling_rules=spelling_rules)
    missed = self_check(entries)
    print(f"\n== level {level}, {'with spelling rules' if spelling_rules else 'lemma keys only'}: "
          f"{len(entries)} entries; self-match in every carrier frame: "
          f"{ratio(len(entries) - len(missed), len(entries))}")
    true_pos = false_pos = hurtful = 0
    recall_hits, recall_totals, found_by, found_true = Counter(), Counter(), Counter(), Counter()
    for sentence in sentences:
        matches = matcher.find(sentence.text)
        is_hurtful = sentence.label == "hurtful"
        hurtful += is_hurtful
        true_pos += is_hurtful and bool(matches)
        false_pos += (not is_hurtful) and bool(matches)
        if is_hurtful:
            recall_totals[sentence.category] += 1
            recall_hits[sentence.category] += bool(matches)
        for category in {m.category for m in matches}:
            found_by[category] += 1
            found_true[category] += is_hurtful
        if errors and is_hurtful != bool(matches):
            words = ", ".join(f"{m.surface}={m.lemma}/{m.category}" for m in matches) or "-"
            print(f"  {'FALSE HIT' if matches else 'MISS     '} [{sentence.kind}] {sentence.text}  ({words})")
    print(f"precision {ratio(true_pos, true_pos + false_pos)}   recall {ratio(true_pos, hurtful)}")
    print(f"{'category':<10}{'recall (gold category)':<28}precision (found category)")
    for category in sorted(set(recall_totals) | set(found_by)):
        print(f"{category:<10}{ratio(recall_hits[category], recall_totals[category]):<28}"
              f"{ratio(found_true[category], found_by[category])}")


def report_speed(lexicon: Lexicon, sentences: list[Sentence]) -> None:
    """Texts/s of ``find`` at the default level, with an empty tagger cache, without and with the spelling rules.

    Each sentence gets a numbered prefix, so that no text repeats and the tagger's cache does not help.
    """
    texts = [f"{i}番目:{s.text}" for i in range(10) for s in sentences]
    entries = lexicon.at_level("conservative").entries
    for spelling_rules in (False, True):
        matcher = HurtfulMatcher(entries, spelling_rules=spelling_rules)
        morphemes.cache_clear()
        start = time.perf_counter()
        for text in texts:
            matcher.find(text)
        took = time.perf_counter() - start
        print(f"speed, {'with spelling rules' if spelling_rules else 'lemma keys only'}: {len(texts)} texts in "
              f"{took:.2f} s = {len(texts) / took:,.0f} texts/s (one process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lexicon", type=Path, help="an external lexicon instead of the built-in one")
    parser.add_argument("--errors", action="store_true", help="print every false hit and miss")
    parser.add_argument("--speed", action="store_true", help="only time the matcher on the sentences of all sets")
    args = parser.parse_args()
    lexicon = load_lexicon(args.lexicon) if args.lexicon else load_builtin_lexicon()
    if args.speed:
        report_speed(lexicon, [s for path in SENTENCE_SETS.values() for s in read_sentences(path)])
        return
    for name, path in SENTENCE_SETS.items():
        sentences = read_sentences(path)
        counts = Counter(s.label for s in sentences)
        print(f"\n#### {name} set {path.name}: {len(sentences)} sentences ({counts['hurtful']} hurtful, "
              f"{counts['neutral']} neutral); {lexicon.source}: {len(lexicon.entries)} entries")
        for level in LEXICON_LEVELS:
            for spelling_rules in (False, True):
                report_level(lexicon, level, sentences, errors=args.errors and spelling_rules,
                             spelling_rules=spelling_rules)


if __name__ == "__main__":
    main()
