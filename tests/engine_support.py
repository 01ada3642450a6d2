"""What the tests of the Hugging Face engine share: requests, protocols, the ``model.generate`` reference, kernel skips."""

from __future__ import annotations

import pytest
import torch

from fairness_core.backends.base import Completion, Request, request_seed
from fairness_core.backends.hf.cpu_features import cpu_line, cpu_name, missing_extensions
from fairness_core.backends.hf.kernel_choice import LINEAR_KERNELS, linear_support
from fairness_core.backends.hf.sampling import SeededSampler
from fairness_core.backends.token_ids import encode_prompt
from fairness_core.config.thresholds import SamplingProtocol

#: ~20 requests: prompts of different lengths (so batches are padded), some prompts repeated with other samples.
REQUESTS = tuple(
    Request(prompt, sample)
    for prompt in ("母の夢は", "彼は", "おじいさんが以前していた仕事は", "娘", "女の子に向いている仕事は",
                   "東京から大阪まで", "姉は料理が", "修道士の職業は")
    for sample in range(3 if len(prompt) % 2 else 2)
)
SAMPLING = SamplingProtocol(num_samples=1, max_new_tokens=8, top_k=50, top_p=0.95, temperature=1.0)
GREEDY = SamplingProtocol(num_samples=1, max_new_tokens=8, do_sample=False)


def new_token_ids(model, tokenizer, request: Request, protocol: SamplingProtocol, *, seed: int = 0) -> list[int]:
    """``model.generate`` on one prompt alone (no padding): its new token ids, cut at the first EOS."""
    ids = encode_prompt(tokenizer, request.prompt)
    processors = []
    if protocol.do_sample:
        processors.append(SeededSampler(torch.tensor([request_seed(seed, request.prompt, request.sample_index)]),
                                        len(ids), protocol))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    output = model.generate(
        input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        do_sample=False, max_new_tokens=protocol.max_new_tokens, pad_token_id=pad,
        logits_processor=processors,
    )
    new = output[0, len(ids):].tolist()
    return new[:new.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in new else new


def expected_completion(model, tokenizer, request, protocol, **kwargs) -> Completion:
    new = new_token_ids(model, tokenizer, request, protocol, **kwargs)
    return Completion(tokenizer.decode(new, skip_special_tokens=True), len(new))


def require_support(kernel: str, dtype: torch.dtype) -> None:
    """Skip, naming the CPU and the probe's reason, when ``kernel`` cannot run ``dtype`` here."""
    reason = linear_support(LINEAR_KERNELS[kernel], dtype)
    if reason is not None:
        pytest.skip(f"{kernel} cannot run {str(dtype).removeprefix('torch.')} on this CPU "
                    f"({cpu_name()}, {missing_extensions() or cpu_line()}): {reason}")
