"""One lazy name → ``"module:attr"`` registry, for backends and evaluations.

A registry maps the names a user types to where their code lives, written as
``"module:attr"`` so that nothing is imported until a name is used: the pytest
plugin reads these tables on every pytest run, and importing an evaluation or a
backend pulls in scipy, torch or fugashi.  The entries can be given, or found
on first use (the evaluations come from an entry-point group, so that an
installed package can add one).  A registry can check what it loads, as
lm-evaluation-harness's ``Registry("model", base_cls=LM)`` does.  An unknown
name is one usage error in one shape everywhere: ``Unknown backend 'hff'. Did
you mean 'hf'? Available: hf, jsonl``.

>>> colours = Registry("colour", {"red": "colorsys:rgb_to_hsv"})
>>> colours.load("red").__name__
'rgb_to_hsv'
>>> colours.load("rde")
Traceback (most recent call last):
...
fairness_core.errors.AuditUsageError: Unknown colour 'rde'. Did you mean 'red'? Available: red
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from fairness_core.errors import AuditUsageError, did_you_mean

Entry = TypeVar("Entry")


def unknown_name(kind: str, name: str, choices: Iterable[str], *, hint: str = "") -> str:
    """The one message for a name that names nothing: ``Unknown <kind> 'x'. Did you mean ...? Available: ...``."""
    known = list(choices)
    return f"Unknown {kind} {name!r}.{did_you_mean(name, known)} Available: {', '.join(known)}{hint}"


def load_target(target: str) -> Any:
    """Import ``"module:attr"`` and return the attribute."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class Registry(Mapping[str, Entry], Generic[Entry]):
    """Names → entries (a ``"module:attr"`` string, or a record that names one), in declaration order.

    ``entries`` may be a function that finds them, called on first use.
    ``error`` is the :class:`~fairness_core.errors.AuditUsageError` subclass an
    unknown name raises; ``check(name, loaded)`` says why a loaded target is
    unfit (``None`` when it is fit).
    """

    def __init__(self, kind: str, entries: Mapping[str, Entry] | Callable[[], Mapping[str, Entry]], *,
                 error: type[AuditUsageError] = AuditUsageError,
                 check: Callable[[str, Any], str | None] | None = None):
        self.kind = kind
        self._source = entries
        self._found: dict[str, Entry] | None = None
        self._error = error
        self._check = check

    @property
    def _entries(self) -> dict[str, Entry]:
        if self._found is None:
            self._found = dict(self._source() if callable(self._source) else self._source)
        return self._found

    def __getitem__(self, name: str) -> Entry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> Entry:
        """The entry of ``name``; an unknown name is a usage error with suggestions."""
        if name not in self._entries:
            raise self._error(unknown_name(self.kind, name, sorted(self._entries)))
        return self._entries[name]

    def load(self, name: str) -> Any:
        """Import what the entry of ``name`` names (the entry itself must be a ``"module:attr"`` string)."""
        entry = self.entry(name)
        if not isinstance(entry, str):
            raise TypeError(f"The {self.kind} registry holds records; load their target instead")
        try:
            loaded = load_target(entry)
        except (ImportError, AttributeError) as err:
            raise self._error(f"The {self.kind} {name!r} is registered as {entry!r}, which cannot be "
                              f"imported: {type(err).__name__}: {err}") from None
        problem = self._check(name, loaded) if self._check else None
        if problem:
            raise self._error(f"The {self.kind} {name!r} ({entry}) {problem}")
        return loaded
