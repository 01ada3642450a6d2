"""Completions journalled as they are made, so that an interrupted run resumes where it stopped.

Both engines that take long enough to be interrupted use it: the HTTP client
appends each sample as it arrives, the in-process engine each finished batch.
A rerun reads the journal back and generates only what is missing; the
per-request seeds make the resumed completions those of an uninterrupted run.

A journal that cannot be written (a read-only cache, a full disk) costs only
the resumption: generation goes on, nothing more is journalled, and
:attr:`Journal.not_kept` says why, for the backend to report once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from fairness_core.backends.base import Completion, Request
from fairness_core.config.thresholds import SamplingProtocol

#: Characters that ``str.splitlines`` takes for line ends besides ``\n``: written escaped, so one line is one row.
LINE_SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}


def json_line(row: object, *, sort_keys: bool = False) -> str:
    """``row`` as one JSON line: UTF-8 text kept readable, but no character that any reader takes for a line end.

    >>> json_line({"text": "母は\\u2028医者"})
    '{"text": "母は\\\\u2028医者"}'
    """
    text = json.dumps(row, ensure_ascii=False, sort_keys=sort_keys)
    for character, escaped in LINE_SEPARATORS.items():
        text = text.replace(character, escaped)
    return text


def split_lines(text: str) -> list[str]:
    """The lines of a JSONL text, split on ``\\n`` only (``\\r`` before it is JSON whitespace)."""
    return text.split("\n")


class Journal:
    """Completions appended one JSON line each as they arrive, so that an interrupted run can resume.

    Keyed by (prompt, sample index) within a file named by the hash of the
    backend fingerprint (which holds the run seed) and the protocol, so a line
    is only ever read back for the very request that produced it.  A line cut
    short by a crash is skipped and that sample is asked for again.
    """

    def __init__(self, folder: Path, fingerprint: Mapping[str, str], protocol: SamplingProtocol):
        key = hashlib.sha256(json.dumps({"fingerprint": dict(fingerprint), "protocol": protocol.model_dump()},
                                        sort_keys=True).encode()).hexdigest()
        self.path = Path(folder) / f"{key}.jsonl"
        #: Why finished samples are not (or no longer) journalled: ``None`` while the journal is written.
        self.not_kept: str | None = None
        self._file: TextIO | None = None

    def read(self) -> dict[tuple[str, int], Completion]:
        done: dict[tuple[str, int], Completion] = {}
        try:
            lines = split_lines(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return done
        for line in lines:
            try:
                row = json.loads(line)
                done[row["prompt"], row["sample_index"]] = Completion(row["text"], row["num_tokens"], row["finish_reason"],
                                                                      row.get("reading"))
            except (ValueError, KeyError, TypeError):
                continue
        return done

    @contextlib.contextmanager
    def writing(self) -> Iterator[Journal]:
        """The journal opened for :meth:`append`; one that cannot be opened is not kept (:attr:`not_kept`)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as err:
            self._give_up(err)
        try:
            yield self
        finally:
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None

    def append(self, request: Request, seed: int, completion: Completion) -> None:
        """One line per completion, written and flushed in one go (a crash loses at most this line)."""
        if self._file is None:
            return
        row = {"prompt": request.prompt, "sample_index": request.sample_index, "seed": seed, **asdict(completion)}
        try:
            self._file.write(json_line(row) + "\n")
            self._file.flush()
        except OSError as err:
            self._give_up(err)

    def discard(self) -> None:
        """Remove the journal of a complete generation; one that cannot be removed is left (it is only read back)."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)

    def _give_up(self, err: OSError) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        self.not_kept = (f"generation journal: {self.path.parent} cannot be written ({err.strerror or err}); "
                         f"finished samples are not journalled, so an interrupted run generates them again")


def journal_notes(journal: Journal | None, notes: list[str]) -> None:
    """Add ``journal``'s :attr:`~Journal.not_kept` to a backend's ``notes``, unless it is there already."""
    if journal is not None and journal.not_kept and journal.not_kept not in notes:
        notes.append(journal.not_kept)
