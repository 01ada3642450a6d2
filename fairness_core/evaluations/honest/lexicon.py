"""Hurtful-word lexicons: the project's own Japanese lexicon and loaders for the user's.

A lexicon is a tuple of :class:`LexiconEntry`, each carrying the unidic lemma
key sequences that :mod:`fairness_core.evaluations.honest.matching` looks for.  unidic often
analyses a word differently inside a sentence than on its own (クソアマ is
糞+アマ alone but 糞+尼 before 。; 出来損ない is 出来る+損なう alone but
出来+損ない sentence-final), so every entry is analysed in the
:data:`CARRIER_FRAMES` and keeps each distinct analysis as an alternative key.
An entry that does not line up with morpheme boundaries in some frame cannot
be found there by any key; :attr:`Lexicon.self_check_failures` lists them.
Three sources:

* the built-in ``fairness_core/evaluations/honest/data/hurtful_lexicon_ja.tsv`` (HurtLex layout,
  written for this project);
* a HurtLex TSV given with ``--lexicon=PATH`` (id, pos, category, stereotype,
  lemma, level).  The public Japanese HurtLex is machine-translated and carries
  quirks that are repaired or skipped here, each skip counted by reason;
* a plain list, one word a line (``#`` starts a comment).

As in the reference HONEST implementation only ``conservative`` entries count
unless the level is set to ``inclusive`` (which takes every entry).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from fairness_core.config.package_data import data_path
from fairness_core.errors import AuditUsageError
from fairness_core.japanese.morphology import FUNCTION_POS, lemma_keys, morpheme_spans, morphemes, normalize, to_hiragana

LexiconLevel = Literal["conservative", "inclusive"]
LEXICON_LEVELS: tuple[LexiconLevel, ...] = ("conservative", "inclusive")

#: HurtLex categories (Bassignana, Basile & Patti 2018) and what each holds.
HURTLEX_CATEGORIES: dict[str, str] = {
    "ps": "negative stereotypes, ethnic slurs",
    "rci": "locations and demonyms",
    "pa": "professions and occupations",
    "ddp": "physical disabilities and diversity",
    "ddf": "cognitive disabilities and diversity",
    "svp": "words related to the seven deadly sins",
    "cds": "derogatory words",
    "dmc": "moral and behavioral defects",
    "is": "social and economic disadvantage",
    "or": "plants",
    "an": "animals",
    "asm": "male genitalia",
    "asf": "female genitalia",
    "pr": "prostitution",
    "om": "homosexuality",
    "qas": "potential negative connotations",
    "re": "felonies, crime and immoral behavior",
}
#: Category given to entries of a plain word list, which has none.
UNCATEGORISED = "unlisted"

HURTLEX_COLUMNS = ("id", "pos", "category", "stereotype", "lemma", "level")
#: An optional extra column of the project's files: a constraint on the matched form.
FORM_COLUMN = "form"
#: An optional column of the project's files: ``yes`` = a kana run with the entry's reading matches it.
READING_COLUMN = "reading"
#: An optional column of the project's files: another word that the entry's kana spelling also is (お釜 for おかま).
HOMOGRAPH_COLUMN = "homograph"
#: The HurtLex part-of-speech column, as unidic names the parts of speech: a match of a noun entry on a
#: word that unidic reads as a verb (剥げる for ハゲ, 戯ける for たわけ) is another word.
PARTS_OF_SPEECH: dict[str, str] = {"n": "名詞", "v": "動詞", "a": "形容詞", "av": "副詞"}
#: Form constraints an entry may declare, and what each requires of a match.
FORM_CONSTRAINTS: dict[str, str] = {
    "imperative": "the last matched verb is imperative (命令形, or the bare e-form not followed by ば/ど)",
    "surface": "the matched text is the entry as written (after NFKC), not another spelling of its lemma",
    "prefix": "the entry is used as a prefix: unidic tags it 接頭辞 (クソ上司), or it is a noun right before "
              "another noun (糞ラップ)",
}
BUILTIN_LEXICON = "hurtful_lexicon_ja.tsv"
MATCH_EXCEPTIONS = "hurtful_exceptions_ja.tsv"
#: Sentences the entry ``{w}`` is analysed in: on its own, before particles and the copula, after a
#: pronoun and topic, inside quotes, after a prefix-like noun, and sentence-final.  (A true prefix
#: such as ド or 超 fuses with the entry in unidic - ドチャンコロ is one unknown word - so no
#: morpheme matcher could split it; 自称 does not fuse.)
CARRIER_FRAMES: tuple[str, ...] = (
    "{w}", "{w}。", "{w}だ。", "あいつは{w}だ。", "{w}が来た。", "{w}を見た。",
    "「{w}」と言われた。", "{w}とか言う", "自称{w}", "まじで{w}だよ。",
)
#: Frames that only add keys: before 扱い and 呼ばわり unidic reads a noun as a verb (落ちこぼれ扱い:
#: 落ち零れる).  Only a one-morpheme analysis is kept (クソアマ扱い is misread as くそ+甘い+扱い), and an
#: entry that fuses with them (三国人扱い) is no self-check failure, only a key fewer.
KEY_FRAMES: tuple[str, ...] = ("{w}扱いされた。", "{w}呼ばわりされた。")

_SPACE_BETWEEN_CJK = re.compile(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])")
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_EDGE_PUNCTUATION = "、。,.・ 　"


class LexiconError(AuditUsageError):
    """A lexicon file that cannot be used; the message names the file and the fix."""


class LexiconSelfCheckWarning(UserWarning):
    """Entries of a lexicon that cannot match themselves in every carrier frame."""


@dataclass(frozen=True)
class LexiconEntry:
    """One hurtful word and the lemma sequences that find it in text.

    ``key`` is the analysis of the word on its own, ``alternatives`` the other
    analyses seen in the carrier frames; ``form`` names a :data:`FORM_CONSTRAINTS`
    entry or is ``None``.
    """

    lemma: str
    category: str
    level: LexiconLevel
    key: tuple[str, ...]
    alternatives: tuple[tuple[str, ...], ...] = ()
    form: str | None = None
    #: The hiragana reading a kana run must have to match this entry, or ``""`` (no reading match).
    reading: str = ""
    #: Whether the entry, as written, also matches as the first part of a longer noun (ハゲ親父).
    compound_head: bool = False
    #: Its part of speech as unidic names it (名詞 for the lexicon's ``n``), or ``""`` where the lexicon has none.
    pos: str = ""
    #: Another word that the entry spelled in kana also is (剥げ for はげ, お釜 for おかま), or ``""``.  Such a
    #: spelling counts at the default level only where it is said of a person; at the inclusive level the
    #: lexicon leaves it out (:meth:`Lexicon.at_level`) and every spelling counts.
    homograph: str = ""

    @property
    def keys(self) -> tuple[tuple[str, ...], ...]:
        return (self.key, *self.alternatives)


@dataclass(frozen=True)
class MatchExceptions:
    """What a hurtful match must not be part of (``hurtful_exceptions_ja.tsv``).

    ``compounds``: neutral words that contain an entry (女郎蜘蛛, a spider; アホウドリ, a bird).
    ``names``: entries that are also names in katakana (チョン, a Korean surname) and do not
    count before one of the ``name_suffixes`` (さん, 氏, 選手 ...).
    """

    compounds: tuple[LexiconEntry, ...] = ()
    names: frozenset[str] = frozenset()
    name_suffixes: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Lexicon:
    """Entries of one source, with the count of rows skipped per reason."""

    source: str
    entries: tuple[LexiconEntry, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    #: lemma → the carrier frames in which the entry does not line up with morpheme boundaries.
    self_check_failures: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def at_level(self, level: LexiconLevel) -> Lexicon:
        """The entries that count at ``level``; an empty result is an error.

        At the inclusive level an entry's kana spelling counts even where it is also another word: the
        entries are given without their ``homograph``.
        """
        if level not in LEXICON_LEVELS:
            raise LexiconError(
                f"The lexicon level must be one of {', '.join(LEXICON_LEVELS)}. Got {level!r} instead."
            )
        kept = tuple(e for e in self.entries if level == "inclusive" or e.level == "conservative")
        if level == "inclusive":
            kept = tuple(dataclasses.replace(e, homograph="") if e.homograph else e for e in kept)
        if not kept:
            raise LexiconError(
                f"The lexicon {self.source} has no {level!r} entries "
                f"({len(self.entries)} entries in all); choose another --lexicon-level or lexicon."
            )
        failures = {e.lemma: self.self_check_failures[e.lemma] for e in kept if e.lemma in self.self_check_failures}
        return Lexicon(self.source, kept, self.skipped, failures)

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(sorted({e.category for e in self.entries}))

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the entries (not the file path): equal lexicons compare equal wherever they live.

        A form constraint, a reading and a part of speech change what an entry matches, so they are
        part of the row (when set).
        """
        rows = sorted(f"{e.lemma}\t{e.category}\t{e.level}" + (f"\t{e.form}" if e.form else "")
                      + (f"\treading={e.reading}" if e.reading else "") + (f"\tpos={e.pos}" if e.pos else "")
                      + (f"\thomograph={e.homograph}" if e.homograph else "")
                      for e in self.entries)
        return hashlib.sha256("\n".join(rows).encode()).hexdigest()


#: The longest line a lexicon file may have: HurtLex rows are under 200 characters.
MAX_LINE_CHARS = 1000


def clean_lemma(raw: str) -> str | None:
    """Repair the quirks of machine-translated HurtLex lemmas; ``None`` when unusable.

    >>> clean_lemma("自 己 愛")
    '自己愛'
    >>> clean_lemma("盗み聴き+する")
    '盗み聴き'
    >>> clean_lemma("muggins") is None
    True
    """
    text = normalize(raw).strip()
    text = _SPACE_BETWEEN_CJK.sub("", text)
    text = text.removesuffix("+する").strip(_EDGE_PUNCTUATION)
    if not text or _LATIN_LETTER.search(text) or " " in text:
        return None
    return text


def derive_keys(lemma: str) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Every distinct analysis of ``lemma`` in the :data:`CARRIER_FRAMES` and :data:`KEY_FRAMES`, and the
    carrier frames where it has none.

    The first key is the word read on its own.  An analysis made only of particles and
    auxiliaries is dropped: it comes from unidic misreading the frame (in まじでたかりじゃん,
    たかり is read as たい, a key that would flag every 食べたい), not from the word.

    >>> derive_keys("クソアマ")
    ((('糞', 'アマ'), ('糞', '尼')), ())
    """
    keys: list[tuple[str, ...]] = []
    failed: list[str] = []
    word = normalize(lemma)
    for frame in CARRIER_FRAMES + KEY_FRAMES:
        before = normalize(frame.split("{w}")[0])
        text = normalize(frame.format(w=word))
        words = morphemes(text)
        spans = morpheme_spans(text, words)
        starts = [i for i, (start, _) in enumerate(spans) if start == len(before)]
        ends = [i for i, (_, end) in enumerate(spans) if end == len(before) + len(word)]
        if not starts or not ends:
            if frame in CARRIER_FRAMES:
                failed.append(frame)
            continue
        analysis = words[starts[0]:ends[0] + 1]
        if frame in KEY_FRAMES and len(analysis) > 1:
            continue
        key = tuple(w.key for w in analysis)
        if key not in keys and (not keys or any(w.pos not in FUNCTION_POS for w in analysis)):
            keys.append(key)
    return tuple(keys), tuple(failed)


#: The fewest characters of an entry that matches as the head of a compound: 犬 would flag 犬歯.
MIN_HEAD_CHARS = 2


def make_entry(lemma: str, category: str, level: LexiconLevel, *, form: str | None = None,
               by_reading: bool = False, pos: str = "", homograph: str = "",
               failures: dict[str, tuple[str, ...]]) -> LexiconEntry:
    """An entry with its keys from :func:`derive_keys`; frames it fails in are recorded in ``failures``.

    ``by_reading`` gives it its unidic reading (死ね → しね) for matching kana runs.  A
    conservative one-morpheme noun of at least :data:`MIN_HEAD_CHARS` characters is a
    compound head: inclusive words (ゴミ in ゴミ箱) are too often literal for that.  ``pos`` is a
    value of the lexicon's pos column (:data:`PARTS_OF_SPEECH`); another value is no part of speech.
    ``homograph`` names another word that the entry's kana spelling also is (:attr:`LexiconEntry.homograph`).
    """
    keys, failed = derive_keys(lemma)
    if failed:
        failures[lemma] = failed
    if not keys:
        keys = (lemma_keys(lemma),)
    alone = morphemes(normalize(lemma))
    reading = to_hiragana("".join(w.reading for w in alone)) if by_reading else ""
    head = (level == "conservative" and len(alone) == 1 and alone[0].pos == "名詞"
            and len(normalize(lemma)) >= MIN_HEAD_CHARS)
    return LexiconEntry(lemma, category, level, keys[0], keys[1:], form, reading, head, PARTS_OF_SPEECH.get(pos, ""),
                        normalize(homograph))


def load_lexicon(path: str | Path) -> Lexicon:
    """Read a HurtLex TSV (recognised by its header) or a one-word-a-line list."""
    path = Path(path)
    if path.is_dir():
        raise LexiconError(f"The lexicon file {str(path)!r} is a folder; give the path of a lexicon file in it.")
    if not path.is_file():
        raise LexiconError(f"The lexicon file {str(path)!r} does not exist or is not a file.")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as err:
        raise LexiconError(f"The lexicon file {str(path)!r} is not UTF-8 text: {err}.") from None
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:  # the tagger is never handed megabytes of one line
            raise LexiconError(f"The lexicon file {str(path)!r}: line {number} has {len(line):,} characters; a "
                               f"lexicon line is one word or short phrase (at most {MAX_LINE_CHARS} characters).")
    content = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    commas = sum("," in line and "\t" not in line for line in content)
    if content and commas * 2 >= len(content):
        raise LexiconError(f"The lexicon file {str(path)!r} looks comma-separated (CSV): {content[0][:80]!r}. The "
                           f"formats read are a HurtLex TSV (tab-separated, with the header "
                           f"{chr(9).join(HURTLEX_COLUMNS)!r}) and one word a line; save it with tabs.")
    if content and "\t" in content[0]:
        lexicon = _parse_hurtlex(content, source=str(path))
    else:
        lexicon = _parse_word_list(content, source=str(path))
    if lexicon.self_check_failures:
        examples = ", ".join(list(lexicon.self_check_failures)[:5])
        warnings.warn(LexiconSelfCheckWarning(
            f"{len(lexicon.self_check_failures)} of {len(lexicon.entries)} entries of the lexicon {str(path)!r} "
            f"do not line up with unidic morphemes in every carrier frame, so they are missed in such "
            f"contexts (e.g. {examples})."), stacklevel=2)
    if not lexicon.entries:
        raise LexiconError(
            f"The lexicon file {str(path)!r} has no usable entries "
            f"(skipped: {lexicon.skipped or 'nothing'}). Expected a HurtLex TSV with the header "
            f"{chr(9).join(HURTLEX_COLUMNS)!r} or one word a line."
        )
    return lexicon


@functools.cache
def load_builtin_lexicon() -> Lexicon:
    """The project's own Japanese lexicon (package data); cached, its keys take ~10 analyses per entry."""
    with resources.as_file(data_path("fairness_core.evaluations.honest", BUILTIN_LEXICON)) as path:
        lexicon = load_lexicon(path)
    return Lexicon(f"builtin:{BUILTIN_LEXICON}", lexicon.entries, lexicon.skipped, lexicon.self_check_failures)


#: Kinds of row in the match-exceptions file; see :class:`MatchExceptions`.
EXCEPTION_KINDS = ("compound", "name", "name_suffix")


@functools.cache
def builtin_match_exceptions() -> MatchExceptions:
    """The project's neutral compounds, names and name suffixes (package data)."""
    with resources.as_file(data_path("fairness_core.evaluations.honest", MATCH_EXCEPTIONS)) as path:
        return load_match_exceptions(path)


def load_match_exceptions(path: str | Path) -> MatchExceptions:
    """Read a TSV with the columns kind, text, note (``#`` comments); an unknown kind is an error."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    rows: dict[str, list[str]] = {kind: [] for kind in EXCEPTION_KINDS}
    for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE):
        kind, text = row["kind"].strip(), normalize(row["text"].strip())
        if kind not in rows:
            raise LexiconError(f"The match-exceptions file {str(path)!r}: the row {text!r} has the unknown kind "
                               f"{kind!r}; allowed: {', '.join(EXCEPTION_KINDS)}.")
        rows[kind].append(text)
    failures: dict[str, tuple[str, ...]] = {}
    compounds = tuple(make_entry(word, UNCATEGORISED, "conservative", failures=failures) for word in rows["compound"])
    suffixes = tuple(lemma_keys(suffix) for suffix in rows["name_suffix"])
    return MatchExceptions(compounds, frozenset(rows["name"]), suffixes)


def _parse_hurtlex(lines: list[str], *, source: str) -> Lexicon:
    reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = tuple(column.strip() for column in next(reader))
    missing = [c for c in ("category", "lemma", "level") if c not in header]
    failures: dict[str, tuple[str, ...]] = {}
    if missing:
        raise LexiconError(
            f"The lexicon file {source!r} looks tab-separated but its header {header!r} lacks "
            f"{missing}; a HurtLex TSV has the columns {HURTLEX_COLUMNS}."
        )
    skipped: Counter[str] = Counter()
    entries: dict[tuple[str, str], LexiconEntry] = {}
    for row in reader:
        record = dict(zip(header, (value.strip() for value in row)))
        category, level = record.get("category", ""), record.get("level", "")
        lemma = clean_lemma(record.get("lemma", ""))
        if category not in HURTLEX_CATEGORIES:
            skipped["unknown category"] += 1
        elif level not in LEXICON_LEVELS:
            skipped["unknown level"] += 1
        elif lemma is None:
            skipped["not Japanese (untranslated or empty)"] += 1
        elif (lemma, category) in entries:
            skipped["duplicate"] += 1
        else:
            form = _form_constraint(record.get(FORM_COLUMN, ""), lemma=lemma, source=source)
            by_reading = _reading_flag(record.get(READING_COLUMN, ""), lemma=lemma, source=source)
            entries[lemma, category] = make_entry(lemma, category, level, form=form, by_reading=by_reading,
                                                  pos=record.get("pos", ""), homograph=record.get(HOMOGRAPH_COLUMN, ""),
                                                  failures=failures)
    return Lexicon(source, tuple(entries.values()), dict(skipped), failures)


def _form_constraint(value: str, *, lemma: str, source: str) -> str | None:
    if not value:
        return None
    if value not in FORM_CONSTRAINTS:
        raise LexiconError(
            f"The lexicon file {source!r}: the entry {lemma!r} has the unknown form constraint {value!r}; "
            f"allowed: {', '.join(FORM_CONSTRAINTS)} (or empty)."
        )
    return value


def _reading_flag(value: str, *, lemma: str, source: str) -> bool:
    if value not in ("", "yes"):
        raise LexiconError(f"The lexicon file {source!r}: the reading column of the entry {lemma!r} must be "
                           f"'yes' or empty. Got {value!r} instead.")
    return value == "yes"


def _parse_word_list(lines: list[str], *, source: str) -> Lexicon:
    skipped: Counter[str] = Counter()
    entries: dict[str, LexiconEntry] = {}
    failures: dict[str, tuple[str, ...]] = {}
    for line in lines:
        lemma = clean_lemma(line)
        if lemma is None:
            skipped["not Japanese (untranslated or empty)"] += 1
        elif lemma in entries:
            skipped["duplicate"] += 1
        else:
            entries[lemma] = make_entry(lemma, UNCATEGORISED, "conservative", failures=failures)
    return Lexicon(source, tuple(entries.values()), dict(skipped), failures)
