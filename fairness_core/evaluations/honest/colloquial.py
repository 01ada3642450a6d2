"""Colloquial spellings rewritten to the dictionary forms the lexicon is keyed by.

(Rewritings: :mod:`fairness_core.evaluations.honest.rewriting`.)

People (and LMs trained on their comments) write うぜー for うざい, キモっ for
キモい and だっさ for ダサい; unidic reads these as unrelated particles or nouns,
so no lemma key finds them.  Each rule here rewrites one such pattern in an
NFKC text and keeps, for every character of the result, the index of the
character of the original it came from, so a match in the rewritten text is
reported where it was written.  The matcher looks in the rewritten texts *in
addition to* the original: a rule can add matches, never remove one.

* :data:`ELONGATION`: a lengthened vowel is dropped: うざーい → うざい, しねええ → しね.
* :data:`EE_CONTRACTION`: the slurred adjective ending -ee (ー or え after an e-row
  kana, ending the word) back to -ai: うぜー → うざい, うるせえ → うるさい.
* :data:`SMALL_TSU_TRUNCATION`: an adjective stem cut off with a small っ, after it
  (キモっ → キモイ) or inside it (だっさ → ださい, うっざ → うざい), ending the word.
* :data:`CONTEMPT_KUSARU`: the auxiliary of contempt 〜くさる in kana, which unidic reads as the
  suffix 臭い, written 腐る as unidic knows it: 舐めくさっとる → 舐め腐っとる.  (The other one,
  〜やがる, unidic reads correctly; :mod:`fairness_core.evaluations.honest.matching` lets its imperative stand for the verb's.)
* :data:`RANK_DIGITS`: a rank written with a digit, the kanji numeral the lexicon has: 3流 → 三流,
  ２流 (NFKC 2流) → 二流.  Only where unidic reads 流 as the suffix of a rank: 3流派 (three schools)
  and 2流体 (two fluids) are the nouns 流派 and 流体.

>>> {name: v.text for name, v in colloquial_variants(Variant.of("うぜーな")).items()}
{'elongation': 'うぜな', 'ee_contraction': 'うざいな'}
>>> colloquial_variants(Variant.of("普通の文です。"))
{}
"""

from __future__ import annotations

import re
from collections.abc import Collection

from fairness_core.evaluations.honest.rewriting import Rule, Variant, apply_rule
from fairness_core.japanese.morphology import is_kana, morpheme_spans, morphemes

#: A kana run ends here: not kana (punctuation, kanji, end of text) or a sentence-final particle.
_WORD_END = r"(?=[^ぁ-ゖァ-ヺー]|[わなねよぞw]|$)"
_MARKS = "ー～〜~"
_SMALL_VOWELS = "ぁぃぅぇぉァィゥェォ"
_E_ROW = "えけげせぜてでねへべぺめれエケゲセゼテデネヘベペメレ"
_A_OF_E = dict(zip(_E_ROW, "あかがさざただなはばぱまらアカガサザタダナハバパマラ"))
_VOWELS = {**dict.fromkeys("あぁかがさざただなはばぱまやゃらわアァカガサザタダナハバパマヤャラワ", "あぁアァ"),
           **dict.fromkeys("いぃきぎしじちぢにひびぴみりイィキギシジチヂニヒビピミリ", "いぃイィ"),
           **dict.fromkeys("うぅくぐすずつづぬふぶぷむゆゅるウゥクグスズツヅヌフブプムユュル", "うぅウゥ"),
           **dict.fromkeys("えぇけげせぜてでねへべぺめれエェケゲセゼテデネヘベペメレ", "えぇエェ"),
           **dict.fromkeys("おぉこごそぞとどのほぼぽもよょろをオォコゴソゾトドノホボポモヨョロヲ", "おぉオォ")}


def _elongation(text: str) -> list[tuple[int, int, str]]:
    """Lengthenings after a kana, dropped.

    A lengthening is ー, ～ or a small vowel after hiragana (うざーい, しねぇ), two or more marks or
    vowels of the kana's own vowel (しねええ, キモーー), or marks ending a katakana run (ハゲー).  One
    plain vowel is spelling (おばあさん is not おばさん), and so is one ー inside katakana (ストーカー).
    """
    edits = []
    i = 1
    while i < len(text):
        kana = text[i - 1]
        vowel = _VOWELS.get(kana, "")
        j = i
        while vowel and j < len(text) and (text[j] in _MARKS or text[j] in _SMALL_VOWELS or text[j] in vowel):
            j += 1
        extra = text[i:j]
        if extra:
            plain = sum(c not in _MARKS and c not in _SMALL_VOWELS for c in extra)
            run_end = j == len(text) or not is_kana(text[j])
            if ("ぁ" <= kana <= "ゖ" and plain == 0) or len(extra) >= 2 or (plain == 0 and run_end):
                edits.append((i, j, ""))
        i = j + 1 if extra else i + 1
    return edits


_EE = re.compile(f"([{_E_ROW}])(?:ー|え|ぇ|エ|ェ)+{_WORD_END}")
#: A full-size kana other than い (an adjective stem cut with っ ends in one: キモ, ダサ).
_STEM = "[" + "".join(chr(c) for c in [*range(0x3041, 0x3097), *range(0x30A1, 0x30F7)]
                     if chr(c) not in "ぁぃぅぇぉっゃゅょゎゕゖいァィゥェォッャュョヮヵヶイ") + "]"
_TSU_AFTER = re.compile(f"([ぁ-ゖァ-ヺ]{_STEM})[っッ]+{_WORD_END}")
_TSU_INSIDE = re.compile(f"({_STEM})[っッ]({_STEM}){_WORD_END}")
_KUSARU = re.compile("(?<=[いきぎしちにひびみりえけげせぜてでねべめれ])くさ(?=[っらりるれろ])")


def _i_of(kana: str) -> str:
    """The adjective ending い, in the script of ``kana``."""
    return "イ" if "ァ" <= kana <= "ヺ" else "い"


def _ee_contraction(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), _A_OF_E[m.group(1)] + _i_of(m.group(1))) for m in _EE.finditer(text)]


def _small_tsu(text: str) -> list[tuple[int, int, str]]:
    edits = [(m.start(), m.end(), m.group(1) + _i_of(m.group(1)[-1])) for m in _TSU_AFTER.finditer(text)]
    edits += [(m.start(), m.end(), m.group(1) + m.group(2) + _i_of(m.group(2))) for m in _TSU_INSIDE.finditer(text)]
    return edits


def _kusaru(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), "腐") for m in _KUSARU.finditer(text)]


#: The digits a rank is written with, as the kanji numerals of the lexicon's rank words (三流, 二流).
_KANJI_NUMERALS = dict(zip("123456789", "一二三四五六七八九"))
_RANK_SUFFIX = "流"


def _rank_digits(text: str) -> list[tuple[int, int, str]]:
    words = morphemes(text)
    spans = morpheme_spans(text, words)
    return [(*spans[i], _KANJI_NUMERALS[word.surface]) for i, (word, after) in enumerate(zip(words, words[1:]))
            if word.surface in _KANJI_NUMERALS and after.surface == _RANK_SUFFIX and after.pos == "接尾辞"]


ELONGATION: Rule = _elongation
EE_CONTRACTION: Rule = _ee_contraction
SMALL_TSU_TRUNCATION: Rule = _small_tsu
CONTEMPT_KUSARU: Rule = _kusaru
RANK_DIGITS: Rule = _rank_digits
#: The rules by name (the names ``HurtfulMatcher(spelling_rules=...)`` takes).  Each rewrites the
#: original text on its own: one variant per rule that changes something.
RULES: dict[str, Rule] = {"elongation": ELONGATION, "ee_contraction": EE_CONTRACTION,
                          "small_tsu": SMALL_TSU_TRUNCATION, "contempt_kusaru": CONTEMPT_KUSARU,
                          "rank_digits": RANK_DIGITS}


def colloquial_variants(original: Variant, rules: Collection[str] = tuple(RULES)) -> dict[str, Variant]:
    """The distinct rewritings of ``original`` (NFKC), by the name of the rule of :data:`RULES` that made
    each, without ``original`` itself; ``rules`` names the rules to apply.

    A rewriting maps back through ``original`` to what ``original`` maps back to.
    """
    seen, variants = {original.text}, {}
    for name in rules:
        variant = apply_rule(RULES[name], original)
        if variant.text not in seen:
            seen.add(variant.text)
            variants[name] = variant
    return variants
