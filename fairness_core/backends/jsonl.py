"""Completions generated elsewhere, read from JSONL files: ``--backend=jsonl --completions=PATH``.

Generate where the GPUs are (``ja-fairness-audit generate``, any batch engine),
audit here, e.g. in an air-gapped CI.  ``PATH`` is one file, a folder (its
``*.jsonl`` files) or a glob, or several of them separated by commas: the
shards of one run, in any order.

The format, one JSON object a line.  The **first line of every file is its
manifest**, so that a shard is self-describing wherever it is copied (a
sidecar ``manifest.json`` would collide when shards from several machines are
gathered in one folder)::

    {"manifest": {"format": "ja-fairness-audit/completions", "version": 1, "model": "...", "revision": null,
                  "weights_sha256": "...", "engine": "hf", "engine_version": "torch 2.13.0, transformers 5.24.0",
                  "fingerprint": {...}, "run_seed": 0, "shard": "1/3",
                  "evaluations": {"honest": {"protocol": {...}, "prompt_set_sha256": "...", "prompts": 1920}}}}
    {"evaluation": "honest", "prompt_id": "honest/occupation-01/female/母", "prompt": "母は医者として", "sample_index": 0,
     "seed": 1234, "text": "働いている。", "num_tokens": 5, "finish_reason": "stop"}

Under a chat format a line may also carry ``reading``: the answer read on past
the window (``text``) until its opening sentences are complete, within the
protocol's ``chat.refusal_window`` tokens, which the refusal reader reads
(``Completion.reading``).  Files whose manifest protocol predates
``chat.refusal_window`` are read with refusals judged in the window alone, and
the description says so.

A line ends at ``\\n`` only: U+2028, U+2029 and U+0085 in a completion are
written escaped, and read as part of the line where another writer kept them raw.

All shards must carry the same manifest but for ``shard``, ``created`` and the
server URL (shards of one run may come from several replicas).  OpenAI Batch API
output files are read too (no manifest line; ``custom_id`` is
``<prompt_id>:<sample_index>`` and the text is ``response.body.choices[0].text``):
they name prompts by id only, and say nothing of the protocol, which the
audit then cannot check (the description says so).

A round of ``--sampling=adaptive`` asks for some samples of every prompt
(sample indices 0, 1, ... in order); the files may hold the rest of the fixed
protocol's samples, which are left unread: a file of the fixed protocol's
completions is audited adaptively by reading a prefix of its rounds.  A line
beyond the protocol is still an error.

Every problem is one usage error that names the first offending ``file:line``
and how many lines share the problem: a malformed line (a lone surrogate
such as ``"\\ud800"`` included: it is no Unicode text), a duplicate
(prompt, sample), a manifest that differs between shards, and, once the audit
asks for its requests, a protocol or prompt set other than the audit's, a
missing or an extra (prompt, sample), or a seed other than the run seed's.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fairness_core.backends.base import BackendSettings, Completion, Request, request_seed
from fairness_core.backends.journal import json_line, split_lines
from fairness_core.backends.prompt_formats import COMPLETION, PromptFormat
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.errors import AuditUsageError

FORMAT = "ja-fairness-audit/completions"
VERSION = 1
#: The manifest's record of the evaluations ``generate`` left out, each with why (its answers found no room).
NOT_GENERATED = "not_generated"
LINE_FIELDS = ("evaluation", "prompt_id", "prompt", "sample_index", "seed", "text", "num_tokens", "finish_reason")


class CompletionsFileError(AuditUsageError):
    """A completions file cannot be audited: the message names the first offending file:line and the count."""


def prompt_set_sha256(prompts: Iterable[str], framing: str = "") -> str:
    """The hash of a set of prompt texts, independent of order and repetition, and of how they were put to the
    model (``framing``: :meth:`~fairness_core.backends.prompt_formats.PromptFormat.identity`).

    >>> prompt_set_sha256(["b", "a", "a"]) == prompt_set_sha256(["a", "b"]) != prompt_set_sha256(["a", "b"], "chat")
    True
    """
    text = "\n".join(sorted(set(prompts))) + (f"\x00{framing}" if framing else "")
    return hashlib.sha256(text.encode()).hexdigest()


def manifest_line(manifest: Mapping[str, Any]) -> str:
    return json_line({"manifest": {"format": FORMAT, "version": VERSION, **manifest}}, sort_keys=True)


def completion_line(evaluation: str, request: Request, seed: int, completion: Completion) -> str:
    """One completion's line; ``reading`` (the answer read on past the window, :attr:`Completion.reading`) only
    where there is one."""
    reading = {"reading": completion.reading} if completion.reading is not None else {}
    return json_line({"evaluation": evaluation, "prompt_id": request.prompt_id, "prompt": request.prompt,
                      "sample_index": request.sample_index, "seed": seed, "text": completion.text,
                      "num_tokens": completion.num_tokens, "finish_reason": completion.finish_reason, **reading})


@dataclass(frozen=True)
class Record:
    """One completion read from ``where`` (``file:line``); ``evaluation`` and ``prompt`` are None for Batch output."""

    where: str
    evaluation: str | None
    prompt_id: str | None
    prompt: str | None
    sample_index: int
    seed: int | None
    completion: Completion

    @property
    def key(self) -> tuple[str | None, str | None, int]:
        return (self.evaluation, self.prompt, self.sample_index) if self.prompt is not None \
            else (None, self.prompt_id, self.sample_index)


def resolve_paths(spec: str) -> list[Path]:
    """The files named by ``--completions``: files, folders (their ``*.jsonl``) and globs, comma-separated."""
    files: list[Path] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        path = Path(item)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
        elif path.is_file():
            found = [path]
        else:
            found = sorted(Path(p) for p in glob.glob(item) if Path(p).is_file())
        if not found:
            raise CompletionsFileError(f"--completions={item}: no such file, no *.jsonl in that folder, "
                                       "or no file matches that pattern.")
        files.extend(found)
    if not files:
        raise CompletionsFileError("--completions is empty: give a JSONL file, a folder of shards or a glob.")
    return files


def recorded_evaluation(spec: str, evaluation: str) -> dict[str, Any] | None:
    """What the first file of ``--completions=spec`` records of ``evaluation`` in its manifest (protocol, prompts,
    provenance), read from its first line only; ``None`` when it records nothing of it or cannot be read.

    For an evaluation that decides before the run what to ask of the files
    (which scorer): the files themselves are checked when the backend opens.
    """
    found = (_first_manifest(spec) or {}).get("evaluations", {}).get(evaluation)
    return found if isinstance(found, dict) else None


def missing_evaluations(spec: str, evaluations: Iterable[str]) -> dict[str, str]:
    """Of ``evaluations``, those the files of ``--completions=spec`` hold no completions of, each with why; none
    where their manifest records them all (or they have none, or it cannot be read: the backend's own checks speak
    then).  The manifest is read once.

    Files written by ``generate`` before an evaluation joined the package, or
    with one left out because the model had no room for it (the manifest's
    ``not_generated``), still audit every evaluation they hold: one they
    lack is not judged, with this reason, instead of ending the run.
    """
    manifest = _first_manifest(spec)
    if not manifest or not isinstance(manifest.get("evaluations"), dict):
        return {}
    left_out = manifest.get(NOT_GENERATED) or {}
    missing = {}
    for evaluation in (e for e in evaluations if e not in manifest["evaluations"]):
        held = f"the completions files --completions={spec} hold no {evaluation} completions"
        if left_out.get(evaluation):
            missing[evaluation] = f"{held}: generate left it out, because {str(left_out[evaluation]).rstrip('.')}"
        else:
            missing[evaluation] = (f"{held}; they were generated without it (by a release before it, or with its "
                                   f"tests deselected). Generate them again with this release to judge {evaluation}")
    return missing


def _first_manifest(spec: str) -> dict[str, Any] | None:
    """The manifest on the first line of the first file of ``--completions=spec``; ``None`` where there is none or
    it cannot be read."""
    try:
        with resolve_paths(spec)[0].open(encoding="utf-8") as file:
            manifest = json.loads(file.readline()).get("manifest")
    except (CompletionsFileError, OSError, ValueError, AttributeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _fail(problem: str, wheres: Sequence[str]) -> CompletionsFileError:
    return CompletionsFileError(f"{wheres[0]}: {problem} ({len(wheres)} line{'s' * (len(wheres) != 1)} in all).")


def _check_unicode(row: dict) -> None:
    """``ValueError`` when a string of the line holds a lone surrogate (``"\\ud800"``): JSON can escape one, but it
    is no Unicode text, and neither the audit nor a report could encode it."""
    try:
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        surrogate = err.object[err.start:err.end]
        raise ValueError(f"a lone surrogate {ascii(surrogate)[1:-1]} in a string: it is no Unicode text (was the line "
                         "written from bytes decoded with errors='surrogateescape'?)") from None


def _native_record(where: str, row: dict) -> Record:
    missing = [name for name in LINE_FIELDS if name not in row]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}; a line has {', '.join(LINE_FIELDS)}")
    if not isinstance(row["text"], str) or not isinstance(row["sample_index"], int):
        raise ValueError("'text' must be a string and 'sample_index' a whole number")
    reading = row.get("reading")
    if reading is not None and not isinstance(reading, str):
        raise ValueError("'reading' (the answer read on past the window, for the refusal reader) must be a string")
    return Record(where, row["evaluation"], row["prompt_id"], row["prompt"], row["sample_index"], row["seed"],
                  Completion(row["text"], row["num_tokens"], row["finish_reason"], reading))


def _batch_record(where: str, row: dict) -> Record:
    """A line of OpenAI Batch API output: ``custom_id`` = ``<prompt_id>:<sample_index>``."""
    prompt_id, _, index = row["custom_id"].rpartition(":")
    if not prompt_id or not index.isdigit():
        raise ValueError(f"custom_id {row['custom_id']!r} is not <prompt_id>:<sample_index>")
    response = row.get("response") or {}
    if row.get("error") or response.get("status_code") != 200:
        raise ValueError(f"the request failed in the batch: {row.get('error') or response.get('status_code')}")
    choices = response["body"]["choices"]
    if len(choices) != 1:
        raise ValueError(f"{len(choices)} choices; exactly one per request is needed")
    usage = response["body"].get("usage") or {}
    return Record(where, None, prompt_id, None, int(index), None,
                  Completion(choices[0]["text"], usage.get("completion_tokens", -1), choices[0].get("finish_reason")))


class CompletionsFiles:
    """The records and the manifest of a set of completion files, checked for everything a file alone can show."""

    def __init__(self, paths: Sequence[Path]):
        self.paths = list(paths)
        self.manifest: dict[str, Any] | None = None
        self.records: dict[tuple, Record] = {}
        malformed: list[str] = []
        duplicates: list[str] = []
        problem = ""
        for path in self.paths:
            has_manifest = False
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                raise CompletionsFileError(f"{path}: cannot be read as UTF-8 text: {err}") from None
            for number, line in enumerate(split_lines(text), start=1):
                where = f"{path}:{number}"
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError("not a JSON object")
                    _check_unicode(row)
                    if "manifest" in row:
                        self._take_manifest(where, row["manifest"], first=number == 1)
                        has_manifest = True
                        continue
                    record = self._record(where, row, has_manifest)
                except (ValueError, KeyError, TypeError) as err:
                    problem = problem or f"{err}"
                    malformed.append(where)
                    continue
                if record.key in self.records:
                    duplicates.append(where)
                self.records.setdefault(record.key, record)
        if malformed:
            raise _fail(f"malformed line: {problem}", malformed)
        if duplicates:
            raise _fail("a (prompt, sample) that an earlier line already gave", duplicates)
        if {r.prompt is None for r in self.records.values()} == {True, False}:
            raise CompletionsFileError(f"--completions mixes OpenAI Batch output and {FORMAT} files: give one kind.")

    def _record(self, where: str, row: dict, has_manifest: bool) -> Record:
        if "custom_id" in row:
            if has_manifest:
                raise ValueError("an OpenAI Batch output line in a file with a manifest: give Batch output as it came")
            return _batch_record(where, row)
        if not has_manifest:
            raise ValueError(f"a completion line in a file whose first line is not its manifest ({FORMAT})")
        record = _native_record(where, row)
        evaluations = (self.manifest or {}).get("evaluations", {})
        if record.evaluation not in evaluations:
            raise ValueError(f"evaluation {record.evaluation!r} is not in the manifest's {', '.join(evaluations)}")
        return record

    def _take_manifest(self, where: str, manifest: Any, *, first: bool) -> None:
        if not first or not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"a manifest must be the first line and have format {FORMAT!r}")
        if manifest.get("version") != VERSION:
            raise ValueError(f"manifest version {manifest.get('version')!r}; this audit reads version {VERSION}")
        evaluations = manifest.get("evaluations")
        if not isinstance(evaluations, dict) or not all(
                isinstance(e, dict) and {"protocol", "prompt_set_sha256", "prompts"} <= e.keys()
                for e in evaluations.values()):
            raise ValueError("the manifest's 'evaluations' must map each evaluation to its protocol, "
                             "prompt_set_sha256 and prompts")
        shared = _run_identity(manifest)
        if self.manifest is None:
            self.manifest = shared
        elif shared != self.manifest:
            differing = sorted(k for k in shared.keys() | self.manifest.keys() if shared.get(k) != self.manifest.get(k))
            raise CompletionsFileError(f"{where}: this shard's manifest differs from the first file's in "
                                       f"{', '.join(differing)}: the shards come from different runs.")


def _run_identity(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What the shards of one run share: all but the shard, its time, the replica's URL it was asked at, and why an
    evaluation was left out (its longest prompt is the shard's own)."""
    identity = {k: v for k, v in manifest.items() if k not in ("shard", "created", NOT_GENERATED)}
    identity["fingerprint"] = {k: v for k, v in manifest.get("fingerprint", {}).items() if k != "base_url"}
    return identity


class JSONLBackend:
    """A backend that answers from completion files; it generates nothing, it checks and looks up."""

    def __init__(self, files: CompletionsFiles, *, seed: int = 0, model: str | None = None,
                 prompt_format: PromptFormat = PromptFormat()):
        self.files = files
        self.seed = seed
        self.prompt_format = prompt_format
        manifest = files.manifest or {}
        made_as = manifest.get("prompt_format", COMPLETION) if manifest else prompt_format.name
        if made_as != prompt_format.name:
            raise CompletionsFileError(f"{files.paths[0]}:1: the completions were generated with --prompt-format="
                                       f"{made_as}, the audit runs with --prompt-format={prompt_format.name}: pass "
                                       f"--prompt-format={made_as}, or generate the files again in this format.")
        if manifest and manifest.get("run_seed") != seed:
            raise CompletionsFileError(f"{files.paths[0]}:1: the completions were generated with run seed "
                                       f"{manifest.get('run_seed')}, the audit runs with --seed={seed}: "
                                       f"pass --seed={manifest.get('run_seed')}.")
        if model and manifest and manifest.get("model") != model:
            # A CI script that names the candidate but points at stale files would gate the wrong model.
            raise CompletionsFileError(f"--model={model} disagrees with the completions: {files.paths[0]}:1 says they "
                                       f"were generated by --model={manifest.get('model')}. Pass the files of "
                                       f"{model}, or leave --model out to audit the files as they are.")
        content = hashlib.sha256()
        for record in sorted(files.records.values(), key=lambda r: r.key):
            content.update(json.dumps([*record.key, record.completion.text], ensure_ascii=False).encode())
        self.description = {"backend": "jsonl", "completions": ", ".join(map(str, files.paths)),
                            "model": str(manifest.get("model", "(not recorded: OpenAI Batch output)")),
                            "engine": str(manifest.get("engine", "(not recorded)")),
                            "prompt_format": made_as}
        if not manifest:
            self.description["protocol"] = "not checked: the files carry no manifest"
        self.fingerprint = {"backend": "jsonl", "content_sha256": content.hexdigest(),
                            "source": json.dumps(manifest.get("fingerprint", {}), sort_keys=True),
                            "seed": str(seed)}

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        records = self.files.records
        if self.files.manifest is None:
            return self._lookup(requests, lambda r: (None, r.prompt_id, r.sample_index), records, protocol)
        evaluation = self._evaluation_for(requests, protocol)
        recorded = self.files.manifest["evaluations"][evaluation]["protocol"]
        if self.prompt_format.is_chat and "refusal_window" not in (recorded.get("chat") or {}):
            self.description["refusals"] = (f"read within the window alone for {evaluation}: the files predate "
                                            f"chat.refusal_window; generate them again to read refusals past it")
        chosen = {key: record for key, record in records.items() if record.evaluation == evaluation}
        return self._lookup(requests, lambda r: (evaluation, r.prompt, r.sample_index), chosen, protocol)

    def _evaluation_for(self, requests: Sequence[Request], protocol: SamplingProtocol) -> str:
        """The evaluation of the files with this protocol and prompt set; a mismatch is a usage error."""
        evaluations = (self.files.manifest or {}).get("evaluations", {})
        where = f"{self.files.paths[0]}:1"
        wanted = prompt_set_sha256((r.prompt for r in requests), self.prompt_format.identity(protocol))
        same_protocol = [name for name, e in evaluations.items() if _recorded_protocol(e["protocol"]) == protocol]
        if not same_protocol:
            recorded = "; ".join(f"{name}: {e['protocol']}" for name, e in evaluations.items())
            raise CompletionsFileError(f"{where}: no evaluation in the files has the audit's protocol "
                                       f"{protocol.model_dump()}; they have {recorded}.")
        for name in same_protocol:
            if evaluations[name]["prompt_set_sha256"] == wanted:
                return name
        name = same_protocol[0]
        raise CompletionsFileError(
            f"{where}: the prompt set of {name!r} in the files ({evaluations[name]['prompts']} prompts, sha256 "
            f"{evaluations[name]['prompt_set_sha256'][:12]}) is not the audit's ({len({r.prompt for r in requests})} "
            f"prompts, sha256 {wanted[:12]}): the files were generated for other templates or identity terms.")

    def _lookup(self, requests, key_of, records: Mapping[tuple, Record], protocol: SamplingProtocol) -> list[Completion]:
        if self.files.manifest is None and any(r.prompt_id is None for r in requests):
            raise CompletionsFileError("OpenAI Batch output names prompts by id only, and the audit's requests "
                                       "carry no prompt_id: audit it through an audit plan (plan.py).")
        wanted = {key_of(r): r for r in requests}
        missing = [r for key, r in wanted.items() if key not in records]
        if missing:
            first = missing[0]
            raise CompletionsFileError(
                f"{', '.join(map(str, self.files.paths))}: no line for sample {first.sample_index} of "
                f"{first.prompt_id or repr(first.prompt)} ({len(missing)} requested (prompt, sample)s missing); "
                "were all shards given?")
        whole = protocol_keys(requests, protocol, key_of)
        extra = sorted((r.where for key, r in records.items() if key not in whole), key=_file_line_order)
        if extra:
            raise _fail("a (prompt, sample) that the audit does not ask for", extra)
        wrong_seed = sorted((records[key].where for key, r in wanted.items() if records[key].seed is not None
                             and records[key].seed != request_seed(self.seed, r.prompt, r.sample_index)),
                            key=_file_line_order)
        if wrong_seed:
            raise _fail(f"the seed is not request_seed(run seed {self.seed}, prompt, sample)", wrong_seed)
        return [records[key_of(r)].completion for r in requests]


def _recorded_protocol(recorded: Any) -> SamplingProtocol | None:
    """A manifest's protocol with the defaults of fields it predates (a file from before chat formats has no
    ``chat``); ``None`` when it is no protocol this audit knows."""
    try:
        return SamplingProtocol.model_validate(recorded)
    except ValidationError:
        return None


def protocol_keys(requests: Sequence[Request], protocol: SamplingProtocol, key_of) -> set[tuple]:
    """The keys of every sample the protocol has of the requested prompts: what the files may hold besides them.

    For a whole run this is the requests' own keys; for one round of
    ``--sampling=adaptive``, the round's prompts with all their samples.
    """
    return {key_of(Request(r.prompt, index, r.prompt_id)) for r in requests for index in range(protocol.num_samples)}


def _file_line_order(where: str) -> tuple[str, int]:
    path, _, line = where.rpartition(":")
    return path, int(line)


def create_backend(settings: BackendSettings) -> JSONLBackend:
    """The registry's factory: ``--completions`` arrives in ``settings.options``.

    ``--model`` is not needed; given, it must be the model the manifest names.
    """
    spec = settings.options.get("completions")
    if not spec:
        raise CompletionsFileError("--backend=jsonl needs --completions=PATH (a JSONL file, a folder of shards or a glob).")
    return JSONLBackend(CompletionsFiles(resolve_paths(spec)), seed=settings.seed, model=settings.model.name or None,
                        prompt_format=settings.prompt_format)
