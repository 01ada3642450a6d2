"""Small GPT-2-architecture causal LMs for tests, demos and benchmarks.

Built with ``transformers``' own classes and saved with ``save_pretrained``,
so that the audit loads them through the same ``from_pretrained`` path as a
user's model.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def tiny_gpt2(tokenizer, *, seed: int = 0, n_embd: int = 32, n_layer: int = 2, n_head: int = 2,
              n_positions: int = 128) -> GPT2LMHeadModel:
    """A randomly initialised GPT-2 sized to ``tokenizer`` (deterministic from ``seed``)."""
    eos = tokenizer.eos_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
        bos_token_id=eos, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    return GPT2LMHeadModel(config).eval()


def save_model(model, tokenizer, folder: str | Path) -> Path:
    """``save_pretrained`` both, so that ``from_pretrained(folder)`` loads them back."""
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
