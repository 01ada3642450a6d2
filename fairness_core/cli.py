"""``ja-fairness-audit generate`` and ``ja-fairness-audit plan``: the audit's generation half, and what it can detect.

Generation is the audit's whole cost and wants GPUs; the audit itself does
not.  ``generate`` runs the generation half with any registered backend and
writes the manifest (model, engine, protocol and prompt-set hash per
evaluation, run seed) and one line per completion (``backends/jsonl.py``).
``--shard=i/n`` takes the prompts whose id hashes to shard ``i`` of ``n``, so
that ``n`` machines or vLLM replicas each take a part and the audit reads all
the shards back with ``--backend=jsonl --completions=FOLDER``.  Every sample's
seed is ``request_seed(run seed, prompt, sample)``, so the shards together
hold exactly the completions of one unsharded run.  ``plan`` prints each
evaluation's prompts and limits and the deploy gate's measured error rates,
offline.  Both commands take their options from the run's one option table
(:mod:`fairness_core.run.options`), as pytest does.

    ja-fairness-audit generate --model=demo:biased --output=out/completions-1-of-3.jsonl --shard=1/3
    pytest audits --backend=jsonl --completions=out/
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fairness_core.api.generic_options import BASELINE, OUTPUT, SAMPLING, SHARD
from fairness_core.api.prompts import PromptSet
from fairness_core.backends.base import (
    AnswerRoomError,
    Backend,
    BackendSettings,
    ContextWindowError,
    Request,
    request_seed,
)
from fairness_core.backends.catalog import DEFAULT_BACKEND
from fairness_core.config.option_types import GENERATE, PLAN
from fairness_core.errors import AuditUsageError
from fairness_core.run.options import add_options, project_root

if TYPE_CHECKING:
    from fairness_core.run.setup import AuditSetup
    from fairness_core.run.startup import StartUp

USAGE_ERROR = 4  # pytest's exit code for a usage error, so that scripts treat both commands alike


def shard_of(prompt_id: str, count: int) -> int:
    """The shard (1-based) of a prompt: a stable hash of its id, so all its samples go together."""
    return int.from_bytes(hashlib.sha256(prompt_id.encode()).digest()[:8], "little") % count + 1


def in_shard(requests: Sequence[Request], shard: tuple[int, int]) -> list[Request]:
    index, count = shard
    return [r for r in requests if shard_of(r.prompt_id or r.prompt, count) == index]


def manifest(backend: Backend, settings: BackendSettings, prompt_sets: Sequence[PromptSet],
             shard: tuple[int, int]) -> dict:
    """What the audit checks the files against, and what the report shows as their provenance."""
    from fairness_core.backends.jsonl import prompt_set_sha256

    fingerprint = dict(backend.fingerprint)
    return {
        "model": settings.model.name, "revision": settings.revision, "weights_sha256": fingerprint.get("weights"),
        "engine": fingerprint.get("backend", DEFAULT_BACKEND),
        "engine_version": fingerprint.get("versions", fingerprint.get("client", "")),
        "fingerprint": fingerprint, "run_seed": settings.seed, "shard": f"{shard[0]}/{shard[1]}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "prompt_format": settings.prompt_format.name,
        "evaluations": {s.evaluation: {"protocol": s.protocol.model_dump(), "prompts": len(s.prompts),
                                       "prompt_set_sha256": prompt_set_sha256(
                                           (p.text for p in s.prompts), settings.prompt_format.identity(s.protocol)),
                                       **({"provenance": dict(s.provenance)} if s.provenance else {})}
                        for s in prompt_sets},
    }


def write_completions(backend: Backend, settings: BackendSettings, prompt_sets: Sequence[PromptSet], output: Path,
                      shard: tuple[int, int] = (1, 1)) -> int:
    """Generate this shard's part of every evaluation and write the file atomically; the number of completions.

    The file appears only when complete, so a crashed run leaves no half shard
    to be mistaken for a whole one (the backends' caches make the rerun cheap).
    An evaluation whose prompts do not fit the model's context window is left
    out of the file and its manifest, with a line on stderr and the reason in
    the manifest's ``not_generated``; the audit of the file then reports it as
    not judged, with that reason.
    """
    from fairness_core.backends.cache import write_atomically
    from fairness_core.backends.jsonl import NOT_GENERATED, completion_line, manifest_line

    header = manifest(backend, settings, prompt_sets, shard)
    lines = []
    for prompt_set in prompt_sets:
        requests = in_shard(prompt_set.requests(), shard)
        try:
            completions = backend.generate(requests, prompt_set.protocol)
        except (ContextWindowError, AnswerRoomError) as err:
            if isinstance(err, AnswerRoomError) and not prompt_set.answers_need_room:
                raise
            del header["evaluations"][prompt_set.evaluation]
            what = "answers" if isinstance(err, AnswerRoomError) else "prompts"
            why = f"its {what} do not fit the model's context window: {err}"
            header.setdefault(NOT_GENERATED, {})[prompt_set.evaluation] = why
            print(f"{prompt_set.evaluation}: not generated: {why}", file=sys.stderr)
            continue
        for request, completion in zip(requests, completions, strict=True):
            seed = request_seed(settings.seed, request.prompt, request.sample_index)
            lines.append(completion_line(prompt_set.evaluation, request, seed, completion))
    write_atomically(output, "\n".join([manifest_line(header), *lines]) + "\n")
    return len(lines)


class _Parser(argparse.ArgumentParser):
    """argparse with pytest's usage-error exit code, so that a bad option reads the same from both commands."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ja-fairness-audit", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write the audit's completions as JSONL (see --help)")
    add_options(generate.add_argument, GENERATE)
    plan = commands.add_parser("plan", help="what the gate can detect with these thresholds (offline)")
    add_options(plan.add_argument, PLAN)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = _parser()
    except AuditUsageError as err:  # an installed evaluation that cannot be loaded
        print(f"ja-fairness-audit: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    args = parser.parse_args(argv)
    from fairness_core.run.startup import StartUp, read_values, start_up_problems

    try:
        start = StartUp.resolve(read_values(args.command, lambda dest: getattr(args, dest)), root=project_root(Path.cwd()))
        setup = start.checked_setup()
        if args.command == PLAN:
            return _plan(start, setup)
        problems = start_up_problems(start, selected=list(setup.evaluations))
        if problems:
            raise AuditUsageError("\n".join(problems))
        return _generate(start, setup)
    except AuditUsageError as err:
        print(f"ja-fairness-audit: error: {err}", file=sys.stderr)
        return USAGE_ERROR


def _generate(start: StartUp, setup: AuditSetup) -> int:
    from fairness_core.run.startup import open_backend

    options, output, shard = start.options, start.values[OUTPUT.dest], start.values[SHARD.dest]
    backend = open_backend(options)
    written = write_completions(backend, options.settings, setup.prompt_sets(), output, shard)
    index, count = shard
    print(f"{output}: {written} completions (shard {index}/{count}, backend {options.backend}, "
          f"seed {options.settings.seed})")
    for line in getattr(backend, "summary_lines", list)():
        print(line, file=sys.stderr)
    return 0


def _plan(start: StartUp, setup: AuditSetup) -> int:
    from fairness_core.gates.deploy import plan_lines

    gated = [m for e in setup.evaluations.values() for m in e.gated_metrics()] if start.values[BASELINE.dest] else []
    notes = [f"  {note}" for note in setup.config.limits_notes(list(setup.evaluations), gated=gated)]
    print("\n".join([f"thresholds {start.thresholds}", *notes]))
    print("\n".join(plan_lines(setup.config, setup.attributes.name, setup.evaluations, setup.not_applicable(),
                               start.options, sampling=start.values[SAMPLING.dest])))
    path = start.values[BASELINE.dest]
    if path:
        from fairness_core.gates import certification
        from fairness_core.gates.regression import read_baseline

        print("\n".join(certification.plan_lines(read_baseline(path), setup.evaluations, setup.config.regression)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
