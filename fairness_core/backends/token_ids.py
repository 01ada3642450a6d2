"""How an audit prompt becomes the token ids a model is fed: one function for every route.

The in-process engine, vLLM in process, the HTTP client (which sends these ids
to servers that take them) and the demo models' training all encode a prompt
here, so that every route feeds a model the same ids.  It imports nothing from
the engines or the demo models: they all import it.
"""

from __future__ import annotations


def encode_prompt(tokenizer, text: str) -> list[int]:
    """Token ids of a prompt, with the BOS the tokenizer normally adds but never a trailing EOS.

    T5-style SentencePiece tokenizers (rinna's Japanese GPTs) append ``</s>`` to
    every encoding, which would tell a causal LM that the text has ended.
    """
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.bos_token_id, *ids] if adds_bos(tokenizer) else ids


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts its BOS before a text it encodes (a server tokenizing text would too)."""
    bos = tokenizer.bos_token_id
    return bos is not None and tokenizer("あ")["input_ids"][:1] == [bos]


def encode_continuation(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """Token ids of a context (:func:`encode_prompt`) and of a continuation scored after it.

    The continuation's ids are those of ``context + continuation`` encoded as
    one text, past the context's own ids, as lm-eval splits a pair: so the
    continuation is tokenized as it reads in running text (no SentencePiece
    word-start mark where it follows the context directly).  A continuation that
    encodes to nothing is an error.
    """
    context_ids = encode_prompt(tokenizer, context)
    continuation_ids = encode_prompt(tokenizer, context + continuation)[len(context_ids):]
    if not continuation_ids:
        raise ValueError(f"The continuation {continuation!r} encodes to no token after {context[-20:]!r}.")
    return context_ids, continuation_ids
