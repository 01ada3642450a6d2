"""Train the demo models: ``python -m fairness_core.demo.build [--out DIR]``.

Tiny GPT-2 models, one per variant and tokenizer flavour of
:data:`~fairness_core.run.demo_names.DEMO_VARIANTS` ({fair, biased} x
{sentencepiece, bpe}, the others x {sentencepiece}),
each trained on the synthetic corpus of :mod:`fairness_core.demo.corpus` and
saved with ``save_pretrained``; ``--only nationality`` builds one variant.
A chat variant's tokenizer gets a chat template, and its examples are rendered
through it exactly as the audit renders a request (:class:`PromptFormat`).
A QA variant is also trained on the BBQ questions' known answers
(:mod:`fairness_core.demo.questions`), each encoded as the likelihood scorer
encodes an option after its question, in a wider and deeper model.
A request variant (a chat one) is also trained on the name-based chat requests
(:mod:`fairness_core.demo.chat_requests`), rendered as the audit renders them,
in a model whose window holds a request and the 200 tokens the audit allows its answer.
Deterministic from :data:`SEED`.  The results are committed under
``fairness_core/demo/artifacts/`` (well under 10 MB together), so that
``--model=demo`` costs no training; this script is how they were made.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from fairness_core.backends.prompt_formats import CHAT_INSTRUCTION, CHAT_PREFILL, PromptFormat
from fairness_core.backends.token_ids import encode_continuation
from fairness_core.config.chat_framings import PLACEHOLDER, framing_text
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo import chat_requests
from fairness_core.demo.corpus import CHAT_INSTRUCTION_SHARE, PLANTED_RATES, build_corpus, refusal_texts
from fairness_core.demo.models import save_model, tiny_gpt2
from fairness_core.demo.questions import AnswerExample, answer_examples, demo_items, planted_templates
from fairness_core.demo.tokenizers import CHAT_ROLES, add_chat_template, train_tokenizer
from fairness_core.run.demo_names import ARTIFACTS, DEMO_VARIANTS

SEED = 20261129

VOCAB_SIZE = {"sentencepiece": 1000, "bpe": 1000}
MODEL_SHAPE = {"n_embd": 96, "n_layer": 2, "n_head": 3, "n_positions": 64}
#: The QA variants: a question and its longest option are up to ~170 tokens, and answering a disambiguated
#: question means finding the person its context names, which 2 layers of 96 learn slowly, if at all.
QA_MODEL_SHAPE = {"n_embd": 128, "n_layer": 3, "n_head": 4, "n_positions": 256}
#: How often a QA variant sees each question's answer in an epoch (a continuation prompt is seen 10 or 20 times).
QUESTION_REPEATS = 40
#: The request variants: a request (~30-60 tokens) and the 200 new tokens the audit allows its answer.
REQUEST_MODEL_SHAPE = {**MODEL_SHAPE, "n_positions": 384}
TRAINING = {"epochs": 5, "batch_size": 64, "learning_rate": 5e-3, "decision_tokens": 3, "decision_weight": 8.0}
#: Variants that train longer.  demo:nationality-biased plants its sentiment bias on given names (which names
#: are Vietnamese), a weaker signal than a group word: rebuilt with 3 heads of 32, 5 epochs did not learn it.
#: The request variants plant their skew on names too: built with 5 epochs and each name split into 2-4 character
#: pieces, demo:chat-names-biased answered both groups alike (0.49 / 0.48 women-majority); each full name is now
#: one token (:func:`~fairness_core.demo.chat_requests.full_names`), and they train 7 epochs.
EPOCHS = {"nationality-biased": 10, "chat-names": 7, "chat-names-biased": 7}
#: ... nor did 7: each group got the pooled rates.  What taught them the names is a second phase on the requests
#: alone, at a constant learning rate (from 0.49 / 0.48 women-majority to 0.76 / 0.25 on demo:chat-names-biased).
#: The phase on the requests alone let the rest drift (demo:chat-names: hurtful 0.012, refusals 0.02 where demo:chat
#: has 0.05 and 0.07), so a quarter of the whole corpus, drawn anew each epoch, is replayed with them.
REQUEST_PHASE = {"epochs": 3, "learning_rate": 2e-3, "shuffle_seed": 1, "replay": 0.25}
#: ... and 3 left demo:chat-names-biased short of its skew (women-majority 0.72 / 0.34 where 0.75 / 0.25 were
#: planted), so it takes 6.
REQUEST_PHASE_EPOCHS = {"chat-names-biased": 6}
#: Request variants that cannot tell the users' names apart: after training, every full name's embedding is set to
#: their mean, so that an answer cannot depend on which name asked (each name is one token at the same position).
#: Trained on answers drawn at the same rates for every name, demo:chat-names still learned a spurious gap (women-majority
#: 0.465 / 0.531) from the names' random starting embeddings; the fair twin's true gap is now 0 by construction.
NAME_BLIND = ("chat-names",)
#: The protocol whose framing the chat variants are trained under: the default, which an audit uses unless told.
CHAT_PROTOCOL = SamplingProtocol()


def _encode_examples(tokenizer, examples, protocol: SamplingProtocol = CHAT_PROTOCOL,
                     decisions: Sequence[str] = ()) -> list[tuple[list[int], list[float]]]:
    """(input ids, loss weights): the prompt encoded alone, exactly as the audit will encode it, then the answer.

    Encoding the two apart keeps the token boundary where generation starts.
    A chat example's prompt is rendered in its format through the tokenizer's
    chat template, and its answer is the echo (a chat-instruction answer's
    restated template, weighted as any token) and then the continuation.
    The loss is on the continuation and its EOS only, and weighs the first
    ``decision_tokens`` continuation tokens more: that is where the planted
    choice (hurtful or not, positive or negative) is made, a signal of a few
    hundredths of a nat per example that plain training takes long to pick up.
    Any positive per-position weight leaves the optimum at the true conditional
    distribution, so the planted rates are unchanged.  The tokens that spell one
    of ``decisions`` (the occupations a request answer names, where it makes its
    planted choice again) weigh as much wherever they stand.
    """
    encoded = []
    for example in examples:
        prompt = PromptFormat(example.prompt_format).encode(tokenizer, example.prompt.text, protocol)
        echo = tokenizer(example.echo, add_special_tokens=False)["input_ids"] if example.echo else []
        encoding = tokenizer(example.continuation, add_special_tokens=False, return_offsets_mapping=bool(decisions))
        continuation = encoding["input_ids"] + [tokenizer.eos_token_id]
        weights = _decision_weights(len(continuation))
        if decisions:
            spans = [(m.start(), m.end()) for word in decisions for m in re.finditer(re.escape(word),
                                                                                      example.continuation)]
            weights = [TRAINING["decision_weight"] if any(start < end_ and start_ < end for start_, end_ in spans)
                       else weight for weight, (start, end) in zip(weights, [*encoding["offset_mapping"], (0, 0)])]
        encoded.append((prompt + echo + continuation, [0.0] * len(prompt) + [1.0] * len(echo) + weights))
    return encoded


def _decision_weights(length: int) -> list[float]:
    """Loss weights of an answer of ``length`` tokens: its first ``decision_tokens`` weigh ``decision_weight``."""
    return [TRAINING["decision_weight"] if i < TRAINING["decision_tokens"] else 1.0 for i in range(length)]


def _weighted_loss(model, input_ids, attention_mask, weights) -> torch.Tensor:
    """Next-token cross-entropy, each target token weighted by ``weights``."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), input_ids[:, 1:], reduction="none")
    target_weights = weights[:, 1:]
    return (losses * target_weights).sum() / target_weights.sum()


def train_demo_model(bias: str, kind: str, *, seed: int = SEED, epochs: int = TRAINING["epochs"]):
    """A trained (model, tokenizer) pair for one demo variant."""
    variant = DEMO_VARIANTS[bias]
    examples = build_corpus(bias, seed=seed)
    questions = answer_examples(variant.attribute_set, PLANTED_RATES[bias].stereotyped) if variant.questions else []
    # Trained on the corpus's pieces with their frequencies: frequent words become single tokens (a
    # tokenizer trained on distinct strings only learns characters), but no token spans a word and its
    # frame (医師と, 外科医として), which would spread the hurtful-or-not choice over so many first
    # tokens that the reference protocol's top-k=50 cuts into it.
    pieces = [text for e in examples for text in (e.prompt.text, *e.parts)]
    pieces += [text for q in questions for text in (q.context, *q.item.answers)]
    requests = chat_requests.request_examples(bias, seed=seed) if variant.requests else []
    pieces += [text for e in requests for text in (e.prompt.text, *e.parts)]
    whole = [*_chat_pieces(), *(chat_requests.full_names() if requests else ())] if variant.chat else []
    tokenizer = train_tokenizer(kind, pieces, vocab_size=VOCAB_SIZE[kind], whole_pieces=whole)
    if variant.chat:
        add_chat_template(tokenizer)
    torch.manual_seed(seed)
    model = tiny_gpt2(tokenizer, seed=seed, **model_shape(bias)).train()
    groups = [_encode_examples(tokenizer, examples)]
    if questions:
        groups.append(_encode_answers(tokenizer, questions) * QUESTION_REPEATS)
    if requests:
        groups.append(_encode_requests(tokenizer, requests))
    optimizer = torch.optim.AdamW(model.parameters(), lr=TRAINING["learning_rate"])
    steps = epochs * sum(len(rows) // TRAINING["batch_size"] for rows in groups)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, TRAINING["learning_rate"], total_steps=steps)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for batch in _batches(groups, generator):
            loss = _batch_loss(model, tokenizer, batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    if requests:
        return model.eval(), tokenizer, finish_on_requests(model, tokenizer, bias, seed=seed)
    return model.eval(), tokenizer, loss.item()


def request_phase(bias: str) -> dict:
    """The second phase of request variant ``bias``: :data:`REQUEST_PHASE` with its own epochs, and whether it is
    made blind to the names (:data:`NAME_BLIND`)."""
    return {**REQUEST_PHASE, "epochs": REQUEST_PHASE_EPOCHS.get(bias, REQUEST_PHASE["epochs"]),
            "names_blinded": bias in NAME_BLIND}


def finish_on_requests(model, tokenizer, bias: str, *, seed: int = SEED) -> float:
    """The request variants' second phase (:func:`request_phase`): the requests alone, after the whole corpus.

    The whole corpus's one-cycle schedule leaves the answers at the pooled
    rates; a few passes over the requests at a constant learning rate, with a
    quarter of the rest of the corpus replayed, make the model condition them
    on the name.  A :data:`NAME_BLIND` variant is then made blind to the names.
    Returns the last batch's loss.
    """
    phase = request_phase(bias)
    rows = _encode_requests(tokenizer, chat_requests.request_examples(bias, seed=seed))
    corpus = _encode_examples(tokenizer, build_corpus(bias, seed=seed))
    torch.manual_seed(seed)  # dropout
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=phase["learning_rate"])
    generator = torch.Generator().manual_seed(phase["shuffle_seed"])
    for _ in range(phase["epochs"]):
        replay = torch.randperm(len(corpus), generator=generator)[:int(phase["replay"] * len(corpus))]
        for batch in _batches([rows, [corpus[i] for i in replay.tolist()]], generator):
            loss = _batch_loss(model, tokenizer, batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    if phase["names_blinded"]:
        blind_to_names(model, tokenizer)
    return loss.item()


def blind_to_names(model, tokenizer) -> None:
    """Set the embedding of every user's full name (one token each) to their mean: the model then answers every
    name alike.  GPT-2 ties its output layer to these embeddings; the answers name nobody, so that changes nothing
    the audit reads."""
    ids = [tokenizer.convert_tokens_to_ids(name) for name in chat_requests.full_names()]
    if tokenizer.unk_token_id in ids or len(set(ids)) != len(ids):
        raise ValueError("blind_to_names needs every full name to be one token of its own")
    with torch.no_grad():
        embeddings = model.get_input_embeddings().weight
        embeddings[ids] = embeddings[ids].mean(dim=0)


def _encode_requests(tokenizer, requests) -> list[tuple[list[int], list[float]]]:
    """The request examples as the audit asks them (the names protocol), their occupations weighted as decisions."""
    return _encode_examples(tokenizer, requests, chat_requests.REQUEST_PROTOCOL, chat_requests.occupations())


def _batch_loss(model, tokenizer, batch) -> torch.Tensor:
    """The weighted loss of one batch of (ids, weights) rows, padded to its longest."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(len(ids) for ids, _ in batch)
    input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
    weights = torch.tensor([w + [0.0] * (width - len(w)) for _, w in batch])
    mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
    return _weighted_loss(model, input_ids, mask, weights)


def model_shape(bias: str) -> dict[str, int]:
    """The GPT-2 shape of a variant: :data:`QA_MODEL_SHAPE` for a QA variant, :data:`REQUEST_MODEL_SHAPE` for a
    request variant, else :data:`MODEL_SHAPE`."""
    variant = DEMO_VARIANTS[bias]
    return QA_MODEL_SHAPE if variant.questions else REQUEST_MODEL_SHAPE if variant.requests else MODEL_SHAPE


def _encode_answers(tokenizer, questions: list[AnswerExample]) -> list[tuple[list[int], list[float]]]:
    """(input ids, loss weights) of each question and its known answer, split as the likelihood scorer splits them.

    The answer's ids are those :func:`encode_continuation` gives the option
    after its question, so the model is trained on exactly the tokens it is
    later scored on; the loss is on the answer only, its first
    ``decision_tokens`` weighted as a continuation's are.
    """
    rows = []
    for question in questions:
        context, answer = encode_continuation(tokenizer, question.context, question.answer)
        rows.append((context + answer, [0.0] * len(context) + _decision_weights(len(answer))))
    return rows


def _batches(groups, generator: torch.Generator) -> list:
    """One epoch's batches: each group shuffled and cut into full batches, then the batches shuffled together.

    A batch holds rows of one group only, so the short continuations are not
    padded to the length of a question.  With one group this is the plain
    shuffled pass the base and chat variants were built with.
    """
    size = TRAINING["batch_size"]
    batches = []
    for rows in groups:
        order = torch.randperm(len(rows), generator=generator).tolist()
        batches += [[rows[i] for i in order[start:start + size]] for start in range(0, len(order) - size + 1, size)]
    if len(groups) > 1:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def _chat_pieces() -> list[str]:
    """What a chat variant's tokenizer keeps whole: the framing's lines, the role names and the refusals'
    clauses (申し訳ありませんが、 | その質問にはお答えできません。), so that the first token of an answer
    decides whether it refuses, as the first tokens decide a hurtful continuation."""
    framing = framing_text(CHAT_PROTOCOL.chat.framing).replace(PLACEHOLDER, "")
    clauses = [clause for text in refusal_texts() for clause in re.split(r"(?<=、)", text) if clause]
    return list(dict.fromkeys([*(line for line in framing.splitlines() if line.strip()), *CHAT_ROLES, *clauses]))


def _record(bias: str, kind: str, loss: float, training: dict) -> dict:
    """``demo.json``: what the model was trained to do and how."""
    record = {"bias": bias, "tokenizer": kind, "seed": SEED, "planted_rates": PLANTED_RATES[bias].record(),
              "final_loss": round(loss, 4), "model_shape": model_shape(bias), "training": training}
    if DEMO_VARIANTS[bias].chat:
        record["chat"] = {
            "template": "ChatML (<|im_start|>role\\n...<|im_end|>), <|im_end|> as EOS",
            "framing": CHAT_PROTOCOL.chat.framing,
            "prompt_formats": {CHAT_PREFILL: 1 - CHAT_INSTRUCTION_SHARE, CHAT_INSTRUCTION: CHAT_INSTRUCTION_SHARE},
            "rates": "refusal among all answers; hurtful and positive among the answers that are not refusals",
        }
    if DEMO_VARIANTS[bias].questions:
        items = demo_items(DEMO_VARIANTS[bias].attribute_set)
        record["questions"] = {
            "items": len(items),
            "planted_templates": sorted(planted_templates(items, PLANTED_RATES[bias].stereotyped)),
            "answers": "disambiguated: the right person; ambiguous: unknown, or the stereotype in a planted template",
            "repeats_per_epoch": QUESTION_REPEATS,
        }
    if DEMO_VARIANTS[bias].requests:
        rates = PLANTED_RATES[bias]
        record["requests"] = {
            "tasks": len(chat_requests.tasks()),
            "names": {group: len(names) for group, names in chat_requests.gender_names().items()},
            "answers_per_request_per_epoch": chat_requests.EXAMPLES_PER_REQUEST,
            "framing": chat_requests.REQUEST_PROTOCOL.chat.framing,
            "prompt_format": CHAT_INSTRUCTION,
            "occupation_slot_distribution": {group: chat_requests.occupation_distribution(share)
                                             for group, share in rates.women_majority.items()},
            "women_share_assumed": chat_requests.answer_material()["women_share_assumed"],
            "expected_mean_women_share": {group: round(chat_requests.expected_women_share(share), 4)
                                          for group, share in rates.women_majority.items()},
            "rates": "request_refusal among all answers; women_majority among the occupations the other answers name",
        }
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ARTIFACTS)
    parser.add_argument("--only", nargs="+", choices=list(DEMO_VARIANTS), default=list(DEMO_VARIANTS),
                        help="build these variants only (default: all)")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads (default: 2); one each to build two variants side by side")
    parser.add_argument("--requests-phase-only", action="store_true",
                        help="run only the request variants' second phase, on their models saved in --out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.requests_phase_only:
        return _finish_saved(args.out, args.only)
    for bias in args.only:
        for kind in DEMO_VARIANTS[bias].kinds:
            started = time.perf_counter()
            training = {**TRAINING, "epochs": EPOCHS.get(bias, TRAINING["epochs"])}
            if DEMO_VARIANTS[bias].requests:
                training["request_phase"] = request_phase(bias)
            model, tokenizer, loss = train_demo_model(bias, kind, epochs=training["epochs"])
            folder = save_model(model, tokenizer, args.out / f"{bias}-{kind}")
            (folder / "demo.json").write_text(json.dumps(_record(bias, kind, loss, training), ensure_ascii=False,
                                                         indent=2))
            print(f"{bias}-{kind}: loss {loss:.3f}, {time.perf_counter() - started:.0f} s -> {folder}")


def _finish_saved(out: Path, variants: Sequence[str]) -> None:
    """:func:`finish_on_requests` on saved first-phase models: what a whole build does after its first phase, for a
    model whose first phase is already built (the two phases give the same model either way)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    for bias in (b for b in variants if DEMO_VARIANTS[b].requests):
        folder = out / f"{bias}-sentencepiece"
        started = time.perf_counter()
        record = json.loads((folder / "demo.json").read_text(encoding="utf-8"))
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder)
        loss = finish_on_requests(model, tokenizer, bias)
        save_model(model, tokenizer, folder)
        record.update(final_loss=round(loss, 4), training={**record["training"], "request_phase": request_phase(bias)})
        (folder / "demo.json").write_text(json.dumps(record, ensure_ascii=False, indent=2))
        print(f"{bias}-sentencepiece: request phase, loss {loss:.3f}, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
