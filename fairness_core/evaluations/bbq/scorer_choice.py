"""Which scorer answers the questions (``--bbq-scorer``): the one asked for, or under ``auto`` the one the run can use.

``auto`` (the default) takes the likelihood scorer where the backend scores
continuations and the questions go as plain text (``--prompt-format=completion``),
and generated choice under ``chat-instruction`` (Nejumi's chat route: the
question as the user turn).  For ``--backend=jsonl`` it takes what the files
hold: generated answers when their manifest has BBQ prompts.  Where no scorer
can run on what the user gave, BBQ is *not judged*, with the reason, and the
rest of the audit runs:

- ``chat-prefill`` would put the whole question in the assistant's turn as the
  start of its answer (the format prefills the prompt), which no multiple-choice
  prompt is;
- a completions file without BBQ answers (``generate`` under the likelihood
  scorer writes none: a completions file holds generated text, not option scores).

A scorer the user named that cannot run is one usage error instead, naming
what would.  A server that turns out not to score (``transformers serve``
answers echo with HTTP 500) is found only when it is asked:
:attr:`ScorerChoice.fallback` lets the run take generated choice then, and
say why.

>>> choose_scorer("auto", prompt_format="chat-instruction", backend="openai").scorer
'generated-choice'
>>> choose_scorer("auto", prompt_format="chat-prefill", backend="hf").not_judged[:49]
'not judged: --prompt-format=chat-prefill prefills'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fairness_core.backends.catalog import FILES_BACKEND
from fairness_core.errors import AuditUsageError
from fairness_core.evaluations.bbq.scoring import GENERATED_CHOICE, LIKELIHOOD

#: ``--bbq-scorer``'s default: the scorer the run can use.
AUTO = "auto"
EVALUATION = "bbq"


class ScorerChoiceError(AuditUsageError):
    """``--bbq-scorer`` names a scorer that cannot run with the other options."""


@dataclass(frozen=True)
class ScorerChoice:
    """The scorer, why it was taken (under ``auto``), and why BBQ is not judged (``not_judged``) when no scorer can run.

    ``fallback``: the likelihood scorer was taken by ``auto`` on a backend
    that may turn out not to score; generated choice then answers instead.
    """

    scorer: str
    why: str = ""
    not_judged: str | None = None
    fallback: bool = False
    #: What the completions files' manifest records of BBQ (``--backend=jsonl``), for :func:`recorded_mismatch`.
    recorded: dict[str, Any] | None = None


def _prefill_problem() -> str:
    return ("--prompt-format=chat-prefill prefills the assistant's turn with the prompt, and BBQ's prompt is a whole "
            "multiple-choice question: the model would be made to answer by repeating it. Nejumi asks chat models "
            "with the question as the user turn: --prompt-format=chat-instruction")


def _file_problem(recorded: dict[str, Any] | None, completions: str | None) -> str | None:
    """Why the completions files hold no BBQ answers, or ``None`` when they hold some."""
    if recorded is not None and recorded.get("prompts"):
        return None
    made_with = (recorded or {}).get("provenance", {}).get("scorer")
    how = (f"they were generated with --bbq-scorer={made_with}, and a completions file holds generated text, not "
           f"option scores" if made_with == LIKELIHOOD else "their manifest records no BBQ prompt")
    return (f"the completions files --completions={completions} hold no BBQ answers ({how}); to audit BBQ from files, "
            f"generate them with --bbq-scorer=generated-choice")


def choose_scorer(requested: str | None, *, prompt_format: str | None, backend: str | None,
                  completions: str | None = None) -> ScorerChoice:
    """The scorer of a run with these options; a named scorer that cannot run is a :class:`ScorerChoiceError`."""
    from fairness_core.backends.prompt_formats import COMPLETION, PromptFormat

    requested = requested or AUTO
    fmt = PromptFormat(prompt_format or COMPLETION)
    if requested == LIKELIHOOD and fmt.is_chat:
        raise ScorerChoiceError(
            f"--bbq-scorer=likelihood scores each option as plain text after the question, and --prompt-format="
            f"{fmt.name} puts the question in the model's chat template: a chat format cannot be scored that way. "
            f"Pass --bbq-scorer=generated-choice (or leave --bbq-scorer out: auto takes it under a chat format).")
    if fmt.prefills_answer:
        if requested == GENERATED_CHOICE:
            raise ScorerChoiceError(f"--bbq-scorer=generated-choice: {_prefill_problem()}.")
        return ScorerChoice(GENERATED_CHOICE, not_judged=f"not judged: {_prefill_problem()}")
    if backend == FILES_BACKEND:
        from fairness_core.backends.jsonl import recorded_evaluation

        recorded = recorded_evaluation(completions, EVALUATION) if completions else None
        problem = _file_problem(recorded, completions)
        if requested == GENERATED_CHOICE and problem is not None:
            raise ScorerChoiceError(f"--bbq-scorer=generated-choice: {problem}.")
        if requested != AUTO:
            return ScorerChoice(requested, recorded=recorded)
        if problem is not None:
            return ScorerChoice(GENERATED_CHOICE, not_judged=f"not judged: {problem}", recorded=recorded)
        return ScorerChoice(GENERATED_CHOICE, "auto: the completions files hold generated answers", recorded=recorded)
    if requested != AUTO:
        return ScorerChoice(requested)
    if fmt.is_chat:
        return ScorerChoice(GENERATED_CHOICE, f"auto: --prompt-format={fmt.name} (a chat format is not scored as "
                                              f"plain text)")
    return ScorerChoice(LIKELIHOOD, f"auto: the {backend or 'default'} backend scores continuations", fallback=True)


def recorded_mismatch(recorded: dict[str, Any] | None, questions: dict[str, Any], completions: str | None) -> str | None:
    """Why the completions files answer other questions than the audit's (``questions``: the question set's
    provenance), named by the question file, or ``None`` (the same, or not recorded: an older file)."""
    theirs = ((recorded or {}).get("provenance") or {}).get("questions")
    if not isinstance(theirs, dict) or theirs.get("data") == questions.get("data"):
        return None
    return (f"--completions={completions}: the files answer the questions of {theirs.get('data')}, and this audit asks "
            f"those of {questions.get('data')}: pass the --bbq-file and --bbq-subset the files were generated with, "
            f"or generate them again for these questions.")


def short_error(err: Exception) -> str:
    """A backend's error in one short clause: the server's last answer, not the whole question it was asked (a
    retried request's error quotes its prompt).

    >>> short_error(Exception("The sample 0 of the prompt '長い質問' failed after 6 attempts at http://h/v1; "
    ...                       "last error: HTTP 500: Internal Server Error"))
    'failed after 6 attempts at http://h/v1; last error: HTTP 500: Internal Server Error'
    """
    text = str(err).split(". Pass --bbq-scorer")[0]
    found = re.search(r"failed after \d+ attempts.*", text, re.DOTALL)
    return found.group(0) if found else text


def fallback_reason(err: Exception) -> str:
    """Why ``auto`` answered by generated choice: the backend failed to score (``err``)."""
    return f"--bbq-scorer=auto took generated choice: the backend could not score the options ({short_error(err)})"
