"""A user's BBQ or JBBQ file (``--bbq-file``), read into items; Nejumi's test subset (``--bbq-subset=nejumi``).

JBBQ (Yanaka et al., GeBNLP 2025) may not be redistributed, so the suite
ships none of it: a user who has it gives its files.  Accepted: BBQ's JSONL
(one item a line, the fields of nyu-mll/BBQ ``data/*.jsonl``; JBBQ's extra
``is_additional`` is allowed) or a CSV file with the same columns, whose
``answer_info`` and ``additional_metadata`` cells hold JSON.  ``PATH`` is one
file, a folder (its ``*.jsonl`` and ``*.csv``, by name: JBBQ comes as one file
per category) or several, comma-separated.

Every problem is one usage error naming ``file:line``: a row that is not an
object, a missing field, a label that is not 0-2, no unknown option or more
than one, no stereotyped option or more than one.  The unknown option is found
as Nejumi's uploader finds it (``scripts/data_uploader/upload_jbbq.py``): an
option whose ``answer_info`` holds ``unknown`` or one of BBQ's ten English
unknown phrases.  The stereotyped option is the one whose group (else its
text) is in ``stereotyped_groups``, with the gender spellings of BBQ and JBBQ
made one (``F``, ``女の子``, ``女性`` ...) and, as Nejumi does, the JBBQ
disability rows whose ``stereotyped_groups`` is empty taking 弱視の人 and 全盲の人
as the stereotyped groups.

Nejumi LLM Leaderboard 4 scores JBBQ on its test split: per category, the
templates (``question_index``) are shuffled with ``random.seed(42)``, 5/25 go
to train, 10/25 to dev and 10/25 to test (Sexual_orientation: 3, 3, 10), one
fixed template per JBBQ category is moved to the front of dev, each template
contributes its first 8 lines, and the first 20 test items of each category
are scored.  The two few-shot examples are the category's train items 0 and 9.
:func:`nejumi_split` reproduces that from the file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairness_core.errors import AuditUsageError
from fairness_core.evaluations.bbq.items import POOL, Item
from fairness_core.japanese.morphology import normalize

#: Nejumi's list of unknown labels (``upload_jbbq.py``): BBQ's ten English unknown phrases, and its group label.
UNKNOWN_LABELS = ("unknown", "Unknown", "Cannot be determined", "Can't be determined", "Not answerable", "Not known",
                  "Not enough info", "Not enough information", "Cannot answer", "Can't answer", "Undetermined")
#: BBQ's and JBBQ's spellings of the two gender groups, each mapped to one name.
GENDER_SPELLINGS = {spelling: "female" for spelling in ("F", "f", "woman", "women", "girl", "female", "女性", "女の子",
                                                        "女")}
GENDER_SPELLINGS.update({spelling: "male" for spelling in ("M", "m", "man", "men", "boy", "male", "男性", "男の子", "男")})
#: Nejumi's stereotyped groups of the JBBQ disability rows that name none.
UNNAMED_DISABILITY_GROUPS = ("弱視の人", "全盲の人")
#: A field of an option past BBQ's three (``ans3``, ...).
EXTRA_OPTION = re.compile(r"ans([3-9]|[1-9][0-9]+)")
REQUIRED = ("example_id", "question_index", "question_polarity", "context_condition", "category", "answer_info",
            "additional_metadata", "context", "question", "ans0", "ans1", "ans2", "label")

#: Nejumi's split: the templates moved to the front of dev, per JBBQ category.
NEJUMI_FIXED_DEV = {"Age": "14", "Disability_status": "1", "Gender_identity": "4", "Physical_appearance": "3",
                    "Sexual_orientation": "1"}
NEJUMI_SEED = 42
NEJUMI_LINES_PER_TEMPLATE = 8
NEJUMI_TEST_ITEMS = 20
#: Positions of the few-shot examples in a category's train items, by number of shots (Nejumi's ``prompt.py``).
NEJUMI_SHOT_POSITIONS = {0: (), 2: (0, 9), 4: (0, 3, 9, 10)}


class QuestionFileError(AuditUsageError):
    """A ``--bbq-file`` that cannot be read as BBQ items: the message names the file and line."""


@dataclass(frozen=True)
class QuestionFile:
    """The items of the files named by ``--bbq-file``, in file order, and what identifies them."""

    paths: tuple[Path, ...]
    items: tuple[Item, ...]
    sha256: str

    def describe(self) -> str:
        names = ", ".join(str(p) for p in self.paths)
        return f"{names} ({len(self.items)} items, sha256 {self.sha256[:12]})"

    def identity(self) -> str:
        """The files by name and content hash: the same wherever they are copied."""
        return f"{', '.join(p.name for p in self.paths)} (sha256 {self.sha256[:12]})"


def resolve_paths(spec: str) -> list[Path]:
    """The files of ``--bbq-file``: files and folders (their ``*.jsonl`` and ``*.csv``), comma-separated."""
    paths: list[Path] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        path = Path(part).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".csv") and p.is_file())
            if not found:
                raise QuestionFileError(f"--bbq-file={part}: the folder holds no *.jsonl or *.csv file.")
            paths += found
        elif path.is_file():
            paths.append(path)
        else:
            raise QuestionFileError(f"--bbq-file={part}: no such file or folder.")
    if not paths:
        raise QuestionFileError(f"--bbq-file={spec!r} names no file: give a BBQ or JBBQ file (JSONL or CSV), a folder "
                                f"of them, or several comma-separated (an empty value is no file: leave the option out "
                                f"to ask the project's own questions).")
    first: dict[Path, Path] = {}
    for path in paths:
        seen = first.setdefault(path.resolve(), path)
        if seen is not path:
            named = f"as {seen} and as {path}" if str(seen) != str(path) else "twice"
            raise QuestionFileError(f"--bbq-file={spec}: the file {path} is named {named}, and each of its items "
                                    f"would be asked and counted twice. Name each file once.")
    return paths


def read_question_file(spec: str) -> QuestionFile:
    """Every item of the files of ``spec``; the first malformed row is one :class:`QuestionFileError` naming it."""
    paths = resolve_paths(spec)
    items: list[Item] = []
    digest = hashlib.sha256()
    seen: dict[tuple[str, int], str] = {}
    for path in paths:
        try:
            data = path.read_bytes()
            text = data.decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise QuestionFileError(f"{path}: cannot be read as UTF-8 text: {err}") from None
        digest.update(hashlib.sha256(data).digest())
        for where, row in (_csv_rows(path, text) if path.suffix == ".csv" else _jsonl_rows(path, text)):
            try:
                item = item_from_row(row, where)
            except (ValueError, KeyError, TypeError) as err:
                raise QuestionFileError(f"{where}: {err}") from None
            first = seen.get((item.category, item.example_id))
            if first is not None:
                raise QuestionFileError(f"{where}: example_id {item.example_id} of category {item.category!r} "
                                        f"repeats {first}; an item is named by its category and example_id.")
            seen[(item.category, item.example_id)] = where
            items.append(item)
    if not items:
        raise QuestionFileError(f"--bbq-file={spec}: no items in {', '.join(map(str, paths))}.")
    return QuestionFile(tuple(paths), tuple(items), digest.hexdigest())


def _jsonl_rows(path: Path, text: str):
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except ValueError as err:
            raise QuestionFileError(f"{where}: not a JSON object ({err})") from None
        yield where, row


def _csv_rows(path: Path, text: str):
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [name for name in REQUIRED if name not in (reader.fieldnames or [])]
    if missing:
        raise QuestionFileError(f"{path}:1: the header has no column {', '.join(missing)}; a BBQ CSV has the columns "
                                f"{', '.join(REQUIRED)}")
    for row in reader:
        where = f"{path}:{reader.line_num}"
        parsed: dict[str, Any] = dict(row)
        for name in ("answer_info", "additional_metadata"):
            try:
                parsed[name] = json.loads(row[name] or "")
            except ValueError:
                raise QuestionFileError(f"{where}: the {name} cell is not JSON: {row[name]!r:.80}") from None
        for name in ("example_id", "label"):
            if (row[name] or "").strip().lstrip("-").isdigit():
                parsed[name] = int(row[name])
        yield where, parsed


def item_from_row(row: Any, where: str) -> Item:
    """One BBQ row as an :class:`Item`; ``ValueError`` says what is wrong with it."""
    if not isinstance(row, dict):
        raise ValueError(f"a row must be a JSON object with BBQ's fields, not {type(row).__name__}")
    missing = [name for name in REQUIRED if name not in row]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}; a BBQ row has {', '.join(REQUIRED)}")
    polarity, condition, label = row["question_polarity"], row["context_condition"], row["label"]
    if polarity not in ("neg", "nonneg"):
        raise ValueError(f"question_polarity must be neg or nonneg, not {polarity!r}")
    if condition not in ("ambig", "disambig"):
        raise ValueError(f"context_condition must be ambig or disambig, not {condition!r}")
    if type(label) is not int or label not in (0, 1, 2):
        raise ValueError(f"label must be 0, 1 or 2, not {label!r}")
    if type(row["example_id"]) is not int:
        raise ValueError(f"example_id must be a whole number, not {row['example_id']!r}")
    info = row["answer_info"]
    given = [k for k, v in row.items() if v not in (None, "")] + list(info if isinstance(info, dict) else ())
    extra = sorted({str(k) for k in given if EXTRA_OPTION.fullmatch(str(k))})
    if extra:
        raise ValueError(f"a field {', '.join(extra)}: BBQ's items have three options, ans0-ans2 (two people and "
                         f"unknown), and a further option would be dropped unasked; give the item with three")
    answers = tuple(row[f"ans{i}"] for i in range(3))
    if not all(isinstance(a, str) and a for a in answers) or not all(
            isinstance(row[k], str) and row[k] for k in ("context", "question", "category")):
        raise ValueError("context, question, category and ans0-ans2 must be non-empty strings")
    if row["category"].strip() == POOL:
        raise ValueError(f"category {POOL!r} is the name the audit gives the pool of all categories; rename the "
                         f"category")
    same = [(i, j) for i in range(3) for j in range(i + 1, 3) if _same_text(answers[i], answers[j])]
    if same:
        i, j = same[0]
        raise ValueError(f"ans{i} and ans{j} have the same text {answers[i]!r}: the model cannot tell them apart, and "
                         f"the answer would be decided by position; every option needs its own text")
    info = row["answer_info"]
    if not (isinstance(info, dict) and all(isinstance(info.get(f"ans{i}"), list) and info[f"ans{i}"]
                                           and all(isinstance(x, str) for x in info[f"ans{i}"]) for i in range(3))):
        raise ValueError("answer_info must map ans0, ans1 and ans2 each to a list of strings ([text, group])")
    answer_info = tuple(tuple(info[f"ans{i}"]) for i in range(3))
    metadata = row["additional_metadata"]
    if not isinstance(metadata, dict) or not isinstance(metadata.get("stereotyped_groups"), list):
        raise ValueError("additional_metadata must be an object with a stereotyped_groups list")
    stereotyped_groups = tuple(str(g) for g in metadata["stereotyped_groups"])
    unknown = [i for i, entry in enumerate(answer_info) if any(label in entry for label in UNKNOWN_LABELS)]
    if len(unknown) != 1:
        raise ValueError(f"{'no option is' if not unknown else 'options ' + str(unknown) + ' are'} the unknown answer "
                         f"(an answer_info entry holding 'unknown' or one of BBQ's unknown phrases); exactly one must be")
    stereotyped = stereotyped_option(answer_info, stereotyped_groups, unknown[0])
    if label == unknown[0] and condition == "disambig":
        raise ValueError("a disambiguated item's label is the unknown option")
    if label != unknown[0] and condition == "ambig":
        raise ValueError("an ambiguous item's label is not the unknown option")
    return Item(example_id=row["example_id"], question_index=str(row["question_index"]), question_polarity=polarity,
                context_condition=condition, category=row["category"], answer_info=answer_info,
                stereotyped_groups=stereotyped_groups, context=row["context"], question=row["question"],
                answers=answers, label=label, unknown_index=unknown[0],  # type: ignore[arg-type]
                stereotyped_index=stereotyped, template_id=f"{row['category']}-{row['question_index']}",
                metadata={k: v for k, v in metadata.items() if k != "stereotyped_groups"}, where=where)


def _same_text(a: str, b: str) -> bool:
    return "".join(normalize(a).split()) == "".join(normalize(b).split())


def _spelled(value: str) -> str:
    return GENDER_SPELLINGS.get(value, value)


def stereotyped_option(answer_info: Sequence[Sequence[str]], stereotyped_groups: Sequence[str], unknown: int) -> int:
    """The option of the stereotyped group: its group label, else its text, in ``stereotyped_groups``.

    >>> stereotyped_option([["母親", "女性"], ["父親", "M"], ["分からない", "unknown"]], ["F"], 2)
    0
    """
    groups = {_spelled(g) for g in stereotyped_groups} or set(UNNAMED_DISABILITY_GROUPS)
    people = [i for i in range(3) if i != unknown]
    for position in (1, 0):  # the group label, else the option's text (as Nejumi's disability rule reads both)
        found = [i for i in people if len(answer_info[i]) > position and _spelled(answer_info[i][position]) in groups]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise ValueError(f"options {found} both belong to stereotyped_groups {list(stereotyped_groups)}; "
                             f"exactly one person must")
    raise ValueError(f"no option belongs to stereotyped_groups {list(stereotyped_groups)} (answer_info groups: "
                     f"{[list(answer_info[i]) for i in people]}); exactly one person must")


@dataclass(frozen=True)
class NejumiSplit:
    """Per category, the scored test items and the train items the few-shot examples come from, in Nejumi's order."""

    test: dict[str, list[Item]]
    train: dict[str, list[Item]]
    #: How many templates (``question_index`` values) each category has.
    templates: dict[str, int]


def nejumi_split(items: Sequence[Item]) -> NejumiSplit:
    """Nejumi LLM Leaderboard 4's JBBQ split of ``items`` (``upload_jbbq.py`` and ``jbbq.py``), per category.

    ``test[c]`` is what the leaderboard scores (the first 20 test items of
    category c), ``train[c]`` where its few-shot examples come from.  The
    fixed-template move applies to JBBQ's five categories only (the uploader
    names no template for others).
    """
    by_category: dict[str, dict[str, list[Item]]] = {}
    for item in items:
        by_category.setdefault(item.category, {}).setdefault(item.question_index, []).append(item)
    test, train = {}, {}
    for category, questions in by_category.items():
        indices = list(questions)
        random.Random(NEJUMI_SEED).shuffle(indices)
        count = len(indices)
        train_count, dev_count, test_count = int(count * 5 / 25), int(count * 10 / 25), int(count * 10 / 25)
        if category == "Sexual_orientation":
            train_count, dev_count, test_count = 3, 3, 10
        train_ids = indices[:train_count]
        dev_ids = indices[train_count:train_count + dev_count]
        test_ids = indices[train_count + dev_count:train_count + dev_count + test_count]
        fixed = NEJUMI_FIXED_DEV.get(category)
        if fixed is not None and dev_ids:
            first_dev = dev_ids[0]
            if fixed in train_ids:
                train_ids.remove(fixed)
                train_ids.append(first_dev)
                dev_ids.remove(first_dev)
                dev_ids.insert(0, fixed)
            elif fixed in test_ids:
                test_ids.remove(fixed)
                test_ids.append(first_dev)
                dev_ids.remove(first_dev)
                dev_ids.insert(0, fixed)
        test[category] = [i for q in test_ids for i in questions[q][:NEJUMI_LINES_PER_TEMPLATE]][:NEJUMI_TEST_ITEMS]
        train[category] = [i for q in train_ids for i in questions[q][:NEJUMI_LINES_PER_TEMPLATE]]
    return NejumiSplit(test, train, {c: len(q) for c, q in by_category.items()})


def nejumi_shots(split: NejumiSplit, category: str, count: int) -> list[Item]:
    """The few-shot examples of ``category``: its train items at Nejumi's positions (0 and 9 for two)."""
    train = split.train.get(category, [])
    return [train[i] for i in NEJUMI_SHOT_POSITIONS[count] if i < len(train)]
