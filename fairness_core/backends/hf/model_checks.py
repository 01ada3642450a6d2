"""What must hold of a loaded model and tokenizer before the audit trusts a completion from them.

Each check turns a failure that would otherwise surface deep inside
generation (a reshape of 0 elements, an embedding index out of range, a
float tensor of ids) or not at all (every prompt silently encoded to nothing)
into one usage error at load time that says what is wrong with which file.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

from fairness_core.backends.base import AnswerRoomError, ContextWindowError
from fairness_core.errors import AuditUsageError

#: Files a ``transformers`` tokenizer is read from, by kind; a model folder needs at least one of them.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model", "vocab.txt")
#: Short prompts of the audit's kind: each must encode to ids that decode to something (ideally to itself).
PROBE_PROMPTS = ("彼女は", "母の夢は")


class ModelCheckError(AuditUsageError):
    """A model or tokenizer that loads but cannot give a trustworthy audit; the message says why."""


def check_tokenizer_files(folder: Path, name: str) -> None:
    """A local model folder must hold tokenizer files: without them ``AutoTokenizer`` builds an empty tokenizer."""
    if folder.is_dir() and not any((folder / file).is_file() for file in TOKENIZER_FILES):
        raise ModelCheckError(f"--model={name}: no tokenizer was found in {folder}; looked for "
                              f"{', '.join(TOKENIZER_FILES)}. Save the tokenizer beside the weights "
                              f"(tokenizer.save_pretrained(folder)).")


def check_vocabulary(tokenizer, embeddings: int, name: str) -> None:
    """Every id the tokenizer can give must have a row in the model's input embeddings."""
    ids = len(tokenizer)
    if ids > embeddings:
        raise ModelCheckError(f"--model={name}: the tokenizer has {ids} ids but the model's vocab_size is "
                              f"{embeddings}: ids from {embeddings} on have no embedding. The tokenizer does not "
                              f"belong to these weights.")


def check_encoding(tokenizer, encode: Callable[[object, str], Sequence[int]], name: str,
                   prompts: Sequence[str] = PROBE_PROMPTS) -> str:
    """The audit's own kind of prompt must encode to ids that decode to something; what the header should say.

    A tokenizer that encodes Japanese to nothing (or only to special tokens)
    would have the model complete an empty prompt: that is an error.  One that
    loses characters (unknown to a small vocabulary) still gives the model
    most of the prompt, so the run goes on and the returned note, for the
    header and the provenance, names the tokenizer class and what it lost.
    """
    kind = type(tokenizer).__name__
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    for prompt in prompts:
        ids = list(encode(tokenizer, prompt))
        decoded = tokenizer.decode(ids, skip_special_tokens=True)
        if not [i for i in ids if i not in special] or not _comparable(decoded):
            raise ModelCheckError(f"--model={name}: the tokenizer ({kind}) encodes the prompt {prompt!r} to "
                                  f"{ids or 'no ids'}{f', which decode to {decoded!r}' if ids else ''}: it cannot "
                                  f"represent the audit's Japanese prompts.")
        if _comparable(decoded) != _comparable(prompt):
            return f"{kind}; it does not give {prompt!r} back (decodes as {decoded!r}): characters unknown to it are lost"
    return kind


class PromptsTooLongError(ModelCheckError, ContextWindowError):
    """A prompt that alone fills the model's positions: no setting of the protocol makes the evaluation that asks
    it runnable on this model, so the run does not judge that evaluation (the others go on)."""


class WindowTooSmallError(ModelCheckError, AnswerRoomError):
    """The model holds the prompts, but not ``max_new_tokens`` more."""


def check_context(prompt_tokens: int, max_new_tokens: int, positions: int | None, name: str) -> None:
    """Prompt and completion must fit the model's positions; past them a model degrades or slows, unannounced.

    A ``max_new_tokens`` too large for the model is the thresholds file's to lower (a usage error that says to
    what); a prompt too long for any is a :class:`PromptsTooLongError`.

    >>> try:
    ...     check_context(588, 10, 256, "m")
    ... except PromptsTooLongError as err:
    ...     print(err)
    --model=m has 256 positions and the longest prompt alone takes 588 tokens: no completion fits (a model with a \
longer context window can be audited on these prompts).
    """
    if positions is None or prompt_tokens + max_new_tokens <= positions:
        return
    if prompt_tokens >= positions:
        raise PromptsTooLongError(f"--model={name} has {positions} positions and the longest prompt alone takes "
                                  f"{prompt_tokens} tokens: no completion fits (a model with a longer context window "
                                  f"can be audited on these prompts).")
    raise WindowTooSmallError(f"--model={name}: the protocol needs up to {prompt_tokens + max_new_tokens} positions "
                          f"(a prompt of {prompt_tokens} tokens + max_new_tokens {max_new_tokens}) but the model "
                          f"has {positions}. Lower max_new_tokens in the thresholds file's protocol to at most "
                          f"{positions - prompt_tokens}.")


def max_positions(config) -> int | None:
    """The model's maximum sequence length from its config, where it states one."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(text, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _comparable(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())
