"""The offline lexicon sentiment scorer on labelled sentences: neutral share, accuracy, ROC AUC.

* neutral share: the share of positive and negative sentences scored exactly 0.5
  (the scorer found no polarity in them);
* accuracy: a score above 0.5 reads positive, below negative, 0.5 neutral, over all sentences;
  polar accuracy: the same over the positive and negative sentences only;
* ROC AUC: how well the score ranks positive above negative sentences (ties count half).

The data set's ``split`` column was fixed before tuning; the lexicon was tuned on
``tune`` only, so the ``test`` figures (the default) are the held-out result.  A second set,
``sentiment_scope_ja.tsv``, tests one scope rule a sentence (a polar word inside a
longer word, negation scope, loss verbs, idioms): it was labelled before the rules were written,
and its accuracy is shown per rule.

    python benchmarks/bench_sentiment.py [--split test|tune|all] [--errors]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from fairness_core.evaluations.sentiment.scorers import LexiconScorer

DATA = Path(__file__).resolve().parent / "data"
SENTENCES = DATA / "sentiment_sentences_ja.tsv"
SCOPE_SENTENCES = DATA / "sentiment_scope_ja.tsv"


def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_rows(split: str) -> list[dict[str, str]]:
    return [row for row in read_tsv(SENTENCES) if split == "all" or row["split"] == split]


def predicted_label(score: float) -> str:
    return "positive" if score > 0.5 else "negative" if score < 0.5 else "neutral"


def roc_auc(positive: list[float], negative: list[float]) -> float:
    """P(score of a random positive > score of a random negative), ties counting half."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["test", "tune", "all"], default="test")
    parser.add_argument("--errors", action="store_true", help="print every sentence read wrongly")
    args = parser.parse_args()
    rows = read_rows(args.split)
    scorer = LexiconScorer.builtin()
    scores = scorer.score([row["sentence"] for row in rows])
    polar = [(row, score) for row, score in zip(rows, scores) if row["label"] != "neutral"]
    correct = sum(predicted_label(score) == row["label"] for row, score in zip(rows, scores))
    polar_correct = sum(predicted_label(score) == row["label"] for row, score in polar)
    neutral = sum(score == 0.5 for _, score in polar)
    auc = roc_auc([s for row, s in polar if row["label"] == "positive"],
                  [s for row, s in polar if row["label"] == "negative"])
    print(f"{scorer.description}; split {args.split}: {len(rows)} sentences ({len(polar)} positive or negative)")
    print(f"neutral share on non-neutral sentences {neutral / len(polar):.3f} ({neutral}/{len(polar)})")
    print(f"accuracy {correct / len(rows):.3f} ({correct}/{len(rows)}); "
          f"polar accuracy {polar_correct / len(polar):.3f} ({polar_correct}/{len(polar)})")
    print(f"ROC AUC positive vs negative {auc:.3f}")
    if args.errors:
        for row, score in zip(rows, scores):
            if predicted_label(score) != row["label"]:
                print(f"  {row['label']:<9}{score:.2f}  {row['sentence']}")
    report_scope(scorer, errors=args.errors)


def report_scope(scorer: LexiconScorer, *, errors: bool) -> None:
    rows = read_tsv(SCOPE_SENTENCES)
    scores = scorer.score([row["sentence"] for row in rows])
    print(f"\nscope rules ({SCOPE_SENTENCES.name}, {len(rows)} sentences): accuracy per rule")
    for rule in dict.fromkeys(row["rule"] for row in rows):
        pairs = [(row, s) for row, s in zip(rows, scores) if row["rule"] == rule]
        correct = sum(predicted_label(s) == row["label"] for row, s in pairs)
        print(f"  {rule:<10}{correct / len(pairs):.3f} ({correct}/{len(pairs)})")
        if errors:
            for row, s in pairs:
                if predicted_label(s) != row["label"]:
                    print(f"      {row['label']:<9}{s:.2f}  {row['sentence']}")


if __name__ == "__main__":
    main()
