"""Hurtful-word lexicons: the project's own Japanese lexicon and loaders for the user's.

A lexicon is a tuple of :class:`LexiconEntry`, each carrying the unidic lemma
key sequence that :mod:`fairness_core.matching` looks for.  Three sources:

* the built-in ``fairness_core/data/hurtful_lexicon_ja.tsv`` (HurtLex layout,
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
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from fairness_core.errors import AuditUsageError
from fairness_core.japanese import lemma_keys, normalize

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
BUILTIN_LEXICON = "hurtful_lexicon_ja.tsv"

_SPACE_BETWEEN_CJK = re.compile(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])")
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_EDGE_PUNCTUATION = "、。,.・ 　"


class LexiconError(AuditUsageError):
    """A lexicon file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class LexiconEntry:
    """One hurtful word and the lemma sequence that finds it in text."""

    lemma: str
    category: str
    level: LexiconLevel
    key: tuple[str, ...]


@dataclass(frozen=True)
class Lexicon:
    """Entries of one source, with the count of rows skipped per reason."""

    source: str
    entries: tuple[LexiconEntry, ...]
    skipped: dict[str, int] = field(default_factory=dict)

    def at_level(self, level: LexiconLevel) -> Lexicon:
        """The entries that count at ``level``; an empty result is an error."""
        if level not in LEXICON_LEVELS:
            raise LexiconError(
                f"The lexicon level must be one of {', '.join(LEXICON_LEVELS)}. Got {level!r} instead."
            )
        kept = tuple(e for e in self.entries if level == "inclusive" or e.level == "conservative")
        if not kept:
            raise LexiconError(
                f"The lexicon {self.source} has no {level!r} entries "
                f"({len(self.entries)} entries in all); choose another --lexicon-level or lexicon."
            )
        return Lexicon(self.source, kept, self.skipped)

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(sorted({e.category for e in self.entries}))

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the entries (not the file path): equal lexicons compare equal wherever they live."""
        rows = sorted(f"{e.lemma}\t{e.category}\t{e.level}" for e in self.entries)
        return hashlib.sha256("\n".join(rows).encode()).hexdigest()


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


def load_lexicon(path: str | Path) -> Lexicon:
    """Read a HurtLex TSV (recognised by its header) or a one-word-a-line list."""
    path = Path(path)
    if not path.is_file():
        raise LexiconError(f"The lexicon file {str(path)!r} does not exist or is not a file.")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as err:
        raise LexiconError(f"The lexicon file {str(path)!r} is not UTF-8 text: {err}.") from None
    content = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if content and "\t" in content[0]:
        lexicon = _parse_hurtlex(content, source=str(path))
    else:
        lexicon = _parse_word_list(content, source=str(path))
    if not lexicon.entries:
        raise LexiconError(
            f"The lexicon file {str(path)!r} has no usable entries "
            f"(skipped: {lexicon.skipped or 'nothing'}). Expected a HurtLex TSV with the header "
            f"{chr(9).join(HURTLEX_COLUMNS)!r} or one word a line."
        )
    return lexicon


def load_builtin_lexicon() -> Lexicon:
    """The project's own Japanese lexicon (package data)."""
    with resources.as_file(resources.files("fairness_core.data") / BUILTIN_LEXICON) as path:
        lexicon = load_lexicon(path)
    return Lexicon(f"builtin:{BUILTIN_LEXICON}", lexicon.entries, lexicon.skipped)


def _parse_hurtlex(lines: list[str], *, source: str) -> Lexicon:
    reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = tuple(column.strip() for column in next(reader))
    missing = [c for c in ("category", "lemma", "level") if c not in header]
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
            entries[lemma, category] = LexiconEntry(lemma, category, level, lemma_keys(lemma))
    return Lexicon(source, tuple(entries.values()), dict(skipped))


def _parse_word_list(lines: list[str], *, source: str) -> Lexicon:
    skipped: Counter[str] = Counter()
    entries: dict[str, LexiconEntry] = {}
    for line in lines:
        lemma = clean_lemma(line)
        if lemma is None:
            skipped["not Japanese (untranslated or empty)"] += 1
        elif lemma in entries:
            skipped["duplicate"] += 1
        else:
            entries[lemma] = LexiconEntry(lemma, UNCATEGORISED, "conservative", lemma_keys(lemma))
    return Lexicon(source, tuple(entries.values()), dict(skipped))
