"""The backend contract: requests in, completions out, in the same order.

Kept this small on purpose so that other engines (vLLM, an OpenAI-compatible
server, pre-generated JSONL) drop in without touching audits or metrics.
A request is one sample of one prompt; ``sample_index`` tells the samples of a
prompt apart and, with the run's seed, picks the random stream that draws it.

A backend may also *score*: ``score(list[ScoreRequest]) -> list[float]``, the
log-probability of each continuation after its context, teacher-forced, in
request order (:func:`score_continuations`).  The in-process engines and a
server that echoes prompt log-probabilities can; completions read from files
cannot, and say so with one :class:`ScoringUnsupportedError`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.errors import AuditUsageError

if TYPE_CHECKING:
    from fairness_core.config.thresholds import SamplingProtocol


class _HasText(Protocol):
    @property
    def text(self) -> str: ...


P = TypeVar("P", bound=_HasText)


@dataclass(frozen=True)
class Request:
    """One sample of one prompt; ``prompt_id`` names the prompt in manifests and JSONL files."""

    prompt: str
    sample_index: int = 0
    prompt_id: str | None = None


@dataclass(frozen=True)
class Completion:
    """The text generated after the prompt, decoded from the new tokens only.

    ``text`` is the protocol's window (``max_new_tokens``): what the evaluations score.
    ``finish_reason`` is ``"stop"`` (end of sequence) or ``"length"`` (``max_new_tokens``
    reached) where the engine reports it.  ``reading`` is, under a chat format, the
    answer read on past the window until its opening sentences are complete
    (within ``chat.refusal_window`` tokens; :mod:`fairness_core.japanese.sentence_reading`):
    what the refusal reader reads.  ``None`` where nothing was read past the window.
    """

    text: str
    num_tokens: int
    finish_reason: str | None = None
    reading: str | None = None

    @property
    def refusal_text(self) -> str:
        """What the refusal reader reads: the reading where there is one, else the window's text."""
        return self.reading if self.reading is not None else self.text


def request_seed(run_seed: int, prompt: str, sample_index: int) -> int:
    """A 32-bit seed naming the random stream of one (prompt, sample) under the run's seed.

    Every backend derives its per-request seed here, so a completion depends on
    the seed, its prompt and its sample index, never on batching, order or replica.

    >>> request_seed(0, "母は", 0) == request_seed(0, "母は", 0) != request_seed(0, "母は", 1)
    True
    """
    digest = hashlib.sha256(f"{run_seed}\x00{sample_index}\x00{prompt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


#: The finish reason of an answer a chat API withheld or filtered (OpenAI's own name): counted as a refusal.
FILTERED = "content_filter"


class GenerationError(AuditUsageError):
    """A sample could not be generated (after any retries): the message names the prompt and the cause.

    It ends the run: an audit never drops or pads a sample silently.
    """


@dataclass(frozen=True)
class ModelReference:
    """``--model`` as the backends receive it, resolved once by the run (:func:`fairness_core.run.options.resolve_model`).

    ``name`` is what the user gave (what the report shows, and the served
    model's name for a server); ``location`` is what ``from_pretrained`` reads:
    a local folder (``local``) or a hub id.  ``defaults`` are option values that
    come with the model, used where the user gave none (the demo models are
    offline, so their scorers are too).

    >>> ModelReference("rinna/japanese-gpt2-small").location
    'rinna/japanese-gpt2-small'
    """

    name: str
    location: str = ""
    local: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.location:
            object.__setattr__(self, "location", self.name)


@dataclass(frozen=True)
class BackendSettings:
    """What every backend factory receives: the generic options, and its own under ``options``.

    ``options`` maps each of the backend's registered options (its flag without the
    leading dashes, ``-`` as ``_``) to the value given or its default.
    """

    model: ModelReference
    seed: int = 0
    revision: str | None = None
    trust_remote_code: bool = False
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int | str = "auto"
    #: How a prompt is put to the model (``--prompt-format``): every backend renders requests with it.
    prompt_format: PromptFormat = field(default_factory=lambda: PromptFormat())
    options: Mapping[str, Any] = field(default_factory=dict)
    #: The run's cache folder (``--cache-dir``), where a backend keeps what outlives a run: the CPU kernel
    #: choices, the HTTP client's journal of finished samples.  ``None`` with ``--no-cache``.
    cache_dir: Path | None = None


class Backend(Protocol):
    #: What the report shows as the model (hub id or path, revision, dtype, device).
    description: dict[str, str]
    #: Everything that determines the completions (weights and tokenizer hashes, seed, versions): the cache key.
    fingerprint: dict[str, str]

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        """One completion per request, in request order."""
        ...


def requests_for(prompts: Sequence[P], protocol: SamplingProtocol, *, evaluation: str | None = None) -> list[Request]:
    """Every prompt ``protocol.num_samples`` times, a prompt's samples adjacent.

    With ``evaluation``, a prompt that has an ``id`` gets the request id
    ``<evaluation>/<id>``: the name a completions file or a batch job knows it by.
    """
    def prompt_id(prompt) -> str | None:
        own = getattr(prompt, "id", None)
        return f"{evaluation}/{own}" if evaluation and own else None

    return [Request(p.text, i, prompt_id(p)) for p in prompts for i in range(protocol.num_samples)]


def complete(backend: Backend, prompts: Sequence[P], protocol: SamplingProtocol,
             *, evaluation: str | None = None) -> list[tuple[P, Completion]]:
    """Every prompt completed ``protocol.num_samples`` times: ``(prompt, completion)`` pairs, prompts in order."""
    requests = requests_for(prompts, protocol, evaluation=evaluation)
    prompt_of = [p for p in prompts for _ in range(protocol.num_samples)]
    return list(zip(prompt_of, backend.generate(requests, protocol), strict=True))


@dataclass(frozen=True)
class ScoreRequest:
    """A continuation to score after its context: ``log P(continuation | context)``, summed over its tokens."""

    context: str
    continuation: str


class ScoringUnsupportedError(AuditUsageError):
    """The backend cannot score continuations (it reads completions, or its server sends no prompt log-probabilities)."""


class AnswerRoomError(AuditUsageError):
    """Prompts that fit the model's context window, but not with the protocol's ``max_new_tokens`` after them; the
    message says what to lower it to.  A usage error, except for an evaluation whose window is room for answers that
    end by themselves (:attr:`~fairness_core.api.evaluation.Evaluation.answers_need_room`): that one is not judged."""


class ContextWindowError(AuditUsageError):
    """A text to score, or a prompt with its completion, is longer than the model's context window; the message
    says by how much.  The run does not judge the evaluation that asked for it (the others go on)."""


class ScoringBackend(Backend, Protocol):
    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """The summed log-probability of each request's continuation after its context, in request order."""
        ...


def score_continuations(backend: Backend, requests: Sequence[ScoreRequest]) -> list[float]:
    """``backend.score(requests)``; a backend without ``score`` raises one :class:`ScoringUnsupportedError`."""
    score = getattr(backend, "score", None)
    if score is None:
        raise ScoringUnsupportedError(f"the {backend.description.get('backend', type(backend).__name__)} backend cannot "
                                      f"score continuations: it has completions only")
    return score(requests)


def round_requests(prompts: Sequence[P], samples: range, *, evaluation: str | None = None) -> list[Request]:
    """The samples ``samples`` of every prompt (one round of ``--sampling=adaptive``), a prompt's samples adjacent.

    Sample indices continue across rounds, so the rounds of a run ask exactly
    for a prefix of :func:`requests_for`'s requests, the same completions for a seed.
    """
    def prompt_id(prompt) -> str | None:
        own = getattr(prompt, "id", None)
        return f"{evaluation}/{own}" if evaluation and own else None

    return [Request(p.text, i, prompt_id(p)) for p in prompts for i in samples]


def complete_samples(backend: Backend, prompts: Sequence[P], protocol: SamplingProtocol, samples: range,
                     *, evaluation: str | None = None) -> list[tuple[P, Completion]]:
    """The samples ``samples`` of every prompt: ``(prompt, completion)`` pairs, prompts in order.

    The backend receives the whole run's ``protocol`` (its cache, journal and
    completions files are keyed by it), and only this round's requests.
    """
    requests = round_requests(prompts, samples, evaluation=evaluation)
    prompt_of = [p for p in prompts for _ in samples]
    return list(zip(prompt_of, backend.generate(requests, protocol), strict=True))
