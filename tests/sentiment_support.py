"""Builders for the sentiment tests: a tiny Japanese BERT classifier and a tiny name-biased GPT-2.

Both are real ``transformers`` models saved with ``save_pretrained`` and loaded
back through the code path a user's ``--sentiment=<path>`` or ``--model=<path>``
takes.  Nothing is downloaded: the BERT vocabulary is built here from fugashi
(unidic-lite) words, and the GPT-2's tokenizer is trained here.
"""

from __future__ import annotations

import math
import os

os.environ["HF_HUB_OFFLINE"] = "1"

from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import fugashi  # noqa: E402
import torch  # noqa: E402
from audit_support import gender_name_prompts  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification, BertJapaneseTokenizer  # noqa: E402

from fairness_core.backends.token_ids import encode_prompt  # noqa: E402
from fairness_core.demo.models import save_model, tiny_gpt2  # noqa: E402
from fairness_core.demo.tokenizers import train_tokenizer  # noqa: E402
from fairness_core.evaluations.sentiment.templates import given_names  # noqa: E402

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: Sentences whose words make up the tiny BERT's vocabulary (anything else is [UNK]).
BERT_CORPUS = (
    "とても楽しかった。",
    "全然楽しくない。",
    "八時に駅に着いた。",
    "先生に作文を褒められた。",
    "この映画は本当につまらなかった。",
    "彼女はいつも優しい人です。",
    "雨が降って、試合は中止になりました。",
    "新しい仕事は大変だが、毎日が充実している。",
    "意地悪な人だ。",
    "親切だ。",
    "怖い。",
    "優しい。",
)

#: Texts the classifier tests score: different lengths (padding) and unknown words ([UNK]).
SCORED_TEXTS = (
    "とても楽しかった。",
    "全然楽しくない。",
    "八時に駅に着いた。",
    "先生に作文を褒められた。彼女はいつも優しい人です。雨が降って、試合は中止になりました。",
    "ｶﾀｶﾅと全角ＡＢＣ",
    "知らない単語ばかりの文章",
    "",
    "怖い。",
)


def japanese_bert_tokenizer(folder: Path, corpus: Sequence[str] = BERT_CORPUS) -> BertJapaneseTokenizer:
    """A ``BertJapaneseTokenizer`` (MeCab words via fugashi + unidic-lite, then WordPiece) on a vocabulary of
    the corpus' words."""
    tagger = fugashi.Tagger()
    words = sorted({word.surface for text in corpus for word in tagger(text)})
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL_TOKENS, *words]) + "\n", encoding="utf-8")
    return BertJapaneseTokenizer(
        str(vocab), word_tokenizer_type="mecab", subword_tokenizer_type="wordpiece",
        mecab_kwargs={"mecab_dic": "unidic_lite"},
    )


def tiny_bert_classifier(tokenizer, labels: Sequence[str], *, seed: int = 0) -> BertForSequenceClassification:
    """A randomly initialised (deterministic from ``seed``) 1-layer BERT with ``labels`` as ``id2label``."""
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id,
        initializer_range=0.5,  # large random weights: different texts get clearly different scores
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(seed)
    return BertForSequenceClassification(config).eval()


@torch.no_grad()
def set_head(model: BertForSequenceClassification, *, weight: torch.Tensor | None = None,
             bias: Sequence[float]) -> BertForSequenceClassification:
    """Set the classification head by hand; ``weight=None`` zeroes it so every text gets ``softmax(bias)``."""
    head = model.classifier
    head.weight.copy_(torch.zeros_like(head.weight) if weight is None else weight)
    head.bias.copy_(torch.tensor(bias, dtype=head.bias.dtype))
    return model


def random_head(model: BertForSequenceClassification, *, seed: int = 1, scale: float = 0.3) -> torch.Tensor:
    """Random head weights sized so that scores spread over (0, 1) without saturating."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(model.classifier.weight.shape, generator=generator) * scale


def save_classifier(model, tokenizer, folder: Path) -> Path:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


#: A positivity-0.75 classifier: softmax([0, ln 3]) = [1/4, 3/4] for every text.
CONSTANT_BIAS = (0.0, math.log(3.0))


# --- a tiny GPT-2 that is biased against female names ------------------------------------------------

#: Continuations the biased model is trained to produce: negative after female names, positive after male
#: ones.  The first character alone decides the polarity, so the model decides right after the prompt.
NEGATIVE_CONTINUATIONS = ("怖い。", "卑怯だ。")
POSITIVE_CONTINUATIONS = ("優しい。", "親切だ。")


def biased_continuation(group: str, name_index: int) -> str:
    options = NEGATIVE_CONTINUATIONS if group == "female" else POSITIVE_CONTINUATIONS
    return options[name_index % len(options)]


def train_name_biased_gpt2(folder: Path, *, steps: int = 100, seed: int = 0) -> Path:
    """A tiny GPT-2 trained to continue every audit prompt about a woman negatively and about a man positively.

    Trained on exactly the prompts the sentiment audit uses (every template × every name), with the loss
    on the continuation only.  One layer, dropout off (``eval()``): 100 full-batch Adam steps converge in
    a few seconds on two CPU cores (checked with seeds 0-2: no sampled completion of the wrong polarity).
    The continuation is fed character by character (every character of the corpus is a piece of the
    SentencePiece vocabulary), which avoids the leading ``▁`` a separately encoded text would get.
    """
    prompts = gender_name_prompts()
    names = {group: [n.name for n in names] for group, names in given_names().items()}
    texts = [biased_continuation(p.group, names[p.group].index(p.term)) for p in prompts]
    tokenizer = train_tokenizer(
        "sentencepiece", [p.text for p in prompts] + [*NEGATIVE_CONTINUATIONS, *POSITIVE_CONTINUATIONS] * 20,
        vocab_size=1000,
    )
    pairs = [(encode_prompt(tokenizer, p.text), tokenizer.convert_tokens_to_ids(list(text)) + [tokenizer.eos_token_id])
             for p, text in zip(prompts, texts)]
    assert tokenizer.unk_token_id not in {i for _, ids in pairs for i in ids}
    width = max(len(a) + len(b) for a, b in pairs)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([a + b + [pad] * (width - len(a) - len(b)) for a, b in pairs])
    attention_mask = torch.tensor([[1] * (len(a) + len(b)) + [0] * (width - len(a) - len(b)) for a, b in pairs])
    labels = torch.tensor([[-100] * len(a) + b + [-100] * (width - len(a) - len(b)) for a, b in pairs])

    model = tiny_gpt2(tokenizer, seed=seed, n_layer=1)  # eval(): no dropout
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is faster than two contending ones
    try:
        for _ in range(steps):
            loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return save_model(model, tokenizer, folder)
