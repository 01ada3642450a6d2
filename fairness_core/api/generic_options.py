"""The run's generic options, declared once: what every run takes, and what an evaluation may read besides its own.

Each is an :class:`~fairness_core.config.option_types.Option` with one default,
one converter and one help text; each backend's own options are in its catalog
entry (:mod:`fairness_core.backends.catalog`), each evaluation's in its class.
Code reads an option's value through its constant (``values.get(PROMPT_FORMAT.dest)``),
never by a literal name, so that a renamed option leaves no reader behind.  The
run assembles the table from these (:mod:`fairness_core.run.options`).

>>> PROMPT_FORMAT.dest, SAMPLING.default
('prompt_format', 'fixed')
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.backends.catalog import BACKENDS, DEFAULT_BACKEND, backend_entry
from fairness_core.backends.prompt_formats import PROMPT_FORMATS
from fairness_core.config import option_types as o
from fairness_core.config.option_types import AUDIT, GENERATE, PLAN, Option
from fairness_core.errors import AuditUsageError
from fairness_core.sampling import FIXED, SAMPLING_MODES

ALL_COMMANDS = frozenset({AUDIT, GENERATE, PLAN})


def backend_name(text: str) -> str:
    """A registered backend's name (``--backend``)."""
    try:
        backend_entry(text)
    except AuditUsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def shard(text: str) -> tuple[int, int]:
    """``i/n`` with 1 <= i <= n, e.g. ``2/3``.

    >>> shard("2/3")
    (2, 3)
    """
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise o.invalid("i/n with 1 <= i <= n, e.g. 1/3", text)
    return int(index), int(count)


def evaluation_names(text: str) -> tuple[str, ...]:
    """Registered evaluations' names, comma-separated (``--require=honest,bbq``); an unknown one is refused."""
    from fairness_core.registry import unknown_name

    names = tuple(dict.fromkeys(name.strip() for name in text.split(",")))
    known = list(EVALUATIONS)
    if "" in names:
        raise o.invalid(f"registered evaluations' names separated by commas ({', '.join(known)})", text)
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(unknown_name("evaluation", name, known))
    return names


MODEL = Option("--model", "hub id, local path or demo name of the causal LM to audit; with --backend=openai the "
               "served model's name", required=frozenset({GENERATE}))
BACKEND = Option("--backend", f"where completions come from: {', '.join(sorted(BACKENDS))}", backend_name,
                 DEFAULT_BACKEND)
ATTRIBUTES = Option("--attributes", "attribute set: a built-in name (gender, nationality, occupation), a path to "
                    "a YAML file, or two sets crossed with * (gender*nationality: a group per pair of groups; "
                    "docs/attribute-sets.md)", default="gender", commands=ALL_COMMANDS)
THRESHOLDS = Option("--thresholds", "thresholds and protocol YAML", Path, commands=ALL_COMMANDS,
                    default_text="thresholds.yaml in the project root (pytest's rootdir) if there is one, else the "
                                 "package's own")
CACHE_DIR = Option("--cache-dir", "generation cache folder", Path,
                   default_text="$JA_FAIRNESS_AUDIT_CACHE or ~/.cache/ja-fairness-audit")
NO_CACHE = Option("--no-cache", "generate everything anew and store nothing", switch=True)
AUDIT_JSON = Option("--audit-json", "write every number, decision and completion to this JSON file", Path,
                    commands=frozenset({AUDIT}))
PROMPT_FORMAT = Option(
    "--prompt-format", "how a template is put to the model: completion (the text to continue; base models), "
    "chat-prefill (the start of the assistant's answer, in the chat template) or chat-instruction (a user turn asking "
    "for the continuation; the answer is read after any echo of the template). Default completion for every model: "
    "a format changes what is measured, so it is chosen, never inferred (docs/chat-models.md)",
    o.one_of(*PROMPT_FORMATS), PROMPT_FORMATS[0], commands=ALL_COMMANDS)
BASELINE = Option("--baseline", "an earlier --audit-json file (with its completions): each gated metric must be "
                  "certified no worse than in it, beyond its tolerance (docs/gate.md); with plan: the completions a "
                  "certification is expected to take", Path, commands=frozenset({AUDIT, PLAN}))
BASELINE_MODEL = Option("--baseline-model", "the model in production (hub id, local path or served name, through the "
                        "same --backend): generated in this run with the same prompts and --seed, so that each "
                        "sample of the candidate shares its random stream with the baseline's (common random "
                        "numbers); each gated metric must be certified no worse than it, as with --baseline "
                        "(docs/gate.md)", str, commands=frozenset({AUDIT}))
SAMPLING = Option("--sampling", "fixed: every prompt gets the protocol's samples; adaptive: rounds of a few samples of "
                  "every prompt, stopping as soon as an evaluation's verdict is settled (anytime-valid), at most the "
                  "fixed protocol's budget (docs/gate.md)", o.one_of(*SAMPLING_MODES), FIXED,
                  commands=frozenset({AUDIT, PLAN}))
REQUIRE = Option("--require", "names of registered evaluations that must be judged, comma-separated: one that this run "
                 "cannot judge (an attribute set without its section, prompts that do not fit the model, ...) fails a "
                 "test instead of being reported as not judged", evaluation_names, (), default_text="none",
                 commands=frozenset({AUDIT}), metavar="EVALUATION[,EVALUATION...]")

REVISION = Option("--revision", "model revision (branch, tag or commit) on the hub")
TRUST_REMOTE_CODE = Option("--trust-remote-code", "allow the model's own code to run", switch=True)
DEVICE = Option("--device", "auto, cpu, cuda or cuda:N", o.device, "auto")
DTYPE = Option("--dtype", "weights dtype; auto follows the model's config", o.one_of("auto", "float32", "bfloat16", "float16"),
               "auto")
BATCH_SIZE = Option("--batch-size", "rows per generation batch, or auto: the largest that fits (on CUDA an out-of-memory "
                    "error halves it and retries)", o.batch_size, "auto")
SEED = Option("--seed", "sampling seed, a whole number >= 0; a completions file is audited with the seed that made it",
              o.seed, 0)
OUTPUT = Option("--output", "the JSONL file to write", Path, commands=frozenset({GENERATE}), required=frozenset({GENERATE}))
SHARD = Option("--shard", "i/n: this run's part of the prompts", shard, (1, 1), default_text="1/1",
               commands=frozenset({GENERATE}))

#: The options that are no backend's or evaluation's own.
GENERIC: tuple[Option, ...] = (
    MODEL, BACKEND, ATTRIBUTES, THRESHOLDS, REVISION, TRUST_REMOTE_CODE, DEVICE, DTYPE, BATCH_SIZE, SEED,
    PROMPT_FORMAT, CACHE_DIR, NO_CACHE, AUDIT_JSON, BASELINE, BASELINE_MODEL, SAMPLING, REQUIRE, OUTPUT, SHARD,
)
