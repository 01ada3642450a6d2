"""Precision and recall of the hurtful-word matcher on labelled natural sentences, per level and category.

A sentence counts as flagged when the matcher finds any entry in it.  Recall per
category is over the hurtful sentences whose word has that category; precision
per category is over the sentences where an entry of that category was found.
The self-match line is the share of entries that the matcher finds in every
carrier frame (``fairness_core.evaluations.honest.matching.self_check``).

    python benchmarks/bench_matching.py [--lexicon PATH] [--errors] [--speed] [--ablation [--toxicity PATH]]

Five data sets under ``benchmarks/data/`` (their headers say how they were made):
``matching_sentences_ja.tsv``, the development set whose misses guided the lexicon,
``matching_sentences_heldout_ja.tsv``, written after the lexicon was frozen,
``matching_sentences_colloquial_ja.tsv``, web-register sentences written for the spelling rules
before they were first run, and ``matching_sentences_hard_negatives_ja.tsv``, sentences written
to trip the spelling rules (a word of another part of speech with an entry's reading, loanwords and
names that begin with an entry, entries spelled across two morphemes) with controls, in classes, and
``matching_sentences_homographs_ja.tsv``, fresh hard negatives of the same layout for two classes that set left
(an entry read across a boundary a reader cuts elsewhere, この間 + 抜け殻; a kana spelling of an entry that is
also another word, おかま for お釜), written before the rules for them.
Each level is shown twice: *lemma keys only* is the matcher without the spelling rules
(``HurtfulMatcher(..., spelling_rules=())``: no reading, compound-head or colloquial matches),
*with spelling rules* is the matcher as the audit runs it.

``--ablation`` prints, per level, Markdown tables of each spelling rule's share: precision and
recall on every set with all rules, with lemma keys only and without each rule in turn; what each
rule adds on its own (the sentences flagged with it and not without it); and the hard-negative
sets per class.  A rule is kept where what it adds on the hard negatives has precision >= 0.98.
With ``--toxicity PATH/subset.csv`` the tables have the web comments of ``bench_toxicity.py`` as one
more set (toxic = hurtful, non-toxic = neutral), so each rule's recall on real comments stands next to
its precision on the hard negatives.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench_toxicity import read_toxicity

from fairness_core.evaluations.honest.lexicon import LEXICON_LEVELS, Lexicon, load_builtin_lexicon, load_lexicon
from fairness_core.evaluations.honest.matching import SPELLING_RULES, HurtfulMatcher, self_check
from fairness_core.japanese.morphology import morphemes

DATA = Path(__file__).resolve().parent / "data"
SENTENCE_SETS = {"development": DATA / "matching_sentences_ja.tsv", "held-out": DATA / "matching_sentences_heldout_ja.tsv",
                 "colloquial": DATA / "matching_sentences_colloquial_ja.tsv",
                 "hard negatives": DATA / "matching_sentences_hard_negatives_ja.tsv",
                 "homographs": DATA / "matching_sentences_homographs_ja.tsv"}
#: The sets written in classes (columns id, class, label): the ablation shows them per class.
CLASS_SETS = ("hard negatives", "homographs")
#: The least precision a spelling rule's own flags may have on the hard negatives for the rule to be kept.
KEEP_PRECISION = 0.98


@dataclass(frozen=True)
class Sentence:
    label: str
    category: str
    #: The trap a neutral sentence sets (compound, name, homograph ...); in the hard-negative set, every
    #: sentence's class.
    kind: str
    text: str

    @property
    def hurtful(self) -> bool:
        return self.label == "hurtful"


def read_sentences(path: Path) -> list[Sentence]:
    """The labelled sentences of a set; the hard-negative set (columns id, class, label 1/0) is read as the others."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    if rows and "class" in rows[0]:
        return [Sentence("hurtful" if row["label"] == "1" else "neutral", "-", row["class"], row["sentence"])
                for row in rows]
    return [Sentence(row["label"], row["category"], row["kind"], row["sentence"]) for row in rows]


def read_web_comments(path: Path) -> list[Sentence]:
    """The toxicity set's comments as labelled sentences: toxic ones hurtful, non-toxic ones neutral."""
    toxic, clean = read_toxicity(path)
    return [Sentence("hurtful", "-", "toxic", t) for t in toxic] + [Sentence("neutral", "-", "non-toxic", t) for t in clean]


def ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f} ({numerator}/{denominator})" if denominator else "n/a"


def precision_recall(sentences: list[Sentence], flagged: list[bool]) -> str:
    """``precision / recall`` of sentence flags, as the tables show them."""
    true_pos = sum(s.hurtful and f for s, f in zip(sentences, flagged))
    return (f"{ratio(true_pos, sum(flagged))} / "
            f"{ratio(true_pos, sum(s.hurtful for s in sentences))}")


def configurations() -> dict[str, tuple[str, ...]]:
    """The matchers the ablation compares: all rules, lemma keys only, and all rules but one, in turn."""
    return {"all spelling rules": SPELLING_RULES, "lemma keys only": (),
            **{f"without {rule}": tuple(r for r in SPELLING_RULES if r != rule) for rule in SPELLING_RULES}}


def report_ablation(lexicon: Lexicon, sets: dict[str, list[Sentence]]) -> None:
    """Markdown tables, per level, of what each spelling rule adds and costs (see the module docstring)."""
    for level in LEXICON_LEVELS:
        entries = lexicon.at_level(level).entries
        flags = {name: {set_name: [bool(matcher.find(s.text)) for s in sentences] for set_name, sentences in sets.items()}
                 for name, rules in configurations().items()
                 for matcher in [HurtfulMatcher(entries, spelling_rules=rules)]}
        print(f"\n### Level {level}: precision / recall per configuration\n")
        print("| configuration | " + " | ".join(sets) + " |\n| --- |" + " --- |" * len(sets))
        for name, by_set in flags.items():
            print(f"| {name} | " + " | ".join(precision_recall(sets[n], by_set[n]) for n in sets) + " |")
        print(f"\n### Level {level}: what each rule adds (flagged with it, not without it): hurtful + / neutral +\n")
        print("| rule | " + " | ".join(sets) + f" | precision of its flags on the hard negatives (kept if >= {KEEP_PRECISION}) |"
              "\n| --- |" + " --- |" * (len(sets) + 1))
        hard = "hard negatives"
        for rule in SPELLING_RULES:
            added = {n: [a and not b for a, b in zip(flags["all spelling rules"][n], flags[f"without {rule}"][n])]
                     for n in sets}
            counts = {n: (sum(f and s.hurtful for s, f in zip(sets[n], added[n])),
                          sum(f and not s.hurtful for s, f in zip(sets[n], added[n]))) for n in sets}
            true_pos, false_pos = counts[hard]
            verdict = ("no flag of its own" if not true_pos + false_pos
                       else f"{ratio(true_pos, true_pos + false_pos)}, "
                            f"{'kept' if true_pos / (true_pos + false_pos) >= KEEP_PRECISION else 'BELOW'}")
            print(f"| {rule} | " + " | ".join(f"+{t} / +{f}" for t, f in counts.values()) + f" | {verdict} |")
        for name in (n for n in CLASS_SETS if n in sets):
            print(f"\n### Level {level}: {name} per class\n")
            print("| class | hurtful found, all spelling rules | neutral flagged, all spelling rules "
                  "| hurtful found, lemma keys only | neutral flagged, lemma keys only |\n| --- | --- | --- | --- | --- |")
            for kind in dict.fromkeys(s.kind for s in sets[name]):
                cells = [_share(flags[c][name], [s.kind == kind and s.hurtful is hurtful for s in sets[name]])
                         for c in ("all spelling rules", "lemma keys only") for hurtful in (True, False)]
                print(f"| {kind} | " + " | ".join(cells) + " |")


def _share(flagged: list[bool], among: list[bool]) -> str:
    """``flagged/total`` over the sentences marked in ``among``; ``-`` where there are none."""
    total = sum(among)
    return f"{sum(f and a for f, a in zip(flagged, among))}/{total}" if total else "-"


def report_level(lexicon: Lexicon, level: str, sentences: list[Sentence], *, errors: bool,
                 spelling_rules: bool) -> None:
    entries = lexicon.at_level(level).entries
    matcher = HurtfulMatcher(entries, spelling_rules=SPELLING_RULES if spelling_rules else ())
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
            words = ", ".join(f"{m.surface}={m.lemma}/{m.category} <{m.rule}>" for m in matches) or "-"
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
        matcher = HurtfulMatcher(entries, spelling_rules=SPELLING_RULES if spelling_rules else ())
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
    parser.add_argument("--ablation", action="store_true",
                        help="only the Markdown tables of each spelling rule's precision and recall on every set")
    parser.add_argument("--toxicity", type=Path,
                        help="with --ablation: the web comments of japanese-toxic-dataset's data/subset.csv as one more set")
    args = parser.parse_args()
    lexicon = load_lexicon(args.lexicon) if args.lexicon else load_builtin_lexicon()
    if args.speed:
        report_speed(lexicon, [s for path in SENTENCE_SETS.values() for s in read_sentences(path)])
        return
    if args.ablation:
        sets = {name: read_sentences(path) for name, path in SENTENCE_SETS.items()}
        if args.toxicity:
            sets["web comments"] = read_web_comments(args.toxicity)
        report_ablation(lexicon, sets)
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
