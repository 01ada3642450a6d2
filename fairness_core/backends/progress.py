"""Progress of the long steps, readable on a terminal and in a CI log alike.

On a terminal, generation shows a tqdm bar.  In a CI log (stderr not a
terminal) a bar prints nothing useful - tqdm's carriage returns make one
unreadable line, or nothing at all with ``disable=None`` - and 4-9 minutes of
silence look like a hang.  There :class:`PlainProgress` prints a plain line
every tenth of the work or every 30 seconds, whichever comes first:

    generating: 640/6400 completions (10%), 21.3 completions/s, ETA 4m 30s

The libraries' own bars (``transformers``' "Loading weights") would print
inside pytest's header; :func:`quiet_library_bars` silences them.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from tqdm import tqdm
from transformers.utils import logging as transformers_logging

#: A plain progress line at least every this share of the work ...
LINE_EVERY_SHARE = 0.1
#: ... and at least every this many seconds.
LINE_EVERY_SECONDS = 30.0


class PlainProgress:
    """A progress reporter for logs, with the part of tqdm's interface that the backends use."""

    def __init__(self, total: int, *, desc: str, unit: str, stream: TextIO,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.desc, self.unit, self.stream, self.clock = total, desc, unit, stream, clock
        self.done = 0
        self.start = self.last_time = clock()
        self.step = max(1, math.ceil(total * LINE_EVERY_SHARE))  # whole completions: no float drift
        self.next_mark = self.step

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if self.done >= self.next_mark or now - self.last_time >= LINE_EVERY_SECONDS or self.done >= self.total:
            self.next_mark = (self.done // self.step + 1) * self.step
            self.last_time = now
            self.write(self.line(now))

    def line(self, now: float) -> str:
        """``generating: 640/6400 completions (10%), 21.3 completions/s, ETA 4m 30s``"""
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = _duration((self.total - self.done) / rate) if rate > 0 else "unknown"
        share = self.done / self.total if self.total else 1.0
        return (f"{self.desc}: {self.done}/{self.total} {self.unit}s ({share:.0%}), "
                f"{rate:.1f} {self.unit}s/s, ETA {eta}")

    def write(self, message: str) -> None:
        print(message, file=self.stream, flush=True)


def progress_bar(total: int, *, desc: str, unit: str, stream: TextIO | None = None) -> tqdm | PlainProgress:
    """A tqdm bar when ``stream`` (default: the real stderr, past pytest's capture) is a terminal, else plain lines."""
    stream = stream or sys.__stderr__ or sys.stderr
    if stream.isatty():
        return tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False)
    return PlainProgress(total, desc=desc, unit=unit, stream=stream)


@contextlib.contextmanager
def quiet_library_bars() -> Iterator[None]:
    """Silence ``transformers``' (and huggingface_hub's) progress bars inside the block, then restore them."""
    enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            transformers_logging.enable_progress_bar()


def _duration(seconds: float) -> str:
    """``4m 30s``, ``1h 02m``, ``12s``."""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds}s"
