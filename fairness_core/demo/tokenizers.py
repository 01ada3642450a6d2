"""Train the two tokenizer kinds that Japanese causal LMs ship, on a corpus given as text.

* SentencePiece unigram (rinna's GPT-2/NeoX models, Llama-based Japanese
  models): trained with the ``sentencepiece`` library and wrapped as a
  ``T5Tokenizer``, exactly how rinna ships its models.
* Byte-level BPE (GPT-2 and models derived from it): trained with the
  ``tokenizers`` library.

Both are saved with ``save_pretrained`` so that ``AutoTokenizer.from_pretrained``
loads them back through the path a user's model takes.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterable
from pathlib import Path

import sentencepiece
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, T5Tokenizer

from fairness_core.demo.names import TOKENIZER_KINDS, TokenizerKind

EOS = "</s>"


def train_tokenizer(kind: TokenizerKind, corpus: Iterable[str], *, vocab_size: int):
    """A ``transformers`` tokenizer of ``kind`` trained on ``corpus`` (deterministic)."""
    if kind == "sentencepiece":
        return _train_sentencepiece(corpus, vocab_size)
    if kind == "bpe":
        return _train_byte_bpe(corpus, vocab_size)
    raise ValueError(f"The tokenizer kind must be one of {', '.join(TOKENIZER_KINDS)}. Got {kind!r} instead.")


def _train_sentencepiece(corpus: Iterable[str], vocab_size: int) -> T5Tokenizer:
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1, minloglevel=2,
    )
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "spiece.model").write_bytes(model.getvalue())
        return T5Tokenizer.from_pretrained(folder, extra_ids=0)


def _train_byte_bpe(corpus: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS)
