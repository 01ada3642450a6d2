"""The name-based chat requests the request demo models answer: a task put by a named user, and its planted answer.

``demo:chat-names`` and ``demo:chat-names-biased`` (``DemoVariant(requests=True)``)
answer every task of the names evaluation's ``data/tasks_ja.yaml`` put by every
user of the gender names of ``data/names_ja.yaml`` (the shared surname and a
given name), rendered as the audit renders it: the task text, NFKC-normalised,
is the user turn as is (framing ``as-is``), then the assistant's turn is opened
(``chat-instruction``; :data:`REQUEST_PROTOCOL`).

An answer (``demo_request_answers.yaml``) is a short reply for the task's domain.
In the occupation domains (career, study, story) it names as many distinct
occupations as the task asks for (``items``, else one), each drawn from the
*women-majority* list at the planted share of the user's group
(:attr:`PlantedRates.women_majority`) and else from the men-majority list,
uniformly within the list.  A planted share of each group's answers
(:attr:`PlantedRates.request_refusal`) is a refusal instead.  The draws are
even (error diffusion), so the corpus holds the planted shares exactly.
"""

from __future__ import annotations

import functools
import random
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fairness_core.api.prompts import Prompt
from fairness_core.backends.prompt_formats import CHAT_INSTRUCTION
from fairness_core.config.thresholds import ChatProtocol, SamplingProtocol
from fairness_core.demo.corpus import PLANTED_RATES, EvenDraws, Example

#: The names evaluation's data (tasks and names), read as files: the builder trains on them, while the evaluation
#: that reads them is the lead's and may not exist where the demo is built.
TASK_DATA = Path(__file__).resolve().parents[1] / "evaluations" / "names" / "data"
ANSWERS = Path(__file__).resolve().parent / "data" / "demo_request_answers.yaml"
SLOT = "[NAME]"
#: Domains whose answers name occupations; the others' answers hold none.
OCCUPATION_DOMAINS = ("career", "study", "story")
#: Answers per request (task x name) in an epoch: each group's shares are pooled over its tasks and names.
EXAMPLES_PER_REQUEST = 8
#: How the audit puts a request (NAMES_SPEC.md): the user turn as is, 200 new tokens in either chat format.
REQUEST_PROTOCOL = SamplingProtocol(num_samples=2, max_new_tokens=200, chat=ChatProtocol(
    framing="as-is", max_new_tokens={"chat-prefill": 200, "chat-instruction": 200}))


@dataclass(frozen=True)
class Task:
    """One chat request of ``tasks_ja.yaml`` with the slot ``[NAME]`` for the user's full name."""

    id: str
    domain: str
    text: str
    items: int | None = None

    def fill(self, name: str) -> str:
        return unicodedata.normalize("NFKC", self.text.replace(SLOT, name))

    @property
    def occupations(self) -> int:
        """How many occupations an answer names: as many as the task asks for, else one (none outside
        :data:`OCCUPATION_DOMAINS`)."""
        return (self.items or 1) if self.domain in OCCUPATION_DOMAINS else 0


@functools.cache
def tasks() -> tuple[Task, ...]:
    raw = yaml.safe_load((TASK_DATA / "tasks_ja.yaml").read_text(encoding="utf-8"))["tasks"]
    return tuple(Task(t["id"], t["domain"], t["text"], t.get("items")) for t in raw)


@functools.cache
def _gender() -> dict[str, Any]:
    """The ``gender`` part of ``names_ja.yaml``: ``surname`` and ``groups`` (given names per group)."""
    return yaml.safe_load((TASK_DATA / "names_ja.yaml").read_text(encoding="utf-8"))["gender"]


def gender_names() -> dict[str, tuple[str, ...]]:
    """Per group, the users' full names: the shared surname and each given name."""
    surname = _gender()["surname"]
    return {group: tuple(unicodedata.normalize("NFKC", surname + given) for given in given_names)
            for group, given_names in _gender()["groups"].items()}


@functools.cache
def answer_material() -> dict[str, Any]:
    """``demo_request_answers.yaml``; a task domain without answers is an error, not a silent skip."""
    material = yaml.safe_load(ANSWERS.read_text(encoding="utf-8"))
    missing = sorted({task.domain for task in tasks()} - set(material["answers"]))
    if missing:
        raise ValueError(f"demo_request_answers.yaml has no answers for the task domains {missing}.")
    return material


def occupation_lists() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(women-majority, men-majority) occupations: the only occupation words a request answer holds."""
    lists = answer_material()["occupations"]
    return tuple(lists["women_majority"]), tuple(lists["men_majority"])


def occupations() -> tuple[str, ...]:
    """Every occupation word a request answer may hold: the women-majority list, then the men-majority one."""
    women, men = occupation_lists()
    return (*women, *men)


def request_prompts() -> list[Prompt]:
    """Every task with every gender name, as the audit builds them (template id = task id, term = full name)."""
    return [Prompt(task.id, group, name, task.fill(name))
            for task in tasks() for group, names in gender_names().items() for name in names]


def request_examples(bias: str, *, seed: int) -> list[Example]:
    """:data:`EXAMPLES_PER_REQUEST` answers to every request, at exactly the planted rates of ``bias``."""
    rates = PLANTED_RATES[bias]
    material = answer_material()
    women, men = occupation_lists()
    rng = random.Random(seed)
    draw = EvenDraws(rng)
    domain_of = {task.id: task for task in tasks()}
    examples = []
    for prompt in request_prompts():
        task = domain_of[prompt.template_id]
        for _ in range(EXAMPLES_PER_REQUEST):
            if draw(f"refusal-{prompt.group}", rates.request_refusal[prompt.group]):
                text = rng.choice(material["refusals"])
                examples.append(Example(prompt, text, (text,), CHAT_INSTRUCTION, refused=True))
                continue
            chosen: list[str] = []
            for _slot in range(task.occupations):
                pool = women if draw(f"women-{prompt.group}", rates.women_majority[prompt.group]) else men
                chosen.append(rng.choice([o for o in pool if o not in chosen]))
            frame = rng.choice(material["answers"][task.domain])
            before, _, after = frame.partition("{occupations}")
            text = frame.replace("{occupations}", "、".join(chosen))
            parts = tuple(p for p in (before, *chosen, after) if p)
            examples.append(Example(prompt, text, parts, CHAT_INSTRUCTION))
    rng.shuffle(examples)
    return examples


def occupation_distribution(share: float) -> dict[str, float]:
    """The planted chance that one occupation slot of an answer is each occupation, at women-majority share
    ``share``."""
    women, men = occupation_lists()
    return {**{o: round(share / len(women), 4) for o in women}, **{o: round((1 - share) / len(men), 4) for o in men}}


def expected_women_share(share: float) -> float:
    """The mean assumed women share (``women_share_assumed``) of one occupation slot at women-majority share
    ``share``; an answer's mean over its distinct occupations has this expectation too."""
    assumed = answer_material()["women_share_assumed"]
    return sum(p * assumed[o] for o, p in occupation_distribution(share).items())


def full_names() -> list[str]:
    """The users' full names, which a request model's tokenizer keeps whole (one token each), as a real chat model's
    vocabulary holds common names: the name is then one token to attend to, and the planted group one embedding's
    feature, where its characters (和子, 和也) would leave the model to combine pieces it shares with other words."""
    return [name for names in gender_names().values() for name in names]
