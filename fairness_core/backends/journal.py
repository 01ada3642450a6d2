"""Completions journalled as they are made, so that an interrupted run resumes where it stopped.

Both engines that take long enough to be interrupted use it: the HTTP client
appends each sample as it arrives, the in-process engine each finished batch.
A rerun reads the journal back and generates only what is missing; the
per-request seeds make the resumed completions those of an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from fairness_core.backends.base import Completion, Request
from fairness_core.config.thresholds import SamplingProtocol


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

    def read(self) -> dict[tuple[str, int], Completion]:
        done: dict[tuple[str, int], Completion] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return done
        for line in lines:
            try:
                row = json.loads(line)
                done[row["prompt"], row["sample_index"]] = Completion(row["text"], row["num_tokens"], row["finish_reason"])
            except (ValueError, KeyError, TypeError):
                continue
        return done

    def open(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.open("a", encoding="utf-8")

    @staticmethod
    def append(file, request: Request, seed: int, completion: Completion) -> None:
        """One line per completion, written and flushed in one go (a crash loses at most this line)."""
        row = {"prompt": request.prompt, "sample_index": request.sample_index, "seed": seed, **asdict(completion)}
        file.write(json.dumps(row, ensure_ascii=False) + "\n")
        file.flush()
