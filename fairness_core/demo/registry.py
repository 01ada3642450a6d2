"""``--model=demo[:fair|biased|nationality|nationality-biased][:sentencepiece|bpe]``: the committed demo models.

A demo name resolves to a folder written by ``save_pretrained``; the audit then
loads it with ``from_pretrained`` like any user's model.

>>> resolve_demo("demo:biased").name
'biased-sentencepiece'
>>> resolve_demo("demo:nationality-biased").name
'nationality-biased-sentencepiece'
>>> resolve_demo("rinna/japanese-gpt2-small") is None
True
"""

from __future__ import annotations

from pathlib import Path

from fairness_core.demo.corpus import DEMO_VARIANTS
from fairness_core.demo.tokenizers import TOKENIZER_KINDS
from fairness_core.errors import AuditUsageError
from fairness_core.registry import unknown_name

DEMO = "demo"
ARTIFACTS = Path(__file__).parent / "artifacts"


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
