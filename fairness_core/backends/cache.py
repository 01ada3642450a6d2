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

An entry must never change a number: it stores the SHA-256 of its completions
and every row is checked (``text`` a string, ``num_tokens`` a whole number, one
row per request).  An entry that fails either - a hand edit, a null completion,
a disk error - is a miss: it is regenerated and overwritten, and listed in
:attr:`CachedBackend.rejected` for the run's summary.  The checksum catches
edits and corruption, not forgery: whoever can write the cache can run code as
the auditor anyway.

A read-only cache (a warm cache shared from CI, a read-only mount) is read
without locks, since atomic writes leave nothing half-written to guard
against; what it lacks is generated and not stored, and listed in
:attr:`CachedBackend.not_stored` with the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from filelock import FileLock

from fairness_core.backends.base import FILTERED, Backend, Completion, Request, ScoreRequest, score_continuations
from fairness_core.config.chat_framings import framing_text

if TYPE_CHECKING:
    from fairness_core.config.thresholds import SamplingProtocol

#: Part of every cache key; 2: entries carry a checksum of their completions; 3: and each completion its reading
#: past the window (``Completion.reading``; the protocol's ``chat.refusal_window`` is in the key with the protocol).
CACHE_FORMAT = 3
CACHE_DIR_VARIABLE = "JA_FAIRNESS_AUDIT_CACHE"
#: What an entry holds: completions or scores.
T = TypeVar("T")


def default_cache_dir() -> Path:
    """``$JA_FAIRNESS_AUDIT_CACHE`` (``~`` expanded), else ``$XDG_CACHE_HOME/ja-fairness-audit``, else ``~/.cache/...``."""
    if os.environ.get(CACHE_DIR_VARIABLE):
        return Path(os.environ[CACHE_DIR_VARIABLE]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ja-fairness-audit" / "generations"


def default_cache_source() -> str:
    """What a message names the default cache folder by: the variable that set it, else the option's default."""
    return CACHE_DIR_VARIABLE if os.environ.get(CACHE_DIR_VARIABLE) else "the default --cache-dir"


def cache_key(fingerprint: Mapping[str, str], requests: Sequence[Request], protocol: SamplingProtocol) -> str:
    """SHA-256 of the canonical JSON of everything that determines the completions.

    Under a chat format (named in the fingerprint) the framing's text counts
    too, not only its id: the user turn is part of what the model is asked.
    """
    payload = {
        "format": CACHE_FORMAT,
        "fingerprint": dict(sorted(fingerprint.items())),
        "protocol": protocol.model_dump(),
        "requests": [[r.prompt, r.sample_index] for r in requests],
        **({"framing": framing_text(protocol.chat.framing)} if fingerprint.get("prompt_format") else {}),
    }
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old state or the whole new file, never part.

    The file gets the mode a plain ``open(path, "w")`` would give it: an
    existing file's own, else ``0o666`` less the umask (not the temporary
    file's ``0o600``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temporary, mode)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``os.umask`` alone must set one)."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:")), 8)
    except (OSError, StopIteration, ValueError, IndexError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


class CacheEntryError(ValueError):
    """A cache entry that cannot be trusted; the message says why."""


def completions_checksum(rows: list) -> str:
    """SHA-256 of the canonical JSON of an entry's completion rows."""
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def entry_text(completions: Sequence[Completion]) -> str:
    """An entry's file content: the completions and their checksum."""
    rows = [asdict(c) for c in completions]
    return json.dumps({"sha256": completions_checksum(rows), "completions": rows}, ensure_ascii=False)


def parse_entry(text: str, expected: int) -> list[Completion]:
    """The completions of an entry's file content; :class:`CacheEntryError` when it fails the checksum or schema."""
    try:
        entry = json.loads(text)
    except ValueError as err:
        raise CacheEntryError(f"not JSON ({err})") from None
    if not isinstance(entry, dict) or set(entry) != {"sha256", "completions"}:
        raise CacheEntryError("not an entry of this cache format (expected keys 'sha256' and 'completions')")
    rows = entry["completions"]
    if not isinstance(rows, list) or completions_checksum(rows) != entry["sha256"]:
        raise CacheEntryError("checksum mismatch: the completions were edited or corrupted")
    if len(rows) != expected:
        raise CacheEntryError(f"{len(rows)} completions for {expected} requests")
    for index, row in enumerate(rows):
        if not (isinstance(row, dict) and set(row) == {"text", "num_tokens", "finish_reason", "reading"}
                and isinstance(row["text"], str) and type(row["num_tokens"]) is int and row["num_tokens"] >= -1
                and row["finish_reason"] in (None, "stop", "length", FILTERED) and isinstance(row["reading"], str | None)):
            raise CacheEntryError(f"completion {index} is not {{'text': str, 'num_tokens': int >= -1 (-1: not "
                                  f"reported), 'finish_reason': stop, length, {FILTERED} or null, 'reading': str or "
                                  f"null}}: {row!r:.80}")
    return [Completion(**row) for row in rows]


class CachedBackend:
    """A backend whose ``generate`` results are stored on disk by :func:`cache_key`.

    ``rejected`` and ``not_stored`` hold one line per entry (``path: reason``)
    that failed its integrity check or could not be written, for the plugin to
    report once at the end of the run.
    """

    def __init__(self, inner: Backend, *, cache_dir: Path):
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.cache_dir = Path(cache_dir)
        self.description = inner.description
        self.hits = self.misses = 0
        self.rejected: list[str] = []
        self.not_stored: list[str] = []

    def entry_path(self, requests: Sequence[Request], protocol: SamplingProtocol) -> Path:
        key = cache_key(self.fingerprint, requests, protocol)
        return self.cache_dir / key[:2] / f"{key}.json"

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        path = self.entry_path(requests, protocol)
        with _entry_lock(path):
            cached = self._read(path, len(requests))
            if cached is not None:
                self.hits += 1
                return cached
            completions = self.inner.generate(requests, protocol)
            text = entry_text(completions)
            try:
                write_atomically(path, text)
            except OSError as err:
                self.not_stored.append(f"{path}: not stored, the cache cannot be written ({err.strerror or err})")
            self.misses += 1
            return completions

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """The wrapped backend's scores, stored by :func:`score_cache_key`; it must score (else one usage error)."""
        inner = getattr(self.inner, "score", None)
        if inner is None:
            return score_continuations(self.inner, requests)  # raises: the wrapped backend cannot score
        path = self.score_entry_path(requests)
        with _entry_lock(path):
            cached = self._read(path, len(requests), parse_scores_entry)
            if cached is not None:
                self.hits += 1
                return cached
            scores = inner(requests)
            try:
                write_atomically(path, scores_entry_text(scores))
            except OSError as err:
                self.not_stored.append(f"{path}: not stored, the cache cannot be written ({err.strerror or err})")
            self.misses += 1
            return scores

    def score_entry_path(self, requests: Sequence[ScoreRequest]) -> Path:
        key = score_cache_key(self.fingerprint, requests)
        return self.cache_dir / key[:2] / f"{key}.json"

    @property
    def usage(self) -> dict:
        """The wrapped backend's request and token counts (an HTTP client's), for the provenance."""
        return dict(getattr(self.inner, "usage", {}))

    def summary_lines(self) -> list[str]:
        """What the run's terminal summary should say about the cache (each rejected or unstored entry, once),
        then what the wrapped backend says of itself."""
        lines = []
        if self.rejected:
            lines.append(f"generation cache: {_entries(len(self.rejected))} failed the integrity check, "
                         f"generated anew:")
            lines += [f"  {line}" for line in self.rejected]
        if self.not_stored:
            lines.append(f"generation cache: {_entries(len(self.not_stored))} generated but not stored:")
            lines += [f"  {line}" for line in self.not_stored]
        return lines + list(getattr(self.inner, "summary_lines", list)())

    def _read(self, path: Path, expected: int, parse: Callable[[str, int], T] = parse_entry) -> T | None:  # type: ignore[assignment]
        """The entry's completions (or scores, with ``parse``), or ``None`` when absent or untrustworthy (then it is
        made again)."""
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as err:
            self.rejected.append(f"{path}: unreadable ({err})")
            return None
        try:
            return parse(text, expected)
        except CacheEntryError as err:
            self.rejected.append(f"{path}: {err}")
            return None


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


@contextlib.contextmanager
def _entry_lock(path: Path) -> Iterator[None]:
    """Hold the entry's file lock; without one when the lock file cannot be created (a read-only cache).

    Reading without the lock is safe because entries are replaced atomically;
    the lock only spares a concurrent run the same generation.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(f"{path}.lock")
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def score_cache_key(fingerprint: Mapping[str, str], requests: Sequence[ScoreRequest]) -> str:
    """SHA-256 of everything that determines the scores: the backend's fingerprint and the (context, continuation)s."""
    payload = {"format": CACHE_FORMAT, "kind": "score", "fingerprint": dict(sorted(fingerprint.items())),
               "requests": [[r.context, r.continuation] for r in requests]}
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def scores_entry_text(scores: Sequence[float]) -> str:
    rows = [float(s) for s in scores]
    return json.dumps({"sha256": completions_checksum(rows), "scores": rows})


def parse_scores_entry(text: str, expected: int) -> list[float]:
    """The scores of a score entry; :class:`CacheEntryError` when it fails the checksum or is not ``expected`` finite numbers."""
    try:
        entry = json.loads(text)
    except ValueError as err:
        raise CacheEntryError(f"not JSON ({err})") from None
    if not isinstance(entry, dict) or set(entry) != {"sha256", "scores"}:
        raise CacheEntryError("not a score entry of this cache format (expected keys 'sha256' and 'scores')")
    rows = entry["scores"]
    if not isinstance(rows, list) or completions_checksum(rows) != entry["sha256"]:
        raise CacheEntryError("checksum mismatch: the scores were edited or corrupted")
    if len(rows) != expected or not all(type(v) is float and math.isfinite(v) for v in rows):
        raise CacheEntryError(f"not {expected} finite numbers")
    return rows
