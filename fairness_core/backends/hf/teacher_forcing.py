"""Scoring continuations with a causal LM in this process: batched teacher forcing, one forward pass per request.

``log P(continuation | context)`` is the sum of the log-softmax of the
model's logits at each continuation token, given everything before it.  The
requests are encoded (:func:`~fairness_core.backends.token_ids.encode_continuation`),
put in order of length, padded on the left with explicit positions (as the
engine pads prompts for generation, so a row computes what it computes alone)
and run in batches; only the last ``longest continuation + 1`` positions' logits
are asked for, and the log-softmax is taken in float32.  Identical requests are
computed once.  No sampling is involved: the result depends on the weights and
the text only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fairness_core.backends.base import ContextWindowError, ScoreRequest
from fairness_core.backends.progress import progress_bar
from fairness_core.backends.token_ids import encode_continuation


def encoded_pairs(tokenizer, requests: Sequence[ScoreRequest], positions: int | None,
                  name: str) -> list[tuple[list[int], list[int]]]:
    """Each request's (context ids, continuation ids); one longer than ``positions`` is a :class:`ContextWindowError`."""
    pairs = [encode_continuation(tokenizer, r.context, r.continuation) for r in requests]
    longest = max((len(c) + len(k) for c, k in pairs), default=0)
    if positions is not None and longest > positions:
        count = sum(len(c) + len(k) > positions for c, k in pairs)
        raise ContextWindowError(f"--model={name} has a context window of {positions} tokens, and {count} of the "
                                 f"{len(pairs)} texts to score are longer (up to {longest} tokens).")
    return pairs


@torch.inference_mode()
def score_pairs(model, pairs: Sequence[tuple[list[int], list[int]]], *, pad_id: int, batch_size: int,
                accepts_positions: bool, accepts_logits_to_keep: bool) -> list[float]:
    """The summed log-probability of each pair's continuation after its context, in order; distinct pairs once."""
    distinct: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    for context, continuation in pairs:
        distinct.setdefault((tuple(context), tuple(continuation)), len(distinct))
    unique = list(distinct)
    order = sorted(range(len(unique)), key=lambda i: (-(len(unique[i][0]) + len(unique[i][1])), i))
    scores = [0.0] * len(unique)
    done = 0
    with progress_bar(len(unique), desc="scoring", unit="continuation") as progress:
        while done < len(order):
            batch = order[done:done + batch_size]
            try:
                found = _batch_scores(model, [unique[i] for i in batch], pad_id=pad_id,
                                      accepts_positions=accepts_positions, accepts_logits_to_keep=accepts_logits_to_keep)
            except torch.OutOfMemoryError:
                if batch_size == 1:
                    raise
                batch_size //= 2  # and retry the same rows
                torch.cuda.empty_cache()
                continue
            for index, value in zip(batch, found):
                scores[index] = value
            done += len(batch)
            progress.update(len(batch))
    return [scores[distinct[(tuple(c), tuple(k))]] for c, k in pairs]


def _batch_scores(model, rows, *, pad_id: int, accepts_positions: bool, accepts_logits_to_keep: bool) -> list[float]:
    """One forward pass over left-padded ``context + continuation`` rows; each continuation's summed log-probability."""
    sequences = [list(context) + list(continuation) for context, continuation in rows]
    width = max(map(len, sequences))
    device = model.device
    input_ids = torch.tensor([[pad_id] * (width - len(s)) + s for s in sequences], device=device)
    attention_mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], device=device)
    keep = max(len(continuation) for _, continuation in rows) + 1
    arguments: dict[str, object] = {}
    if accepts_positions:
        arguments["position_ids"] = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    if accepts_logits_to_keep:
        arguments["logits_to_keep"] = keep
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **arguments).logits
    # The logits at position p predict the token at p + 1: the last `keep` positions but one predict the last
    # `keep - 1` tokens, which hold every row's continuation (rows end together, padded on the left).
    log_probs = torch.log_softmax(logits[:, -keep:-1].float(), dim=-1)
    targets = input_ids[:, width - keep + 1:]
    picked = log_probs.gather(-1, targets[..., None])[..., 0]
    return [float(picked[row, picked.shape[1] - len(continuation):].sum()) for row, (_, continuation) in enumerate(rows)]
