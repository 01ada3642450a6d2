"""Sentiment scorers: texts in, positivity scores in [0, 1] out, batched.

* :class:`ClassifierScorer` wraps any Hugging Face text-classification model
  (default: Huang et al.'s choice for Japanese, ``daigo/bert-base-japanese-sentiment``).
  Labels are mapped to positivity by *name*, never by index: fine-tunes of the
  same base disagree on label order.  The score is the expected positivity
  ``Σ p(label) · positivity(label)``.
* :class:`LexiconScorer` needs no download: the project's polarity lexicon
  matched on unidic lemmas, with negation (〜ない, 〜ず, 〜ません) and negating
  prefixes (不誠実, 無責任) flipping the polarity of a word, intensifiers
  (とても, 本当に) doubling and downtoners (少し) halving its weight, and two
  evaluative forms that carry polarity without a polar word: 〜すぎる after a
  neutral word (高すぎる, too expensive) and the benefactive 〜てくれる/〜てもらう
  (手伝ってくれた; 手伝ってくれない is its negation).  A negation belongs to the
  predicate it attaches to (クレームが絶えない leaves クレーム negative), verbs of
  loss invert their object (信頼を失った), a polar word inside a longer word does
  not count (楽 in 吹奏楽), and idioms are entries of their own, matched before
  their parts (いい加減).

>>> scorer = LexiconScorer.builtin()
>>> scorer.score(["とても楽しかった。", "全然楽しくない。", "八時に駅に着いた。", "待ち時間が長すぎる。"])
[1.0, 0.0, 0.5, 0.0]
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol

from fairness_core.config.locations import MissingFolderError, first_line, resolve_location
from fairness_core.config.package_data import data_path
from fairness_core.errors import AuditUsageError
from fairness_core.japanese.lemma_index import LemmaSequenceIndex
from fairness_core.japanese.morphology import lemma_keys, morphemes, normalize

LEXICON_SCORER = "lexicon"
POLARITY_LEXICON = "polarity_lexicon_ja.tsv"

#: Label names (lower-cased, NFKC) and the positivity each stands for.
KNOWN_LABELS: dict[str, float] = {
    **dict.fromkeys(("positive", "pos", "ポジティブ", "肯定", "肯定的", "良い", "label_positive"), 1.0),
    **dict.fromkeys(("negative", "neg", "ネガティブ", "否定", "否定的", "悪い", "label_negative"), 0.0),
    **dict.fromkeys(("neutral", "neu", "ニュートラル", "中立", "中性", "label_neutral"), 0.5),
}
#: Morphemes whose lemma negates the predicate they follow (文句なし: the noun 無し).
NEGATION_KEYS = frozenset({"無い", "ない", "ず", "ぬ", "ん", "無し"})
#: How many content morphemes after a match may carry its negation ...
NEGATION_WINDOW = 3
#: ... not counting the copula and auxiliaries between them (好きではありません: 好き だ は 有る ます ず;
#: 褒められたものではない: 褒める られる た 物 だ は 無い).
NEGATION_TRANSPARENT = frozenset({"だ", "で", "は", "じゃ", "有る", "ます", "です", "も", "れる", "られる", "た", "物"})
#: A verb or adjective between a polar word and a negation takes the negation itself (クレームが絶えない,
#: バカには分からなかった) unless it is one of these: light verbs, existence and occurrence (心配はいらない,
#: 事故は起きなかった: there was none of it), and verbs of judging (楽しいとは思わない).
NEGATION_PASSES = frozenset({"為る", "出来る", "成る", "居る", "要る", "起きる", "起こる", "思う", "言える", "見える"})
#: Verbs of loss and absence invert the polarity of their object or subject (信頼を失った, 不安がなくなった) ...
LOSS_VERBS = frozenset({"失う", "無くす", "失くす", "欠く", "欠ける", "消える", "無くなる", "絶える", "途絶える",
                        "尽きる", "奪う"})
#: ... when it is marked by one of these particles, right before the verb.
LOSS_PARTICLES = frozenset({"を", "が", "に", "も", "は"})
#: A polar word that begins with a suffix is part of a longer word (楽 in 吹奏楽, unidic 吹奏 + 楽).
INSIDE_WORD_POS = "接尾辞"
#: A negation never reaches back across a clause boundary (うるさくて眠れません: うるさい stays negative;
#: 心配で眠れなかった: 心配 too), nor across しか (不満しかない: nothing but dissatisfaction) ...
NEGATION_BARRIERS = frozenset({"て", "で", "しか", "、", "。", "!", "?"})
#: ... except で before は or も, the copula of 失敗ではない / 嫌いでもない.
COPULA_TOPIC = frozenset({"は", "も"})
#: Prefixes (unidic 接頭辞) that negate the polar word they attach to: 不誠実, 無責任, 非常識.
NEGATING_PREFIXES = frozenset({"不", "無", "非", "未"})
#: Lemma keys of adverbs that weigh the polar word right after them (at most one morpheme between,
#: as に in 本当に): とても, 本当に, すごく, かなり ... ×2; 少し, ちょっと, やや ×0.5.
INTENSITY: dict[str, float] = {
    **dict.fromkeys(("迚も", "本当", "凄い", "可成", "大変", "目茶", "超", "非常", "極めて", "実", "最も", "一番"), 2.0),
    **dict.fromkeys(("少し", "一寸", "やや", "多少"), 0.5),
}
#: Japanese puts the main evaluation last (楽しみにしていた旅行が中止になり、残念だった): the last polar
#: word of a text weighs this much more.
FINAL_WEIGHT = 2.0
#: 過ぎる after a word that is not polar itself says "too much": 高すぎる, 長すぎる.
EXCESS = "過ぎる"
#: Parts of speech 過ぎる attaches to.
EXCESS_STEMS = frozenset({"形容詞", "動詞", "形状詞"})
#: Benefactive auxiliaries after て: someone did the speaker a favour (教えてくれた, 助けてもらった).
BENEFACTIVES = frozenset({"呉れる", "貰う", "下さる", "頂く"})


class ScorerError(AuditUsageError):
    """The sentiment scorer cannot be set up; the message says why and what to do."""


class SentimentScorer(Protocol):
    description: str

    def score(self, texts: Sequence[str]) -> list[float]:
        """Positivity of each text in [0, 1]; 0.5 is neutral."""
        ...


class LexiconScorer:
    """Polarity-lexicon scorer: ``0.5 + 0.5 · (pos − neg) / (pos + neg)``, 0.5 without matches.

    ``pos`` and ``neg`` are sums of weights: 1, times :data:`INTENSITY` after an
    intensifier or downtoner, times :data:`FINAL_WEIGHT` for the last polar word.
    """

    def __init__(self, polarities: Mapping[str, int], *, source: str):
        if not polarities:
            raise ScorerError(f"The polarity lexicon {source} has no entries.")
        self._index = LemmaSequenceIndex((lemma_keys(lemma), p) for lemma, p in polarities.items())
        self.description = f"lexicon ({source}, {len(polarities)} entries)"

    @classmethod
    @functools.cache
    def builtin(cls) -> LexiconScorer:
        with resources.as_file(data_path("fairness_core.evaluations.sentiment", POLARITY_LEXICON)) as path:
            return cls(read_polarity_lexicon(path), source=f"builtin:{POLARITY_LEXICON}")

    def polarity_counts(self, text: str) -> tuple[float, float]:
        """(positive, negative) weight of the matches in ``text`` after negation.

        >>> LexiconScorer.builtin().polarity_counts("楽しいが、少し悲しい。")  # 少し ×0.5, last ×2
        (1.0, 1.0)
        """
        words = morphemes(text)
        positive = negative = 0.0
        spans = [span for span in sorted(_polar_spans(words, self._index.find(words)))
                 if words[span[0]].pos != INSIDE_WORD_POS]
        losses = {start: _loss_verb(words, end) for start, end, _ in spans}
        consumed = {verb for verb in losses.values() if verb is not None}
        spans = [span for span in spans if span[0] not in consumed]
        for rank, (start, end, polarity) in enumerate(spans, start=1):
            verb = losses[start]
            if verb is not None:  # the loss verb inverts the word, and a negation of the verb inverts it back
                polarity = -polarity
                end = verb + 1
            if _negated(words[end:]):
                polarity = -polarity
            if start > 0 and words[start - 1].pos == "接頭辞" and words[start - 1].key in NEGATING_PREFIXES:
                polarity = -polarity
            weight = next((INTENSITY[w.key] for w in words[max(0, start - 2):start] if w.key in INTENSITY), 1.0)
            weight *= FINAL_WEIGHT if rank == len(spans) else 1.0
            if polarity > 0:
                positive += weight
            else:
                negative += weight
        return positive, negative

    def score(self, texts: Sequence[str]) -> list[float]:
        scores = []
        for text in texts:
            positive, negative = self.polarity_counts(text)
            total = positive + negative
            scores.append(0.5 if total == 0 else 0.5 + 0.5 * (positive - negative) / total)
        return scores


def _polar_spans(words, matches: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The lexicon ``matches`` plus the evaluative forms: 〜すぎる after a neutral word, benefactive 〜てくれる."""
    covered = {i for start, end, _ in matches for i in range(start, end)}
    forms = [(i, i + 1, -1) for i in range(1, len(words))
             if words[i].key == EXCESS and words[i - 1].pos in EXCESS_STEMS and i - 1 not in covered]
    forms += [(i, i + 1, 1) for i in range(1, len(words))
              if words[i].key in BENEFACTIVES and words[i - 1].key == "て" and i not in covered]
    return matches + forms


def _loss_verb(words, end: int) -> int | None:
    """The index of a loss verb right after ``words[:end]`` and its particle (信頼 を 失う), or ``None``."""
    if end + 1 < len(words) and words[end].key in LOSS_PARTICLES and words[end + 1].key in LOSS_VERBS:
        return end + 1
    return None


def _negated(following) -> bool:
    """Whether a negation follows within :data:`NEGATION_WINDOW` content morphemes, with no predicate
    of its own between (one not in :data:`NEGATION_PASSES`)."""
    counted = 0
    for word, after in zip(following, [*following[1:], None]):
        if word.key in NEGATION_KEYS:
            return True
        if word.key in NEGATION_BARRIERS and not (word.key == "で" and after is not None and after.key in COPULA_TOPIC):
            return False
        if word.pos in ("動詞", "形容詞") and word.key not in NEGATION_PASSES | NEGATION_TRANSPARENT:
            return False
        if word.key not in NEGATION_TRANSPARENT:
            counted += 1
            if counted == NEGATION_WINDOW:
                return False
    return False


def read_polarity_lexicon(path: str | Path) -> dict[str, int]:
    """``lemma → ±1`` from a TSV with the columns lemma, pos, polarity (``#`` comments)."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return {normalize(row["lemma"]): int(row["polarity"])
            for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)}


class ClassifierScorer:
    """A ``transformers`` sequence classifier whose labels are mapped to positivity by name."""

    def __init__(self, model, tokenizer, *, name: str, label_positivity: Mapping[str, float] | None = None,
                 batch_size: int = 32):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        import torch

        labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        self.positivity = torch.tensor(positivity_of_labels(labels, label_positivity, model_name=name))
        self.description = f"classifier {name} (labels {dict(zip(labels, self.positivity.tolist()))})"

    @classmethod
    def from_pretrained(cls, name_or_path: str, *, label_positivity: Mapping[str, float] | None = None,
                        device: str = "cpu") -> ClassifierScorer:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            location = resolve_location(name_or_path)
            tokenizer = AutoTokenizer.from_pretrained(location)
            model = AutoModelForSequenceClassification.from_pretrained(location)
        except MissingFolderError:
            raise ScorerError(cannot_load(name_or_path, "no such directory")) from None
        except (OSError, ValueError, ImportError) as err:
            raise ScorerError(cannot_load(name_or_path, first_line(err))) from err
        return cls(model.to(device), tokenizer, name=name_or_path, label_positivity=label_positivity)

    def score(self, texts: Sequence[str]) -> list[float]:
        import torch

        scores: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = [normalize(t) for t in texts[start:start + self.batch_size]]
                inputs = self.tokenizer(batch, padding=True, truncation=True, max_length=128, return_tensors="pt")
                logits = self.model(**inputs.to(self.model.device)).logits.float()
                scores.extend((logits.softmax(-1).cpu() @ self.positivity).tolist())
        return scores


def cannot_load(name_or_path: str, reason: str) -> str:
    """The one message for a ``--sentiment`` classifier that cannot be had, with the offline way out."""
    return (f"--sentiment={name_or_path}: the sentiment classifier could not be loaded ({reason}). "
            f"Without hub access or a local copy, use the offline scorer: --sentiment={LEXICON_SCORER}")


def positivity_of_labels(labels: Sequence[str], configured: Mapping[str, float] | None, *,
                         model_name: str) -> list[float]:
    """Positivity of each label: from ``configured`` when given, else recognised by name.

    >>> positivity_of_labels(["ネガティブ", "ポジティブ"], None, model_name="m")
    [0.0, 1.0]
    """
    if configured:
        missing = [label for label in labels if label not in configured]
        if missing:
            raise ScorerError(f"sentiment.label_positivity in thresholds.yaml lacks the labels {missing} "
                              f"of {model_name} (its labels: {list(labels)}).")
        return [float(configured[label]) for label in labels]
    unknown = [label for label in labels if normalize(label).lower() not in KNOWN_LABELS]
    if unknown:
        raise ScorerError(
            f"Cannot tell what the labels {unknown} of the sentiment model {model_name} mean "
            f"(its labels: {list(labels)}). Map each label to a positivity in [0, 1] under "
            f"sentiment.label_positivity in thresholds.yaml, e.g. {{{labels[0]!r}: 0.0, ...}}."
        )
    values = [KNOWN_LABELS[normalize(label).lower()] for label in labels]
    if not (0.0 in values and 1.0 in values):
        raise ScorerError(f"The labels {list(labels)} of {model_name} need both a positive and a negative label.")
    return values


def load_scorer(spec: str, *, label_positivity: Mapping[str, float] | None = None) -> SentimentScorer:
    """``lexicon`` → the offline scorer; anything else is a hub id or path of a classifier."""
    if spec == LEXICON_SCORER:
        return LexiconScorer.builtin()
    return ClassifierScorer.from_pretrained(spec, label_positivity=label_positivity)

