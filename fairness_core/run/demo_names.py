"""``--model=demo[:VARIANT][:sentencepiece|bpe]``: the committed demo models, VARIANT a key of ``DEMO_VARIANTS``.

A demo name resolves to a folder written by ``save_pretrained``; the audit then
loads it with ``from_pretrained`` like any user's model.  This module is the
demo models' name table only, part of the run (which resolves ``--model``),
while the builder (:mod:`fairness_core.demo.build`) sits above the evaluations
it trains for: resolving a name imports no tokenizer library and builds no corpus.

>>> resolve_demo("demo:biased").name
'biased-sentencepiece'
>>> resolve_demo("demo:nationality-biased").name
'nationality-biased-sentencepiece'
>>> resolve_demo("demo:chat").name
'chat-sentencepiece'
>>> resolve_demo("rinna/japanese-gpt2-small") is None
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fairness_core.errors import AuditUsageError
from fairness_core.registry import unknown_name

DEMO = "demo"
DEMO_FOLDER = Path(__file__).resolve().parents[1] / "demo"
ARTIFACTS = DEMO_FOLDER / "artifacts"

TokenizerKind = Literal["sentencepiece", "bpe"]
TOKENIZER_KINDS: tuple[TokenizerKind, ...] = ("sentencepiece", "bpe")


@functools.cache
def option_defaults() -> dict[str, Any]:
    """Option values that come with every demo model (``demo/data/option_defaults.yaml``): they keep the quickstart
    offline.  Data, not code, so that the run names no evaluation's option."""
    import yaml

    return dict(yaml.safe_load((DEMO_FOLDER / "data" / "option_defaults.yaml").read_text(encoding="utf-8")))


@dataclass(frozen=True)
class DemoVariant:
    """Whose prompts a demo model is trained on, the tokenizer flavours it is built in, and whether it is a chat model.

    A ``chat`` model's tokenizer has a chat template, and it is trained on the
    audit's prompts rendered through it (``--prompt-format=chat-prefill`` and
    ``chat-instruction``), with refusals among its answers.  A ``questions``
    model also answers the BBQ questions of its attribute set
    (:mod:`fairness_core.demo.questions`), and has the context window they need.
    A ``requests`` model (a chat model) also answers the name-based chat requests,
    a task put by a named user (:mod:`fairness_core.demo.chat_requests`), and has
    the window their answers need.
    """

    attribute_set: str
    kinds: tuple[TokenizerKind, ...]
    chat: bool = False
    questions: bool = False
    requests: bool = False


def _read_variants() -> dict[str, DemoVariant]:
    """The table of ``demo/data/demo_variants.yaml``: data, not code, so that the run names no evaluation (a variant
    may be named after the evaluation it is trained for).  A malformed entry is the builder's error, raised at import."""
    import yaml

    raw = yaml.safe_load((DEMO_FOLDER / "data" / "demo_variants.yaml").read_text(encoding="utf-8"))["variants"]
    variants = {}
    for name, fields in raw.items():
        kinds = tuple(fields.get("kinds", ()))
        unknown = [kind for kind in kinds if kind not in TOKENIZER_KINDS]
        if not kinds or unknown:
            raise ValueError(f"demo_variants.yaml: {name}: kinds must be some of {', '.join(TOKENIZER_KINDS)}. "
                             f"Got {list(kinds)} instead.")
        variants[str(name)] = DemoVariant(**{**fields, "kinds": kinds})
    return variants


#: Every demo model, read from ``demo/data/demo_variants.yaml``.
DEMO_VARIANTS: dict[str, DemoVariant] = _read_variants()


class UnknownDemoError(AuditUsageError):
    """A ``demo:...`` name that names no demo model."""


def demo_names() -> list[str]:
    """Every accepted spelling, shortest first (``demo`` is fair with SentencePiece)."""
    names = []
    for bias, variant in DEMO_VARIANTS.items():
        for kind in variant.kinds:
            parts = [DEMO] + ([bias] if bias != "fair" else []) + ([kind] if kind != "sentencepiece" else [])
            names.append(":".join(parts))
            names.append(f"{DEMO}:{bias}:{kind}")
        names.append(f"{DEMO}:{bias}")
    return sorted(set(names), key=lambda n: (n.count(":"), n))


def is_demo(spec: str) -> bool:
    return spec == DEMO or spec.startswith(DEMO + ":")


def resolve_demo(spec: str) -> Path | None:
    """The artifact folder of a demo name; ``None`` when ``spec`` is not a demo name."""
    if not is_demo(spec):
        return None
    parts = spec.split(":")[1:]
    bias = next((p for p in parts if p in DEMO_VARIANTS), "fair")
    kind = next((p for p in parts if p in TOKENIZER_KINDS), "sentencepiece")
    unknown = [p for p in parts if p not in DEMO_VARIANTS and p not in TOKENIZER_KINDS]
    if unknown or len(parts) > 2 or kind not in DEMO_VARIANTS[bias].kinds:
        raise UnknownDemoError(unknown_name("demo model", spec, demo_names()))
    folder = ARTIFACTS / f"{bias}-{kind}"
    if not (folder / "config.json").is_file():
        raise UnknownDemoError(f"The demo model {spec!r} is not built at {folder}: "
                               f"run python -m fairness_core.demo.build")
    return folder
