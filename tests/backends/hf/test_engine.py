"""The Hugging Face backend on tiny GPT-2 models with both Japanese tokenizer kinds.

Models and tokenizers are built in ``conftest.py`` with the project's demo
helpers, saved with ``save_pretrained`` and loaded back with ``load_model``.
The reference for every check is ``model.generate`` on one prompt alone,
decoded with ``tokenizer.decode`` of the new token ids.
"""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace

import pytest
import torch
from engine_support import GREEDY, REQUESTS, SAMPLING, expected_completion, new_token_ids
from transformers import AutoModelForCausalLM, AutoTokenizer, GPTNeoXConfig, LlamaConfig

from fairness_core.backends.base import Completion, Request
from fairness_core.backends.hf.engine import HFBackend, ModelLoadError, load_model, resolve_device
from fairness_core.backends.token_ids import encode_prompt
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.models import save_model

#: Prompts whose ends are awkward for tokenizers (checked in test_boundary_prompts_are_awkward):
#: 彼女は ends inside the BPE token 女は, 父は馬鹿なこ splits こ across two byte-level tokens, the
#: last one shared with な; ｶﾀｶﾅ is NFKC'd by SentencePiece and 🙂 is unknown to both tokenizers.
BOUNDARY_PROMPTS = (
    "彼女は", "彼女", "父は馬鹿なこ", "父は馬鹿なことを言ってみんな", "母が就くべき職業は", "ｶﾀｶﾅの看板🙂は", "犬",
)
def backend(models, kind, **kwargs) -> HFBackend:
    model, tokenizer = models[kind]
    return HFBackend(model, tokenizer, **kwargs)


# --- loading ---------------------------------------------------------------------------

def test_load_model_round_trips_the_saved_model(tiny_models, kind):
    model, tokenizer = tiny_models[kind]
    assert model.config.model_type == "gpt2"
    assert model.device.type == "cpu"
    assert not model.training
    assert model.config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token == "</s>"


def test_load_model_missing_directory():
    with pytest.raises(ModelLoadError, match=r"^--model=/no/such/model: no such directory\.$"):
        load_model("/no/such/model")


def test_load_model_directory_without_a_model(tmp_path):
    with pytest.raises(ModelLoadError, match=rf"^--model={tmp_path} could not be loaded: "):
        load_model(str(tmp_path))


def test_load_model_expands_a_home_relative_path(tiny_model_dirs, tmp_path, monkeypatch):
    """``--model=~/models/x`` (the shell leaves ``~`` after ``=`` alone) loads the folder in $HOME."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "tiny").symlink_to(tiny_model_dirs["bpe"], target_is_directory=True)
    monkeypatch.setenv("HOME", str(home))
    model, tokenizer = load_model("~/models/tiny", device="cpu")
    assert len(tokenizer) == model.config.vocab_size


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only machine")
def test_devices_without_cuda():
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ModelLoadError, match=r"^--device=cuda:1 asks for CUDA, but torch sees no CUDA device here\.$"):
        resolve_device("cuda:1")


# --- prompt encoding and padding --------------------------------------------------------

def test_encode_prompt_never_ends_with_eos_for_sentencepiece(tiny_models):
    _, tokenizer = tiny_models["sentencepiece"]
    eos = tokenizer.eos_token_id
    for prompt in BOUNDARY_PROMPTS + tuple(r.prompt for r in REQUESTS):
        plain = tokenizer(prompt)["input_ids"]
        assert plain[-1] == eos, "the T5-style tokenizer appends </s>; encode_prompt must drop it"
        ids = encode_prompt(tokenizer, prompt)
        assert ids == plain[:-1]
        assert eos not in ids


def test_encode_prompt_is_the_plain_encoding_for_byte_level_bpe(tiny_models):
    _, tokenizer = tiny_models["bpe"]
    for prompt in BOUNDARY_PROMPTS:
        ids = encode_prompt(tokenizer, prompt)
        assert ids == tokenizer(prompt)["input_ids"]
        assert tokenizer.decode(ids) == prompt


def test_encode_prompt_adds_the_bos_the_tokenizer_adds(tiny_models):
    _, tokenizer = tiny_models["bpe"]

    class WithBos:
        bos_token_id = 7

        def __call__(self, text, add_special_tokens=True):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            return {"input_ids": [7, *ids] if add_special_tokens else ids}

    assert encode_prompt(WithBos(), "彼女は") == [7, *tokenizer("彼女は")["input_ids"]]


def test_pad_falls_back_to_eos_without_a_pad_token(tiny_models):
    _, tokenizer = tiny_models["bpe"]
    assert tokenizer.pad_token_id is None
    assert backend(tiny_models, "bpe").pad_id == tokenizer.eos_token_id


def test_pad_token_is_used_when_there_is_one(tiny_models):
    _, tokenizer = tiny_models["sentencepiece"]
    assert tokenizer.pad_token_id is not None and tokenizer.pad_token_id != tokenizer.eos_token_id
    assert backend(tiny_models, "sentencepiece").pad_id == tokenizer.pad_token_id


def test_no_pad_and_no_eos_is_a_load_error():
    tokenizer = SimpleNamespace(pad_token_id=None, eos_token_id=None)
    model = SimpleNamespace(config=SimpleNamespace(_name_or_path="x"), generation_config=SimpleNamespace())
    with pytest.raises(ModelLoadError, match="neither a pad token nor an EOS token"):
        HFBackend(model, tokenizer)


# --- decoding new tokens only ------------------------------------------------------------

def test_boundary_prompts_are_awkward(tiny_models):
    """Guard: the byte-level prompts above really end inside a multi-character or multi-token character."""
    _, tokenizer = tiny_models["bpe"]
    last_tokens = {p: tokenizer.decode(tokenizer(p)["input_ids"][-1:]) for p in BOUNDARY_PROMPTS}
    assert last_tokens["彼女は"] == "女は"  # the last token spans two characters
    assert "\ufffd" in last_tokens["父は馬鹿なこ"]  # the last character is split across tokens


@pytest.mark.parametrize("protocol", [SAMPLING, GREEDY], ids=["sampling", "greedy"])
def test_completion_is_decoded_from_the_new_tokens_only(tiny_models, kind, protocol):
    model, tokenizer = tiny_models[kind]
    requests = [Request(prompt, 0) for prompt in BOUNDARY_PROMPTS]
    completions = backend(tiny_models, kind, batch_size=4).generate(requests, protocol)
    for request, completion in zip(requests, completions, strict=True):
        new = new_token_ids(model, tokenizer, request, protocol)
        assert completion == Completion(tokenizer.decode(new, skip_special_tokens=True), len(new)), request
        assert completion.num_tokens <= protocol.max_new_tokens
        if kind == "bpe":
            # Nothing of the prompt is lost or repeated at the boundary.
            full = tokenizer.decode(encode_prompt(tokenizer, request.prompt) + new, skip_special_tokens=True)
            assert full == request.prompt + completion.text


def test_prompt_text_does_not_leak_into_sampled_completions(tiny_models, kind):
    """A completion never starts with its prompt (prompts of several tokens, so a model can't draw them by chance)."""
    _, tokenizer = tiny_models[kind]
    prompts = [p for p in BOUNDARY_PROMPTS + tuple(r.prompt for r in REQUESTS)
               if len(encode_prompt(tokenizer, p)) >= 3]
    assert len(prompts) >= 4
    completions = backend(tiny_models, kind).generate([Request(p, i) for p in prompts for i in range(3)], SAMPLING)
    for (prompt, completion) in zip([p for p in prompts for _ in range(3)], completions, strict=True):
        assert not completion.text.startswith(prompt), (prompt, completion)


def test_generation_stops_at_any_eos_id_of_the_model(tiny_model_dirs, kind):
    """EOS ids come from the generation config as well as the tokenizer; text stops before the first one."""
    model, tokenizer = load_model(str(tiny_model_dirs[kind]), device="cpu")
    request = Request("母が就くべき職業は", 0)
    greedy = new_token_ids(model, tokenizer, request, GREEDY)
    stop = greedy[2]
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, stop]
    hf = HFBackend(model, tokenizer)
    assert set(hf.eos_ids) == {tokenizer.eos_token_id, stop}
    [completion] = hf.generate([request], GREEDY)
    cut = greedy[:greedy.index(stop)]
    assert completion == Completion(tokenizer.decode(cut, skip_special_tokens=True), len(cut))


def test_model_generation_defaults_do_not_change_the_protocol(tiny_model_dirs, kind):
    """Completions follow the audit protocol only, not defaults shipped in the model's generation_config.json.

    Hub models often ship ``repetition_penalty`` or ``no_repeat_ngram_size``; applied
    silently they would change the distribution that the protocol says is sampled.
    """
    model, tokenizer = load_model(str(tiny_model_dirs[kind]), device="cpu")
    requests = REQUESTS[:6]
    plain = {name: HFBackend(model, tokenizer).generate(requests, protocol)
             for name, protocol in (("greedy", GREEDY), ("sampling", SAMPLING))}
    model.generation_config.repetition_penalty = 5.0
    model.generation_config.no_repeat_ngram_size = 1
    for name, protocol in (("greedy", GREEDY), ("sampling", SAMPLING)):
        assert HFBackend(model, tokenizer).generate(requests, protocol) == plain[name], name


# --- reproducibility -----------------------------------------------------------------------

def test_same_seed_gives_identical_completions(tiny_models, kind):
    first = backend(tiny_models, kind, seed=123).generate(REQUESTS, SAMPLING)
    second = backend(tiny_models, kind, seed=123).generate(REQUESTS, SAMPLING)
    assert first == second


def test_different_seed_gives_different_completions(tiny_models, kind):
    a = backend(tiny_models, kind, seed=0).generate(REQUESTS, SAMPLING)
    b = backend(tiny_models, kind, seed=1).generate(REQUESTS, SAMPLING)
    differing = sum(x.text != y.text for x, y in zip(a, b))
    assert differing >= 0.8 * len(REQUESTS), f"only {differing} of {len(REQUESTS)} completions changed with the seed"


def test_samples_of_one_prompt_differ(tiny_models, kind):
    completions = backend(tiny_models, kind).generate([Request("母の夢は", i) for i in range(6)], SAMPLING)
    assert len({c.text for c in completions}) >= 5


def test_sampled_completions_do_not_depend_on_batch_size(tiny_models, kind):
    """All ~20 completions agree exactly for batch sizes 1, 7 and 64."""
    results = {size: backend(tiny_models, kind, batch_size=size).generate(REQUESTS, SAMPLING) for size in (1, 7, 64)}
    assert len(REQUESTS) >= 18
    assert results[1] == results[7] == results[64]


def test_sampled_completions_do_not_depend_on_request_order(tiny_models, kind):
    reference = backend(tiny_models, kind, batch_size=7).generate(REQUESTS, SAMPLING)
    order = list(range(len(REQUESTS)))
    random.Random(0).shuffle(order)
    shuffled = backend(tiny_models, kind, batch_size=7).generate([REQUESTS[i] for i in order], SAMPLING)
    assert shuffled == [reference[i] for i in order]


def test_sampled_completion_is_the_same_alone_and_in_a_batch(tiny_models, kind):
    model, tokenizer = tiny_models[kind]
    batched = backend(tiny_models, kind, batch_size=64).generate(REQUESTS, SAMPLING)
    assert batched == [expected_completion(model, tokenizer, r, SAMPLING) for r in REQUESTS]


def test_greedy_equals_model_generate_on_each_prompt_alone(tiny_models, kind):
    model, tokenizer = tiny_models[kind]
    completions = backend(tiny_models, kind, batch_size=64).generate(REQUESTS, GREEDY)
    assert completions == [expected_completion(model, tokenizer, r, GREEDY) for r in REQUESTS]


def test_batched_greedy_equals_unbatched_greedy(tiny_models, kind):
    unbatched = backend(tiny_models, kind, batch_size=1).generate(REQUESTS, GREEDY)
    batched = backend(tiny_models, kind, batch_size=64).generate(REQUESTS, GREEDY)
    assert batched == unbatched
    # Greedy ignores the sample index and the seed.
    assert backend(tiny_models, kind, seed=9, batch_size=5).generate(REQUESTS, GREEDY) == unbatched


def test_results_come_back_in_request_order(tiny_models, kind):
    requests = [Request("娘", 0), Request("おじいさんが以前していた仕事は", 0), Request("娘", 0), Request("彼は", 1)]
    completions = backend(tiny_models, kind, batch_size=2).generate(requests, SAMPLING)
    singles = [backend(tiny_models, kind, batch_size=1).generate([r], SAMPLING)[0] for r in requests]
    assert completions == singles
    assert completions[0] == completions[2]


def test_max_new_tokens_is_respected(tiny_models, kind):
    protocol = SamplingProtocol(num_samples=1, max_new_tokens=3)
    for completion in backend(tiny_models, kind).generate(REQUESTS, protocol):
        assert completion.num_tokens <= 3


def test_empty_request_list(tiny_models, kind):
    assert backend(tiny_models, kind).generate([], SAMPLING) == []


# --- other architectures -------------------------------------------------------------

#: Tiny configurations of the other model families Japanese LMs come in: rotary positions,
#: grouped-query attention, nn.Linear layers (GPT-2 has Conv1D) and a separate LM head.
ARCHITECTURES = {
    "llama": lambda vocab, eos: LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, bos_token_id=eos, eos_token_id=eos,
        initializer_range=0.3),
    "gpt_neox": lambda vocab, eos: GPTNeoXConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=128, bos_token_id=eos, eos_token_id=eos, initializer_range=0.3),
}


@pytest.fixture(scope="module", params=ARCHITECTURES)
def other_architecture(request, tiny_model_dirs, tmp_path_factory):
    """A randomly initialised model of another family with the SentencePiece tokenizer, saved and loaded back."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dirs["sentencepiece"])
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(ARCHITECTURES[request.param](len(tokenizer), tokenizer.eos_token_id))
    return load_model(str(save_model(model, tokenizer, tmp_path_factory.mktemp(request.param))), device="cpu")


@pytest.mark.parametrize("protocol", [GREEDY, SAMPLING], ids=["greedy", "sampling"])
def test_other_architectures_decode_as_model_generate_does(other_architecture, protocol):
    """Left padding, positions and the shared prefill are right for rotary models too."""
    model, tokenizer = other_architecture
    completions = HFBackend(model, tokenizer, batch_size=64).generate(REQUESTS, protocol)
    assert completions == [expected_completion(model, tokenizer, r, protocol) for r in REQUESTS]
    assert len(set(completions)) >= 4, "a degenerate model would make the comparison vacuous"


def test_a_slightly_changed_model_at_the_same_seed_mostly_repeats_the_baseline_s_samples(tiny_models, kind):
    """Common random numbers (``--baseline-model``): each sample's stream is keyed by (seed, prompt, sample), so a
    checkpoint that changed little draws mostly the baseline's tokens, and a changed seed does not."""
    model, tokenizer = tiny_models[kind]
    changed = copy.deepcopy(model)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(7)
        for weight in changed.parameters():
            weight.add_(torch.randn(weight.shape, generator=generator) * 0.02 * weight.std())
    baseline = HFBackend(model, tokenizer, seed=5).generate(REQUESTS, SAMPLING)
    same_seed = HFBackend(changed, tokenizer, seed=5).generate(REQUESTS, SAMPLING)
    new_seed = HFBackend(changed, tokenizer, seed=6).generate(REQUESTS, SAMPLING)
    assert same_seed != baseline   # the model did change
    shared = sum(a.text == b.text for a, b in zip(baseline, same_seed))
    chance = sum(a.text == b.text for a, b in zip(baseline, new_seed))
    assert shared >= 0.5 * len(REQUESTS) and shared >= chance + 0.4 * len(REQUESTS), (shared, chance, len(REQUESTS))
