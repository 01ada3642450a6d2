"""Train the two tokenizer kinds that Japanese causal LMs ship, on a corpus given as text.

* SentencePiece unigram (rinna's GPT-2/NeoX models, Llama-based Japanese
  models): trained with the ``sentencepiece`` library and wrapped as a
  ``T5Tokenizer``, exactly how rinna ships its models.
* Byte-level BPE (GPT-2 and models derived from it): trained with the
  ``tokenizers`` library.

Both are saved with ``save_pretrained`` so that ``AutoTokenizer.from_pretrained``
loads them back through the path a user's model takes.  A chat demo model's
tokenizer also gets a ChatML chat template (:func:`add_chat_template`), the
markup many Japanese chat models (Qwen-based ones, Sarashina, some Swallow
releases) ship.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, T5Tokenizer

from fairness_core.run.demo_names import TOKENIZER_KINDS, TokenizerKind

EOS = "</s>"
TURN_START = "<|im_start|>"
TURN_END = "<|im_end|>"
#: ChatML: every turn is ``<|im_start|>role\ncontent<|im_end|>\n``.  transformers' ``continue_final_message``
#: cuts the rendering after the last turn's content, so chat-prefill needs nothing of the template's own.
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
#: Role names the template writes: trained into the tokenizer so that each is one piece.
CHAT_ROLES = ("user", "assistant")


def train_tokenizer(kind: TokenizerKind, corpus: Iterable[str], *, vocab_size: int,
                    whole_pieces: Sequence[str] = ()):
    """A ``transformers`` tokenizer of ``kind`` trained on ``corpus`` (deterministic).

    ``whole_pieces`` (SentencePiece only) are each one token, wherever they
    occur.  A chat model's vocabulary of 100k pieces holds its chat markup and
    stock phrases (申し訳ありませんが、) in a token or two; the demo's 1000-piece
    unigram model splits them into characters (its seed extraction keeps none of
    these repeated phrases), which would stretch a refusal past chat-prefill's
    10-token window and the framing past the model's context.
    """
    if kind == "sentencepiece":
        return _train_sentencepiece(corpus, vocab_size, whole_pieces)
    if whole_pieces:
        raise ValueError(f"The 'whole_pieces' parameter of train_tokenizer is for SentencePiece only. Got {kind!r}.")
    if kind == "bpe":
        return _train_byte_bpe(corpus, vocab_size)
    raise ValueError(f"The tokenizer kind must be one of {', '.join(TOKENIZER_KINDS)}. Got {kind!r} instead.")


def _train_sentencepiece(corpus: Iterable[str], vocab_size: int, whole_pieces: Sequence[str]) -> T5Tokenizer:
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1, minloglevel=2,
        **({"user_defined_symbols": list(whole_pieces)} if whole_pieces else {}),
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


def add_chat_template(tokenizer):
    """``tokenizer`` as a chat model's: ChatML turn markers as special tokens, ``<|im_end|>`` as its EOS.

    The turn end is the EOS, as in chat models whose tokenizer says so (Qwen's
    chat releases): generation stops where the answer's turn ends, and
    :func:`~fairness_core.demo.models.tiny_gpt2` writes it into the generation config.
    """
    tokenizer.add_special_tokens({"additional_special_tokens": [TURN_START, TURN_END]})
    tokenizer.eos_token = TURN_END
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer
