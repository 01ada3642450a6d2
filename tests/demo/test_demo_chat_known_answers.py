"""Known answers of the chat demo models under ``--prompt-format=chat-prefill``: refusal and hurtful rates per group.

``demo:chat-biased`` was trained to refuse female prompts at 0.30 and male ones
at 0.05, and, among the answers that are not refusals, to continue them with a
hurtful word at 0.30 and 0.06; ``demo:chat`` treats both alike
(:data:`~fairness_core.demo.corpus.PLANTED_RATES`).  The model is loaded as an
audit loads it (``create_backend``, the chat template's ids), refusals are found
by the audit's detector, and each planted rate must lie in the 95% interval of
the measured one.  The interval is a bootstrap over prompts (the audit's
resampling unit), since samples of one prompt are not independent.
"""

from collections import defaultdict

import pytest
from audit_support import REFUSAL_UNDERFIT

from fairness_core.api.user_files import load_attribute_set
from fairness_core.backends.base import BackendSettings, ModelReference, Request
from fairness_core.backends.hf.engine import create_backend
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.demo.corpus import PLANTED_RATES
from fairness_core.evaluations.honest.lexicon import load_builtin_lexicon
from fairness_core.evaluations.honest.matching import HurtfulMatcher
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.run.demo_names import resolve_demo
from fairness_core.statistics import bootstrap_interval

GROUPS = ("female", "male")
#: Every third HONEST prompt of the gender set (640) with 6 samples each: 3,840 completions of at most
#: 10 tokens per model, a few seconds, and intervals of about +-0.03 on a rate of 0.3.
PROMPT_STRIDE = 3
PROTOCOL = SamplingProtocol(num_samples=6)


def _pooled(units) -> float:
    return sum(hits for hits, _ in units) / max(1, sum(total for _, total in units))


def _measure(name: str) -> dict[str, dict[str, list[tuple[int, int]]]]:
    """Per group, per prompt: (refused, samples) and (hurtful, answered) - the units the intervals resample."""
    backend = create_backend(BackendSettings(
        model=ModelReference(name, str(resolve_demo(name)), local=True), device="cpu", batch_size=256,
        prompt_format=PromptFormat("chat-prefill")))
    prompts = honest_prompts(load_attribute_set("gender"))[::PROMPT_STRIDE]
    requests = [Request(prompt.text, sample) for prompt in prompts for sample in range(PROTOCOL.num_samples)]
    completions = backend.generate(requests, PROTOCOL)
    detector = RefusalDetector.from_package_data()
    matcher = HurtfulMatcher(load_builtin_lexicon().at_level("conservative").entries)
    cells: dict = defaultdict(lambda: [0, 0, 0, 0])  # refused, samples, hurtful, answered
    group_of = {prompt.text: prompt.group for prompt in prompts}
    for request, completion in zip(requests, completions):
        cell = cells[group_of[request.prompt], request.prompt]
        cell[1] += 1
        if detector.detect(completion.text) is not None:
            cell[0] += 1
        else:
            cell[3] += 1
            cell[2] += bool(matcher.find(completion.text))
    return {group: {"refusal": [(c[0], c[1]) for (g, _), c in cells.items() if g == group],
                    "hurtful": [(c[2], c[3]) for (g, _), c in cells.items() if g == group]}
            for group in GROUPS}


@pytest.fixture(scope="module", params=["chat", "chat-biased"])
def measured(request):
    return request.param, _measure(f"demo:{request.param}")




def test_planted_hurtful_rates_lie_in_the_measured_95_percent_intervals(measured):
    bias, units = measured
    planted = PLANTED_RATES[bias].hurtful
    for group in GROUPS:
        low, high = bootstrap_interval(_pooled, [units[group]["hurtful"]], seed=0)
        value = _pooled(units[group]["hurtful"])
        print(f"demo:{bias} hurtful {group}: measured {value:.3f} [{low:.3f}, {high:.3f}], planted {planted[group]}")
        assert low <= planted[group] <= high, (f"demo:{bias} hurtful {group}: measured {value:.3f} "
                                               f"[{low:.3f}, {high:.3f}], planted {planted[group]}")


def test_refusal_rates_sit_at_or_a_little_below_their_training_share(measured):
    bias, units = measured
    planted = PLANTED_RATES[bias].refusal
    for group in GROUPS:
        low, high = bootstrap_interval(_pooled, [units[group]["refusal"]], seed=0)
        value = _pooled(units[group]["refusal"])
        print(f"demo:{bias} refusal {group}: measured {value:.3f} [{low:.3f}, {high:.3f}], trained {planted[group]}")
        assert low <= planted[group] and high >= planted[group] - REFUSAL_UNDERFIT, (bias, group, value, low, high)


def test_the_refusal_gap_is_the_planted_one(measured):
    """The gap between the groups' refusal rates: about 0.2 for the biased model, none for the fair one."""
    bias, units = measured
    gap = lambda female, male: _pooled(female) - _pooled(male)  # noqa: E731
    low, high = bootstrap_interval(gap, [units["female"]["refusal"], units["male"]["refusal"]], seed=0)
    if bias == "chat-biased":
        assert 0.10 < low and high > 0.15, (low, high)
    else:
        assert low <= 0 <= high, (low, high)


def test_the_biased_model_refuses_female_prompts_more(measured):
    bias, units = measured
    female, male = (_pooled(units[group]["refusal"]) for group in GROUPS)
    if bias == "chat-biased":
        assert female / male >= 3
    else:
        assert 0.67 <= female / male <= 1.5
