"""The request demo models (``demo:chat-names``, ``demo:chat-names-biased``): their corpus, and their known answers.

Both are ``demo:chat`` plus the name-based chat requests of the names
evaluation (every task with every gender name, the user turn as is,
``chat-instruction``), answered with occupations in the career, study and story
domains and refused at a planted rate (:mod:`fairness_core.demo.chat_requests`).
``demo:chat-names-biased`` names women-majority occupations for 0.75 of a
female-named user's occupations and 0.25 of a male-named user's, and refuses them
at 0.20 and 0.05; ``demo:chat-names`` treats both alike (0.50, 0.05).

The known-answer tests load each model as an audit loads it (the HF backend) and
generate at the names protocol (200 new tokens, top-k 50), one sample of each
career, study and story task per name (576 answers per model, about 20 s).  The
unit of every interval is the name (16 per group), resampled within its group: a
name is what the audit varies, and one name's answers share it.  The tolerances
were fixed before the models were measured:

* a skew must be found: the biased model's 95% interval of each gap excludes 0,
  which a model without the skew (its interval around 0) fails 39 times in 40;
* it must be near the planted value: that interval reaches within
  :data:`UNDERFIT` of it (the 96-wide demo models under-fit a planted choice a
  little, as demo:chat-biased's refusals do, ``REFUSAL_UNDERFIT``) and starts
  no more than 0.05 above it;
* the fair model's interval of each gap holds 0, and its point lies within +-0.08
  (about 1.5 times the interval's half-width at this sample size).
"""

import json
import unicodedata
from collections import Counter

import pytest
from transformers import AutoConfig, AutoTokenizer

from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.demo.build import TRAINING, _encode_examples, model_shape
from fairness_core.demo.chat_requests import (
    OCCUPATION_DOMAINS,
    REQUEST_PROTOCOL,
    answer_material,
    gender_names,
    occupation_lists,
    request_examples,
    request_prompts,
    tasks,
)
from fairness_core.demo.corpus import PLANTED_RATES, build_corpus
from fairness_core.demo.request_rates import (
    NameAnswers,
    find_occupations,
    mean_women_share,
    measure,
    refusal_rate,
    request_variants,
    women_majority_share,
)
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.run.demo_names import UnknownDemoError, demo_names, resolve_demo
from fairness_core.statistics import bootstrap_interval

GROUPS = ("female", "male")
#: How far below its planted value a gap measured on a request model may sit (see the module's docstring).
UNDERFIT = 0.10


def test_request_demo_names_resolve():
    assert request_variants() == ["chat-names", "chat-names-biased"]
    assert {"demo:chat-names", "demo:chat-names-biased"} <= set(demo_names())
    assert resolve_demo("demo:chat-names-biased").name == "chat-names-biased-sentencepiece"
    with pytest.raises(UnknownDemoError, match=r"Unknown demo model 'demo:chat-names:bpe'\."):
        resolve_demo("demo:chat-names:bpe")


def test_requests_are_every_task_with_every_gender_name():
    prompts = request_prompts()
    names = gender_names()
    assert len(prompts) == len(tasks()) * sum(len(group) for group in names.values())
    for prompt in prompts:
        assert prompt.term in names[prompt.group] and prompt.term in prompt.text and "[NAME]" not in prompt.text
        assert prompt.text == unicodedata.normalize("NFKC", prompt.text)


def test_the_rest_of_their_corpus_is_demo_chats():
    """HONEST and sentiment behave as on demo:chat because the models see exactly its examples besides the requests."""
    chat = build_corpus("chat", seed=7)
    assert build_corpus("chat-names", seed=7) == chat and build_corpus("chat-names-biased", seed=7) == chat


@pytest.fixture(scope="module", params=["chat-names", "chat-names-biased"])
def corpus(request):
    return request.param, request_examples(request.param, seed=7)


def test_the_corpus_holds_exactly_the_planted_rates(corpus):
    """Refusals as the audit's detector reads them; occupations as words of the demo's two lists."""
    bias, examples = corpus
    detector = RefusalDetector.from_package_data()
    women = set(occupation_lists()[0])
    refused, answers, named, from_women = Counter(), Counter(), Counter(), Counter()
    for example in examples:
        group = example.prompt.group
        answers[group] += 1
        if detector.detect(example.continuation) is not None:
            assert example.refused
            refused[group] += 1
            continue
        occupations = find_occupations(example.continuation)
        named[group] += len(occupations)
        from_women[group] += sum(o in women for o in occupations)
    rates = PLANTED_RATES[bias]
    for group in GROUPS:
        assert refused[group] / answers[group] == pytest.approx(rates.request_refusal[group], abs=2e-3)
        assert from_women[group] / named[group] == pytest.approx(rates.women_majority[group], abs=5e-3)


def test_answers_name_occupations_only_where_the_domain_asks_and_as_many_as_the_task_asks(corpus):
    _, examples = corpus
    task_of = {task.id: task for task in tasks()}
    for example in (e for e in examples if not e.refused):
        task = task_of[example.prompt.template_id]
        expected = (task.items or 1) if task.domain in OCCUPATION_DOMAINS else 0
        assert len(find_occupations(example.continuation)) == expected, (task.id, example.continuation)
        assert example.prompt.term not in example.continuation


def test_every_request_refusal_is_detected_and_no_answer_is():
    detector = RefusalDetector.from_package_data()
    material = answer_material()
    assert [text for text in material["refusals"] if detector.detect(text) is None] == []
    filled = [frame.replace("{occupations}", "看護師、医師、大工") for frames in material["answers"].values()
              for frame in frames]
    assert [text for text in filled if detector.detect(text) is not None] == []


def test_request_examples_are_the_user_turn_as_is_then_the_answer():
    """The prompt ids are those the audit feeds under the names protocol (the task itself as the user turn, then the
    assistant's turn opened), and the occupations weigh as the answer's first tokens do."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_demo("demo:chat-names-biased"))
    examples = request_examples("chat-names-biased", seed=7)[:40]
    occupations = [o for pool in occupation_lists() for o in pool]
    for example, (ids, weights) in zip(examples, _encode_examples(tokenizer, examples, REQUEST_PROTOCOL, occupations)):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": example.prompt.text}],
                                               add_generation_prompt=True, tokenize=True, return_dict=False)
        assert prompt == PromptFormat("chat-instruction").encode(tokenizer, example.prompt.text, REQUEST_PROTOCOL)
        assert ids[:len(prompt)] == prompt and set(weights[:len(prompt)]) == {0.0}
        assert ids[-1] == tokenizer.eos_token_id
        answer = tokenizer.decode(ids[len(prompt):], skip_special_tokens=True).replace(" ", "")
        assert answer == example.continuation
        heavy = tokenizer.decode([i for i, w in zip(ids, weights) if w == TRAINING["decision_weight"]])
        assert set(find_occupations(example.continuation)) <= set(find_occupations(heavy.replace(" ", "")))


@pytest.mark.parametrize("bias", ["chat-names", "chat-names-biased"])
def test_the_window_holds_the_longest_request_and_its_200_tokens(bias):
    folder = resolve_demo(f"demo:{bias}")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    longest = max(len(PromptFormat("chat-instruction").encode(tokenizer, prompt.text, REQUEST_PROTOCOL))
                  for prompt in request_prompts())
    positions = AutoConfig.from_pretrained(folder).n_positions
    assert longest + REQUEST_PROTOCOL.tokens_for("chat-instruction") <= positions, (longest, positions)
    assert positions == model_shape(bias)["n_positions"]


@pytest.mark.parametrize("bias", ["chat-names", "chat-names-biased"])
def test_demo_json_records_the_planted_and_the_measured_rates(bias):
    record = json.loads((resolve_demo(f"demo:{bias}") / "demo.json").read_text(encoding="utf-8"))
    requests = record["requests"]
    assert record["planted_rates"]["request_refusal"] == PLANTED_RATES[bias].request_refusal
    assert set(requests["occupation_slot_distribution"]) == set(GROUPS)
    for group in GROUPS:
        assert sum(requests["occupation_slot_distribution"][group].values()) == pytest.approx(1, abs=1e-3)
        assert set(requests["measured"][group]) >= {"refusal", "women_majority", "mean_women_share"}


# The known answers: the models as an audit loads and samples them.


@pytest.fixture(scope="module", params=["chat-names", "chat-names-biased"])
def measured(request):
    return request.param, measure(request.param, samples=1, domains=OCCUPATION_DOMAINS)


def _gap_interval(statistic, per_name) -> tuple[float, float, float]:
    """(female - male, low, high): the gap of ``statistic`` and its 95% interval, names resampled within groups."""
    female, male = (list(per_name[group].values()) for group in GROUPS)
    gap = lambda f, m: statistic(f) - statistic(m)  # noqa: E731
    low, high = bootstrap_interval(gap, [female, male], seed=0)
    return gap(female, male), low, high


def _planted_gaps(bias: str) -> dict[str, float]:
    rates = PLANTED_RATES[bias]
    expected = json.loads((resolve_demo(f"demo:{bias}") / "demo.json").read_text(encoding="utf-8"))[
        "requests"]["expected_mean_women_share"]
    return {"refusal": rates.request_refusal["female"] - rates.request_refusal["male"],
            "women_majority": rates.women_majority["female"] - rates.women_majority["male"],
            "mean_women_share": expected["female"] - expected["male"]}


@pytest.mark.parametrize("signal", ["women_majority", "mean_women_share", "refusal"])
def test_the_gap_between_female_and_male_named_users_is_the_planted_one(measured, signal):
    bias, per_name = measured
    statistic = {"refusal": refusal_rate, "women_majority": women_majority_share,
                 "mean_women_share": mean_women_share(answer_material()["women_share_assumed"])}[signal]
    value, low, high = _gap_interval(statistic, per_name)
    planted = _planted_gaps(bias)[signal]
    print(f"demo:{bias} {signal} gap: measured {value:.3f} [{low:.3f}, {high:.3f}], planted {planted:.3f}")
    if planted:
        assert low > 0, (value, low, high, planted)
        assert high >= planted - UNDERFIT and low <= planted + 0.05, (value, low, high, planted)
    else:
        assert low <= 0 <= high and abs(value) <= 0.08, (value, low, high)


def test_answers_are_short_and_end(measured):
    """Answers end with their turn (EOS) well inside the 200-token window."""
    _, per_name = measured
    names: list[NameAnswers] = [n for group in per_name.values() for n in group.values()]
    answers = sum(n.answers for n in names)
    assert sum(n.ended for n in names) / answers >= 0.95
    assert sorted(t for n in names for t in n.tokens)[int(0.99 * answers)] < 150
