"""Hugging Face causal LMs: loading by hub id or path, and batched seeded generation.

Prompts are tokenized once, sorted by length so that a batch holds prompts of
similar length (little padding), padded on the left by hand, generated with
``model.generate`` and put back in request order.  Completions are decoded from
the new token ids only: slicing the decoded prompt off the decoded sequence
breaks on SentencePiece (the leading ``▁``) and on byte-level BPE (a character
split across the prompt/continuation boundary).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import sys
from collections.abc import Sequence
from typing import Literal

import torch
import transformers
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, GenerationConfig, LogitsProcessorList

from fairness_core.backends.base import Completion, Request
from fairness_core.backends.sampling import SeededSampler, row_key
from fairness_core.locations import MissingFolderError, first_line, resolve_location
from fairness_core.thresholds import SamplingProtocol

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DtypeName = Literal["auto", "float32", "bfloat16", "float16"]
#: ``--batch-size=auto`` never goes above this many rows: beyond it, larger matrix products gain nothing.
AUTO_BATCH_MAX = 512
#: Share of the free host memory that ``--batch-size=auto`` lets the KV cache and logits take on the CPU.
AUTO_MEMORY_SHARE = 0.25
#: Tokens per row (prompt + completion) that the CPU memory estimate provides for.
AUTO_TOKENS_PER_ROW = 96


def auto_batch_size(model) -> int:
    """The largest batch that fits, as far as can be known before trying.

    On CUDA that is :data:`AUTO_BATCH_MAX`, and an out-of-memory error halves it
    (see :meth:`HFBackend.generate`).  On the CPU an out-of-memory error kills
    the process instead, so the batch is sized up front: rows whose KV cache and
    logits take at most :data:`AUTO_MEMORY_SHARE` of the free memory.
    """
    if model.device.type == "cuda":
        return AUTO_BATCH_MAX
    config = model.config.get_text_config()
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 24)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 2048)
    element = torch.finfo(model.dtype).bits // 8
    per_row = 2 * layers * hidden * AUTO_TOKENS_PER_ROW * element + config.vocab_size * 4
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(1, min(AUTO_BATCH_MAX, int(free * AUTO_MEMORY_SHARE // per_row)))


class ModelLoadError(RuntimeError):
    """The model or tokenizer named by the user cannot be loaded; the message says why."""


def resolve_device(device: str) -> torch.device:
    """``auto`` is the first GPU when there is one, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"--device={device} asks for CUDA, but torch sees no CUDA device here.")
    return resolved


def load_model(
    name_or_path: str,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    device: str = "auto",
    dtype: DtypeName = "auto",
):
    """``from_pretrained`` for the model and its tokenizer, errors turned into one readable message."""
    try:
        name_or_path = resolve_location(name_or_path)
    except MissingFolderError:
        raise ModelLoadError(f"--model={name_or_path}: no such directory.") from None
    kwargs = {"revision": revision, "trust_remote_code": trust_remote_code}
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(
            name_or_path, dtype="auto" if dtype == "auto" else DTYPES[dtype], **kwargs
        )
    except (OSError, ValueError, KeyError) as err:
        raise ModelLoadError(f"--model={name_or_path} could not be loaded: {first_line(err)}") from err
    model.to(resolve_device(device)).eval()
    return model, tokenizer


def encode_prompt(tokenizer, text: str) -> list[int]:
    """Token ids of a prompt, with the BOS the tokenizer normally adds but never a trailing EOS.

    T5-style SentencePiece tokenizers (rinna's Japanese GPTs) append ``</s>`` to
    every encoding, which would tell a causal LM that the text has ended.
    """
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is not None and tokenizer("あ")["input_ids"][:1] == [bos]:
        ids = [bos, *ids]
    return ids


class HFBackend:
    """Batched, seeded generation with a ``transformers`` causal LM."""

    def __init__(self, model, tokenizer, *, seed: int = 0, batch_size: int | Literal["auto"] = "auto",
                 description=None):
        self.model = model
        self.tokenizer = tokenizer
        self.seed = seed
        self.description = description or {"model": getattr(model.config, "_name_or_path", "?")}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if self.pad_id is None:
            raise ModelLoadError("The tokenizer has neither a pad token nor an EOS token to pad with.")
        self.batch_size = auto_batch_size(model) if batch_size == "auto" else batch_size
        self.eos_ids = _eos_ids(model, tokenizer)
        # transformers fills every field that a GenerationConfig leaves unset from the model's own
        # generation_config.json (repetition_penalty, no_repeat_ngram_size, ...): the audit's protocol
        # must be the only thing that shapes the completions.
        model.generation_config = GenerationConfig(eos_token_id=self.eos_ids or None, pad_token_id=self.pad_id)
        # Only the last position's scores are wanted from a prompt's forward pass (remote-code models may
        # not know the argument); asked once here rather than per batch.
        accepts_keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._last_logits_only = {"logits_to_keep": 1} if accepts_keep else {}

    @functools.cached_property
    def fingerprint(self) -> dict[str, str]:
        """What determines this backend's completions, for the generation cache key.

        The weights are hashed tensor by tensor (one pass over the parameters),
        so a fine-tune saved under the same name or path gets a new key.
        """
        weights = hashlib.sha256()
        for name, tensor in sorted(self.model.state_dict().items()):
            weights.update(name.encode())
            weights.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy())
        tokenizer = getattr(self.tokenizer, "backend_tokenizer", None)
        vocabulary = tokenizer.to_str() if tokenizer is not None else json.dumps(self.tokenizer.get_vocab(), sort_keys=True)
        return {
            "weights": weights.hexdigest(),
            "tokenizer": hashlib.sha256(
                f"{type(self.tokenizer).__name__}{self.tokenizer.special_tokens_map}{vocabulary}".encode()
            ).hexdigest(),
            "dtype": str(self.model.dtype),
            "device": self.model.device.type,
            "seed": str(self.seed),
            "versions": f"torch {torch.__version__}, transformers {transformers.__version__}",
        }

    @torch.inference_mode()
    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        encoded = [encode_prompt(self.tokenizer, r.prompt) for r in requests]
        order = sorted(range(len(requests)), key=lambda i: (-len(encoded[i]), i))
        results: list[Completion | None] = [None] * len(requests)
        with tqdm(total=len(requests), desc="generating", unit="completion", file=sys.__stderr__,
                  disable=None, leave=False) as progress:
            done = 0
            while done < len(order):
                batch = order[done:done + self.batch_size]
                try:
                    texts = self._generate_batch([requests[i] for i in batch], [encoded[i] for i in batch], protocol)
                except torch.OutOfMemoryError:
                    if self.batch_size == 1:
                        raise
                    self.batch_size //= 2  # and retry the same rows: an audit should not die of one big batch
                    torch.cuda.empty_cache()
                    progress.write(f"out of memory: batch size halved to {self.batch_size}")
                    continue
                for index, completion in zip(batch, texts):
                    results[index] = completion
                done += len(batch)
                progress.update(len(batch))
        return results  # type: ignore[return-value]

    def _generate_batch(self, requests, encoded, protocol) -> list[Completion]:
        width = max(len(ids) for ids in encoded)
        device = self.model.device
        input_ids = torch.tensor([[self.pad_id] * (width - len(ids)) + ids for ids in encoded], device=device)
        attention_mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in encoded], device=device)
        processors = LogitsProcessorList()
        if protocol.do_sample:
            keys = torch.tensor([row_key(self.seed, r.prompt, r.sample_index) for r in requests])
            processors.append(SeededSampler(keys, width, protocol))
        shared = self._shared_first_step(input_ids, attention_mask, processors)
        if shared is None:
            output = self._continue(input_ids, attention_mask, None, processors, protocol.max_new_tokens)
        else:
            first_tokens, cache = shared
            input_ids = torch.cat([input_ids, first_tokens[:, None]], dim=1)
            attention_mask = torch.cat([attention_mask, torch.ones_like(first_tokens)[:, None]], dim=1)
            output = (input_ids if protocol.max_new_tokens == 1 else
                      self._continue(input_ids, attention_mask, cache, processors, protocol.max_new_tokens - 1))
        return [self._decode(row[width:].tolist()) for row in output]

    def _continue(self, input_ids, attention_mask, cache, processors, max_new_tokens: int) -> torch.Tensor:
        """``model.generate`` greedy over the processed scores (the seeded sampler makes that sampling)."""
        config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=self.pad_id,
                                  eos_token_id=self.eos_ids or None)
        return self.model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config,
                                   logits_processor=processors, cache=cache)

    def _shared_first_step(self, input_ids, attention_mask, processors) -> tuple[torch.Tensor, DynamicCache] | None:
        """Each distinct prompt run through the model once: its KV cache and first-token scores, copied to its rows.

        The samples of one prompt share the whole prompt, so the prompt's
        forward pass - the prefill and the step that yields the first new
        token's distribution - is computed once and copied to every sample's
        row; each row then draws its own first token from its own random stream,
        and ``generate`` continues from there.  Without this, 20 samples of a
        10-token prompt cost as much prefill as decoding.  ``None`` when every
        row is a different prompt (nothing to share).
        """
        rows = [tuple(row) for row in input_ids.tolist()]
        distinct = list(dict.fromkeys(rows))
        if len(distinct) == len(rows):
            return None
        first_row = {row: rows.index(row) for row in distinct}
        prompt_rows = torch.tensor([first_row[row] for row in distinct], device=input_ids.device)
        mask = attention_mask[prompt_rows]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        logits = self.model(input_ids=input_ids[prompt_rows], attention_mask=mask, position_ids=positions,
                            cache=cache, use_cache=True, **self._last_logits_only).logits[:, -1].float()
        copies = torch.tensor([distinct.index(row) for row in rows], device=input_ids.device)
        cache.reorder_cache(copies)
        scores = processors(input_ids, logits[copies])
        return scores.argmax(dim=-1), cache

    def _decode(self, new_ids: list[int]) -> Completion:
        for position, token in enumerate(new_ids):
            if token in self.eos_ids:
                new_ids = new_ids[:position]
                break
        return Completion(self.tokenizer.decode(new_ids, skip_special_tokens=True), len(new_ids))


def _eos_ids(model, tokenizer) -> list[int]:
    configured = getattr(model.generation_config, "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured]
    ids = [i for i in ids if i is not None]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids
