"""The backend contract: requests in, completions out, in the same order.

Kept this small on purpose so that other engines (vLLM, an OpenAI-compatible
server, pre-generated JSONL) drop in without touching audits or metrics.
A request is one sample of one prompt; ``sample_index`` tells the samples of a
prompt apart and, with the run's seed, picks the random stream that draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from fairness_core.thresholds import SamplingProtocol


class _HasText(Protocol):
    text: str


P = TypeVar("P", bound=_HasText)


@dataclass(frozen=True)
class Request:
    prompt: str
    sample_index: int = 0


@dataclass(frozen=True)
class Completion:
    """The text generated after the prompt, decoded from the new tokens only."""

    text: str
    num_tokens: int


class Backend(Protocol):
    #: What the report shows as the model (hub id or path, revision, dtype, device).
    description: dict[str, str]
    #: Everything that determines the completions (weights and tokenizer hashes, seed, versions): the cache key.
    fingerprint: dict[str, str]

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        """One completion per request, in request order."""
        ...


def complete(backend: Backend, prompts: Sequence[P], protocol: SamplingProtocol) -> list[tuple[P, Completion]]:
    """Every prompt completed ``protocol.num_samples`` times: ``(prompt, completion)`` pairs, prompts in order."""
    requests = [Request(p.text, i) for p in prompts for i in range(protocol.num_samples)]
    prompt_of = [p for p in prompts for _ in range(protocol.num_samples)]
    return list(zip(prompt_of, backend.generate(requests, protocol), strict=True))
