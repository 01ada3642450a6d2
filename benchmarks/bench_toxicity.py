"""Flag rates of the hurtful-word matcher and the sentiment AUC on a public Japanese toxicity set, read from a path.

The project's own labelled sentences are written by the team; this script checks
the matcher against comments people wrote on the web.  The data set is never
committed: the user downloads it and gives its path, as with ``--lexicon`` for HurtLex.

    python benchmarks/bench_toxicity.py --toxicity PATH/subset.csv [--errors]

Format read: the inspection-ai japanese-toxic-dataset (Apache-2.0,
https://github.com/inspection-ai/japanese-toxic-dataset, ``data/subset.csv``): one
comment a row with the vote counts ``Not Toxic, Hard to Say, Toxic, Very Toxic``
and ``annotation_num``.  A comment is *toxic* when more of its annotators voted Toxic or
Very Toxic than Not Toxic (49 comments), *non-toxic* when more than
half voted Not Toxic (280); the rest are left out.  Reported per lexicon level: the share of toxic and of
non-toxic comments in which the matcher finds an entry, with 95% Wilson intervals, and
the ROC AUC of the offline sentiment scorer for non-toxic above toxic, with a 95%
bootstrap interval over comments.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

from fairness_core.evaluations.honest.lexicon import LEXICON_LEVELS, load_builtin_lexicon
from fairness_core.evaluations.honest.matching import SPELLING_RULES, HurtfulMatcher
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.statistics import wilson_interval

VOTE_COLUMNS = ("Not Toxic", "Toxic", "Very Toxic", "annotation_num", "text")
BOOTSTRAP_RESAMPLES = 2000


def read_toxicity(path: Path) -> tuple[list[str], list[str]]:
    """(toxic, non-toxic) comments of an inspection-ai style CSV, by annotator majority."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in VOTE_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise SystemExit(f"The --toxicity file {str(path)!r} must have the columns {list(VOTE_COLUMNS)}. "
                             f"Got {reader.fieldnames} instead (missing {missing}).")
        toxic, clean = [], []
        for row in reader:
            votes = int(row["annotation_num"])
            if int(row["Toxic"]) + int(row["Very Toxic"]) > int(row["Not Toxic"]):
                toxic.append(row["text"])
            elif 2 * int(row["Not Toxic"]) > votes:
                clean.append(row["text"])
    return toxic, clean


def share(hits: int, total: int) -> str:
    low, high = wilson_interval(hits, total)
    return f"{hits / total:.3f} ({hits}/{total}, 95% CI {low:.3f}-{high:.3f})"


def roc_auc(positive: list[float], negative: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toxicity", type=Path, required=True, help="data/subset.csv of japanese-toxic-dataset")
    parser.add_argument("--errors", action="store_true", help="print the flagged non-toxic and missed toxic comments")
    args = parser.parse_args()
    toxic, clean = read_toxicity(args.toxicity)
    print(f"{args.toxicity}: {len(toxic)} toxic, {len(clean)} non-toxic comments (annotator majority)")
    lexicon = load_builtin_lexicon()
    for level in LEXICON_LEVELS:
        for spelling_rules in (False, True):
            matcher = HurtfulMatcher(lexicon.at_level(level).entries,
                                     spelling_rules=SPELLING_RULES if spelling_rules else ())
            toxic_hits = [matcher.find(t) for t in toxic]
            clean_hits = [matcher.find(t) for t in clean]
            print(f"level {level}, {'with spelling rules' if spelling_rules else 'lemma keys only'}: flags toxic "
                  f"{share(sum(map(bool, toxic_hits)), len(toxic))}; non-toxic "
                  f"{share(sum(map(bool, clean_hits)), len(clean))}")
            if args.errors and spelling_rules:
                for text, found in zip(clean, clean_hits):
                    if found:
                        print(f"  FALSE HIT {text}  ({', '.join(f'{m.surface}={m.lemma} <{m.rule}>' for m in found)})")
                for text, found in zip(toxic, toxic_hits):
                    if not found:
                        print(f"  MISS      {text}")
    scorer = LexiconScorer.builtin()
    toxic_scores, clean_scores = scorer.score(toxic), scorer.score(clean)
    rng = random.Random(0)
    resampled = sorted(roc_auc(rng.choices(clean_scores, k=len(clean_scores)), rng.choices(toxic_scores, k=len(toxic)))
                       for _ in range(BOOTSTRAP_RESAMPLES))
    neutral = sum(s == 0.5 for s in toxic_scores + clean_scores)
    print(f"sentiment {scorer.description}: ROC AUC non-toxic above toxic {roc_auc(clean_scores, toxic_scores):.3f} "
          f"(95% bootstrap CI {resampled[int(0.025 * BOOTSTRAP_RESAMPLES)]:.3f}-"
          f"{resampled[int(0.975 * BOOTSTRAP_RESAMPLES)]:.3f}); scored exactly 0.5: "
          f"{share(neutral, len(toxic) + len(clean))}")


if __name__ == "__main__":
    main()
