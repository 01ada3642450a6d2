"""A content-addressed generation cache on disk, wrapping any backend.

Generation is the audit's whole cost; re-running the audits on the same model
(new thresholds, a report re-rendered, a CI retry) should cost none.  An entry
is keyed by a hash of everything that determines the completions: the
backend's fingerprint (weights, tokenizer, dtype, device, seed, library
versions), the sampling protocol and the requests.  Change any of them and the
key changes.

Writes are atomic (a temporary file in the same folder, then ``os.replace``),
so an interrupted run leaves no entry rather than a corrupt one; a per-entry
file lock makes a second concurrent run (pytest-xdist workers, two CI jobs)
wait for the first and read its result instead of generating again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from fairness_core.backends.base import Backend, Completion, Request

if TYPE_CHECKING:
    from fairness_core.thresholds import SamplingProtocol

CACHE_FORMAT = 1
CACHE_DIR_VARIABLE = "JA_FAIRNESS_AUDIT_CACHE"


def default_cache_dir() -> Path:
    """``$JA_FAIRNESS_AUDIT_CACHE``, else ``$XDG_CACHE_HOME/ja-fairness-audit``, else ``~/.cache/...``."""
    if os.environ.get(CACHE_DIR_VARIABLE):
        return Path(os.environ[CACHE_DIR_VARIABLE])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ja-fairness-audit" / "generations"


def cache_key(fingerprint: Mapping[str, str], requests: Sequence[Request], protocol: SamplingProtocol) -> str:
    """SHA-256 of the canonical JSON of everything that determines the completions."""
    payload = {
        "format": CACHE_FORMAT,
        "fingerprint": dict(sorted(fingerprint.items())),
        "protocol": protocol.model_dump(),
        "requests": [[r.prompt, r.sample_index] for r in requests],
    }
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old state or the whole new file, never part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class CachedBackend:
    """A backend whose ``generate`` results are stored on disk by :func:`cache_key`."""

    def __init__(self, inner: Backend, *, cache_dir: Path):
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.cache_dir = Path(cache_dir)
        self.description = inner.description
        self.hits = self.misses = 0

    def entry_path(self, requests: Sequence[Request], protocol: SamplingProtocol) -> Path:
        key = cache_key(self.fingerprint, requests, protocol)
        return self.cache_dir / key[:2] / f"{key}.json"

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        path = self.entry_path(requests, protocol)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{path}.lock"):
            cached = self._read(path, len(requests))
            if cached is not None:
                self.hits += 1
                return cached
            completions = self.inner.generate(requests, protocol)
            write_atomically(path, json.dumps([asdict(c) for c in completions], ensure_ascii=False))
            self.misses += 1
            return completions

    @staticmethod
    def _read(path: Path, expected: int) -> list[Completion] | None:
        """The entry's completions, or ``None`` when absent or unusable (then it is regenerated)."""
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
            completions = [Completion(**row) for row in rows]
        except (OSError, ValueError, TypeError):
            return None
        return completions if len(completions) == expected else None
