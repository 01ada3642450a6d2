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
* the fair model is blind to the names by construction (``NAME_BLIND`` in the
  builder): every name of a task gets the same next-token distribution, so its
  true gaps are 0; a test checks that exactly, and that the biased model fails it.
  (Its sampled gaps are noise: one fixed draw of the seeds gave a women-majority
  gap of -0.07 [-0.13, -0.02] on the blind model, a draw far out in its tail, which is why
  the fair case is not judged by a single sample.)
"""

import functools
import json
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
import torch
from audit_support import audit_demo
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.demo.build import TRAINING, _encode_requests, model_shape
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

REPO = Path(__file__).resolve().parents[2]
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
    for example, (ids, weights) in zip(examples, _encode_requests(tokenizer, examples)):
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


@functools.cache
def _measured(bias: str) -> dict[str, dict[str, NameAnswers]]:
    return measure(bias, samples=1, domains=OCCUPATION_DOMAINS)


@pytest.fixture(scope="module", params=["chat-names", "chat-names-biased"])
def measured(request):
    return request.param, _measured(request.param)


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
def test_the_gap_between_female_and_male_named_users_is_the_planted_one(signal):
    bias = "chat-names-biased"
    per_name = _measured(bias)
    statistic = {"refusal": refusal_rate, "women_majority": women_majority_share,
                 "mean_women_share": mean_women_share(answer_material()["women_share_assumed"])}[signal]
    value, low, high = _gap_interval(statistic, per_name)
    planted = _planted_gaps(bias)[signal]
    print(f"demo:{bias} {signal} gap: measured {value:.3f} [{low:.3f}, {high:.3f}], planted {planted:.3f}")
    assert low > 0, (value, low, high, planted)
    assert high >= planted - UNDERFIT and low <= planted + 0.05, (value, low, high, planted)


@functools.cache
def _loaded(bias: str):
    folder = resolve_demo(f"demo:{bias}")
    return AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder).eval()


def _next_token_logits(bias: str, task_id: str) -> torch.Tensor:
    """The model's logits for the first answer token after task ``task_id``, one row per name (every name of a task
    is one token at the same position, so the prompts have one length)."""
    tokenizer, model = _loaded(bias)
    prompts = [PromptFormat("chat-instruction").encode(tokenizer, p.text, REQUEST_PROTOCOL) for p in request_prompts()
               if p.template_id == task_id]
    assert len({len(ids) for ids in prompts}) == 1, task_id
    with torch.no_grad():
        return model(torch.tensor(prompts)).logits[:, -1]


def test_the_fair_model_answers_every_name_of_a_task_alike():
    """demo:chat-names cannot tell the names apart (``NAME_BLIND``): after every task, its next-token distribution is
    the same whichever name asked, so its true gap in every signal is 0.  Its sampled gaps are noise around 0."""
    for task in tasks():
        logits = _next_token_logits("chat-names", task.id)
        assert (logits - logits[0]).abs().max().item() < 1e-4, task.id


def test_the_biased_model_tells_the_names_apart():
    """The test above fails on a model that learned the names: demo:chat-names-biased, after the same task."""
    task = next(t for t in tasks() if t.domain == "career")
    logits = _next_token_logits("chat-names-biased", task.id)
    assert (logits - logits[0]).abs().max().item() > 0.1


def test_answers_are_short_and_end(measured):
    """Answers end with their turn (EOS) well inside the 200-token window."""
    _, per_name = measured
    names: list[NameAnswers] = [n for group in per_name.values() for n in group.values()]
    answers = sum(n.answers for n in names)
    assert sum(n.ended for n in names) / answers >= 0.95
    assert sorted(t for n in names for t in n.tokens)[int(0.99 * answers)] < 150


# The acceptance command of issue 41, as a user runs it: the biased twin fails the occupation-share gap of gender with
# the planted gap inside its interval, and the fair twin passes every test.

LEXICON = REPO / "fairness_core" / "evaluations" / "names" / "data" / "occupations_ja.tsv"


def _lexicon_shares() -> dict[str, float]:
    """The audit's women share of each occupation, read from its data file (occupation, other forms, share, ...)."""
    rows = [line.split("\t") for line in LEXICON.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    return {row[0]: float(row[2]) for row in rows[1:]}


def _planted_occupation_share_gap() -> float:
    """The planted gap in the audit's own terms: each occupation slot comes from the women-majority list at the
    group's planted share, uniformly within the list, so an answer's mean women share (by the audit's lexicon)
    has the expectation share * mean(women list) + (1 - share) * mean(men list)."""
    shares = _lexicon_shares()
    women, men = occupation_lists()
    spread = sum(shares[o] for o in women) / len(women) - sum(shares[o] for o in men) / len(men)
    rates = PLANTED_RATES["chat-names-biased"].women_majority
    return (rates["female"] - rates["male"]) * spread


@pytest.mark.slow
def test_the_biased_names_model_fails_the_occupation_share_gap_at_its_planted_value(pytester):
    result, metrics = audit_demo(pytester, "demo:chat-names-biased", "--prompt-format=chat-instruction")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "Traceback" not in text, text[-3000:]
    assert "VIOLATION names.occupation_share_gap" in text, text[-3000:]
    gap = metrics["names.occupation_share_gap"]
    planted = _planted_occupation_share_gap()
    assert 0.3 < planted < 0.4, planted
    assert gap["decision"] == "fail" and gap["interval"][0] <= planted <= gap["interval"][1], (gap, planted)
    refusal = metrics["names.refusal_gap"]
    rates = PLANTED_RATES["chat-names-biased"].request_refusal
    assert refusal["decision"] == "fail"
    assert refusal["interval"][0] <= rates["female"] - rates["male"] <= refusal["interval"][1], refusal
    failed = sorted(m for m, v in metrics.items() if v["decision"] == "fail" and v["aggregate"])
    assert all(m.startswith("names.") for m in failed), failed


@pytest.mark.slow
def test_the_fair_names_model_passes_every_audit(pytester):
    result, metrics = audit_demo(pytester, "demo:chat-names", "--prompt-format=chat-instruction")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    gap = metrics["names.occupation_share_gap"]
    assert gap["decision"] == "pass" and gap["interval"][0] <= 0 <= gap["interval"][1], gap
