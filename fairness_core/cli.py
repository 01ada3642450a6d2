"""``ja-fairness-audit generate``: the audit's completions, written as JSONL to be audited elsewhere.

Generation is the audit's whole cost and wants GPUs; the audit itself does
not.  This command runs the generation half with any registered backend and
writes the manifest (model, engine, protocol and prompt-set hash per
evaluation, run seed) and one line per completion (``backends/jsonl.py``).
``--shard=i/n`` takes the prompts whose id hashes to shard ``i`` of ``n``, so
that ``n`` machines or vLLM replicas each take a part and the audit reads all
the shards back with ``--backend=jsonl --completions=FOLDER``.  Every sample's
seed is ``request_seed(run seed, prompt, sample)``, so the shards together
hold exactly the completions of one unsharded run.

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

from fairness_core.backends import options
from fairness_core.backends.base import Backend, BackendSettings, Request, request_seed
from fairness_core.backends.cache import CachedBackend, default_cache_dir, write_atomically
from fairness_core.backends.jsonl import completion_line, manifest_line, prompt_set_sha256
from fairness_core.backends.registry import BACKENDS, DEFAULT_BACKEND, backend_entry, create_backend
from fairness_core.errors import AuditUsageError

USAGE_ERROR = 4  # pytest's exit code for a usage error, so that scripts treat both commands alike


def parse_shard(text: str) -> tuple[int, int]:
    """``i/n`` with 1 <= i <= n, e.g. ``2/3``.

    >>> parse_shard("2/3")
    (2, 3)
    """
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise options.invalid("i/n with 1 <= i <= n, e.g. 1/3", text)
    return int(index), int(count)


def shard_of(prompt_id: str, count: int) -> int:
    """The shard (1-based) of a prompt: a stable hash of its id, so all its samples go together."""
    return int.from_bytes(hashlib.sha256(prompt_id.encode()).digest()[:8], "little") % count + 1


def in_shard(requests: Sequence[Request], shard: tuple[int, int]) -> list[Request]:
    index, count = shard
    return [r for r in requests if shard_of(r.prompt_id or r.prompt, count) == index]


def manifest(backend: Backend, settings: BackendSettings, plans, shard: tuple[int, int]) -> dict:
    """What the audit checks the files against, and what the report shows as their provenance."""
    fingerprint = dict(backend.fingerprint)
    return {
        "model": settings.model, "revision": settings.revision, "weights_sha256": fingerprint.get("weights"),
        "engine": fingerprint.get("backend", DEFAULT_BACKEND),
        "engine_version": fingerprint.get("versions", fingerprint.get("client", "")),
        "fingerprint": fingerprint, "run_seed": settings.seed, "shard": f"{shard[0]}/{shard[1]}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "evaluations": {plan.evaluation: {"protocol": plan.protocol.model_dump(), "prompts": len(plan.prompts),
                                          "prompt_set_sha256": prompt_set_sha256(p.text for p in plan.prompts)}
                        for plan in plans},
    }


def write_completions(backend: Backend, settings: BackendSettings, plans, output: Path,
                      shard: tuple[int, int] = (1, 1)) -> int:
    """Generate this shard's part of every evaluation and write the file atomically; the number of completions.

    The file appears only when complete, so a crashed run leaves no half shard
    to be mistaken for a whole one (the backends' caches make the rerun cheap).
    """
    lines = [manifest_line(manifest(backend, settings, plans, shard))]
    for plan in plans:
        requests = in_shard(plan.requests(), shard)
        for request, completion in zip(requests, backend.generate(requests, plan.protocol), strict=True):
            seed = request_seed(settings.seed, request.prompt, request.sample_index)
            lines.append(completion_line(plan.evaluation, request, seed, completion))
    write_atomically(output, "\n".join(lines) + "\n")
    return len(lines) - 1


class _Parser(argparse.ArgumentParser):
    """argparse with pytest's usage-error exit code, so that a bad option reads the same from both commands."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ja-fairness-audit", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write the audit's completions as JSONL (see --help)")
    generate.add_argument("--model", required=True, help="hub id, local path, demo name, or the served model name")
    generate.add_argument("--backend", default=DEFAULT_BACKEND,
                          help=f"where completions come from: {', '.join(sorted(BACKENDS))} (default: {DEFAULT_BACKEND})")
    generate.add_argument("--output", required=True, type=Path, help="the JSONL file to write")
    generate.add_argument("--shard", default=(1, 1), type=parse_shard, help="i/n: this run's part (default: 1/1)")
    generate.add_argument("--thresholds", type=Path,
                          help="the audit's thresholds and protocol YAML (default: ./thresholds.yaml if there is one, "
                               "else the package's own, as pytest picks it)")
    generate.add_argument("--attributes", default="gender", help="the audit's attribute set (default: gender)")
    generate.add_argument("--cache-dir", type=Path, help="generation cache (default: the audit's)")
    generate.add_argument("--no-cache", action="store_true", help="generate everything anew and store nothing")
    generate.add_argument("--seed", default=0, type=options.seed, help="run seed (default: 0); the audit must use the same")
    generate.add_argument("--revision")
    generate.add_argument("--trust-remote-code", action="store_true")
    generate.add_argument("--device", default="auto", type=options.device, help="auto, cpu, cuda or cuda:N (default: auto)")
    generate.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    generate.add_argument("--batch-size", default="auto", type=options.batch_size)
    plan = commands.add_parser("plan", help="what the gate can detect with these thresholds (offline)")
    plan.add_argument("--attributes", default="gender", help="the audit's attribute set (default: gender)")
    plan.add_argument("--thresholds", type=Path, help="the audit's thresholds YAML (default: as for generate)")
    plan.add_argument("--ratio", type=float, help="report the samples per prompt for 90%% power at this HONEST ratio")
    for name, entry in sorted(BACKENDS.items()):
        for option in entry.options:
            generate.add_argument(option.flag, type=option.type or str, default=option.default,
                                  help=f"[--backend={name}] {option.help}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "plan":
        return _plan(args)
    if args.no_cache and args.cache_dir:
        from fairness_core.outputs import no_cache_with_cache_dir

        parser.error(no_cache_with_cache_dir(args.cache_dir))
    from fairness_core.plan import audit_plan  # the audit's prompts and protocols, as the audit itself plans them
    from fairness_core.resources import default_thresholds_path
    from fairness_core.thresholds import ThresholdsError, load_thresholds

    try:
        options = {o.dest: getattr(args, o.dest) for o in backend_entry(args.backend).options}
        settings = BackendSettings(model=args.model, seed=args.seed, revision=args.revision,
                                   trust_remote_code=args.trust_remote_code, device=args.device, dtype=args.dtype,
                                   batch_size=args.batch_size, options=options)
        thresholds = args.thresholds or (Path("thresholds.yaml") if Path("thresholds.yaml").is_file()
                                         else default_thresholds_path())
        plans = audit_plan(load_thresholds(thresholds), attributes=args.attributes)
        backend = create_backend(args.backend, settings)
        if not args.no_cache:
            backend = CachedBackend(backend, cache_dir=args.cache_dir or default_cache_dir())
        written = write_completions(backend, settings, plans, args.output, args.shard)
    except (AuditUsageError, ThresholdsError) as err:
        print(f"ja-fairness-audit: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    print(f"{args.output}: {written} completions (shard {args.shard[0]}/{args.shard[1]}, "
          f"backend {args.backend}, seed {args.seed})")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from fairness_core.gate import plan_lines
    from fairness_core.resources import default_thresholds_path
    from fairness_core.thresholds import ThresholdsError, load_thresholds

    thresholds = args.thresholds or (Path("thresholds.yaml") if Path("thresholds.yaml").is_file()
                                     else default_thresholds_path())
    try:
        lines = plan_lines(load_thresholds(thresholds), args.attributes, ratio=args.ratio)
    except (AuditUsageError, ThresholdsError) as err:
        print(f"ja-fairness-audit: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    print(f"thresholds {thresholds}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
