"""What a request demo model does with the name-based chat requests, measured: ``python -m fairness_core.demo.request_rates``.

The model is loaded as an audit loads it (the HF backend, ``chat-instruction``,
the names protocol of :data:`~fairness_core.demo.chat_requests.REQUEST_PROTOCOL`:
the user turn as is, up to 200 new tokens, top-k 50), asked every task of
``tasks_ja.yaml`` by every gender name, and each answer is read per name: is it a
refusal (the audit's detector), and which of the demo's occupations does it name
(the distinct ones, found as words of ``demo_request_answers.yaml``; the audit's
own lexicon is the names evaluation's business, not the demo's).  Per group,
pooled over its names:

* ``refusal``: refused answers among all answers;
* ``women_majority``: women-majority occupations among the occupations named;
* ``mean_women_share``: the mean over the answers that name an occupation of the
  mean ``women_share_assumed`` of its distinct occupations (the per-answer signal
  of NAMES_SPEC.md, with the demo's assumed shares).

Run as a script, it measures both request models with more samples than the
known-answer test draws and writes the numbers into each ``demo.json``
(``requests.measured``), next to the planted rates.
"""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fairness_core.backends.base import BackendSettings, ModelReference, Request
from fairness_core.backends.hf.engine import create_backend
from fairness_core.backends.prompt_formats import CHAT_INSTRUCTION, PromptFormat
from fairness_core.demo.chat_requests import (
    REQUEST_PROTOCOL,
    answer_material,
    occupation_lists,
    occupations,
    request_prompts,
    tasks,
)
from fairness_core.japanese.refusals import RefusalDetector
from fairness_core.run.demo_names import DEMO, DEMO_VARIANTS, resolve_demo


@dataclass
class NameAnswers:
    """What one user (a full name) was answered: how many answers, how many refused, the occupations of each other
    answer that names any (distinct, in order), each answer's length in tokens, and how many ended (EOS) inside the
    window."""

    answers: int = 0
    refused: int = 0
    occupations: list[tuple[str, ...]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ended: int = 0


def request_variants() -> list[str]:
    return [bias for bias, variant in DEMO_VARIANTS.items() if variant.requests]


def find_occupations(text: str) -> tuple[str, ...]:
    """The distinct demo occupations ``text`` names, in order of first mention."""
    found = sorted((text.find(o), o) for o in occupations() if o in text)
    return tuple(o for _, o in found)


def measure(bias: str, *, samples: int, domains: Sequence[str] | None = None,
            batch_size: int = 256) -> dict[str, dict[str, NameAnswers]]:
    """Per group, per full name: the answers of ``demo:<bias>`` to every task (of ``domains`` only, where given),
    ``samples`` each."""
    name = f"{DEMO}:{bias}"
    backend = create_backend(BackendSettings(
        model=ModelReference(name, str(resolve_demo(name)), local=True), device="cpu", batch_size=batch_size,
        prompt_format=PromptFormat(CHAT_INSTRUCTION)))
    domain_of = {task.id: task.domain for task in tasks()}
    prompts = [p for p in request_prompts() if domains is None or domain_of[p.template_id] in domains]
    requests = [Request(prompt.text, sample) for prompt in prompts for sample in range(samples)]
    completions = backend.generate(requests, REQUEST_PROTOCOL.model_copy(update={"num_samples": samples}))
    detector = RefusalDetector.from_package_data()
    per_name: dict[str, dict[str, NameAnswers]] = {}
    prompt_of = {prompt.text: prompt for prompt in prompts}
    window = REQUEST_PROTOCOL.tokens_for(CHAT_INSTRUCTION)
    for request, completion in zip(requests, completions):
        prompt = prompt_of[request.prompt]
        cell = per_name.setdefault(prompt.group, {}).setdefault(prompt.term, NameAnswers())
        cell.answers += 1
        cell.tokens.append(completion.num_tokens)
        cell.ended += completion.num_tokens < window  # the HF engine reports no finish reason; it stops at EOS
        if detector.detect(completion.reading or completion.text) is not None:
            cell.refused += 1
        elif occupations := find_occupations(completion.text):
            cell.occupations.append(occupations)
    return per_name


def refusal_rate(names: Sequence[NameAnswers]) -> float:
    return sum(n.refused for n in names) / sum(n.answers for n in names)


def women_majority_share(names: Sequence[NameAnswers]) -> float:
    women = set(occupation_lists()[0])
    mentions = [o for n in names for answer in n.occupations for o in answer]
    return sum(o in women for o in mentions) / len(mentions)


def mean_women_share(women_share: dict[str, float]) -> Callable[[Sequence[NameAnswers]], float]:
    """The statistic: the mean over answers of the mean women share of the answer's distinct occupations."""
    def statistic(names: Sequence[NameAnswers]) -> float:
        values = [sum(women_share[o] for o in answer) / len(answer) for n in names for answer in n.occupations]
        return sum(values) / len(values)
    return statistic


def summary(per_name: dict[str, dict[str, NameAnswers]], women_share: dict[str, float]) -> dict[str, dict]:
    """Per group: answers, refusal rate, women-majority share and mean women share, rounded for ``demo.json``."""
    share = mean_women_share(women_share)
    return {group: {"names": len(names), "answers": sum(n.answers for n in names.values()),
                    "refusal": round(refusal_rate(list(names.values())), 4),
                    "women_majority": round(women_majority_share(list(names.values())), 4),
                    "mean_women_share": round(share(list(names.values())), 4)}
            for group, names in per_name.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8, help="answers per request (default: 8)")
    args = parser.parse_args()
    for bias in request_variants():
        path = resolve_demo(f"{DEMO}:{bias}") / "demo.json"
        record = json.loads(path.read_text(encoding="utf-8"))
        measured = summary(measure(bias, samples=args.samples), answer_material()["women_share_assumed"])
        record["requests"]["measured"] = {
            "how": f"python -m fairness_core.demo.request_rates --samples {args.samples}: every task x every gender "
                   f"name x {args.samples} samples, HF backend, chat-instruction, framing as-is, 200 new tokens, "
                   f"top-k 50, on {platform.machine()} ({platform.processor() or 'processor not reported'})",
            **measured,
        }
        path.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
        print(bias, json.dumps(measured, ensure_ascii=False))


if __name__ == "__main__":
    main()
