"""The backends an audit can take its completions from, by ``--backend`` name.

A backend is one module with a factory ``create_backend(settings) -> Backend``
plus one entry here.  The entry names the factory as ``"module:function"`` so
that nothing is imported until the backend is chosen (the pytest plugin reads
this table on every pytest run), and it declares the backend's own
command-line options, which join the run's one option table (:mod:`fairness_core.run.options`).

>>> sorted(BACKENDS)[:1]
['hf']
>>> backend_entry("hff")
Traceback (most recent call last):
...
fairness_core.backends.catalog.UnknownBackendError: Unknown backend 'hff'. Did you mean 'hf'? Available: hf, jsonl, openai, vllm
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fairness_core.backends.base import Backend, BackendSettings
from fairness_core.config import option_types as o
from fairness_core.config.option_types import Option
from fairness_core.errors import AuditUsageError
from fairness_core.registry import Registry, load_target

DEFAULT_BACKEND = "hf"
#: The backend that reads completions generated elsewhere (``--completions``): what it can answer is what they hold.
FILES_BACKEND = "jsonl"


class UnknownBackendError(AuditUsageError):
    """``--backend`` names no registered backend."""


@dataclass(frozen=True)
class BackendEntry:
    """``factory`` as ``"module:function"``; ``needs_model``: whether ``--model`` is required;
    ``reads_model_files``: whether it loads ``--model`` in this process (a path must then be a folder)."""

    factory: str
    summary: str
    options: tuple[Option, ...] = ()
    needs_model: bool = True
    reads_model_files: bool = False


#: ``--backend=jsonl``'s files: an evaluation that reads what a file holds (its manifest) reads it by this.
COMPLETIONS = Option("--completions", "a JSONL file, a folder of shards or a glob; several, comma-separated")

BACKENDS: Registry[BackendEntry] = Registry("backend", {
    "hf": BackendEntry("fairness_core.backends.hf.engine:create_backend",
                       "Hugging Face transformers in this process (CPU or GPU); demo names too",
                       reads_model_files=True),
    "openai": BackendEntry(
        "fairness_core.backends.openai:create_backend",
        "an OpenAI-compatible /v1/completions server (vLLM, llama.cpp, TGI, transformers serve); --model is the "
        "served name; the API key is read from $JA_FAIRNESS_AUDIT_API_KEY or $OPENAI_API_KEY",
        (Option("--base-url", "the server's API root", o.base_url, "http://127.0.0.1:8000/v1"),
         Option("--concurrency", "requests in flight at once", o.positive_int, 8),
         Option("--request-timeout", "seconds one request may take before it is retried",
                o.positive_seconds, 60.0),
         Option("--deadline", "seconds all of a run's requests may take, the connection probe and waits the "
                "server asks for included; what is done is kept for the rerun",
                o.positive_seconds, default_text="no limit"),
         Option("--max-retries", "retries of a request after a connection error, 408, 429 or 5xx",
                o.nonnegative_int, 5),
         Option("--request-format", "auto (probe the server), openai (sampling fields at the top level) "
                "or transformers (in a generation_config field, for transformers serve)",
                o.one_of("auto", "openai", "transformers"), "auto"),
         Option("--journal-dir", "where finished samples are journalled so that an interrupted run resumes",
                Path, default_text="<cache>/journals; with --no-cache, none"))),
    FILES_BACKEND: BackendEntry(
        "fairness_core.backends.jsonl:create_backend",
        "completions generated elsewhere (ja-fairness-audit generate, OpenAI Batch output), read from JSONL",
        (COMPLETIONS,),
        needs_model=False),
    "vllm": BackendEntry(
        "fairness_core.backends.vllm:create_backend",
        "vLLM in this process, on GPUs or CPUs (an environment of its own: docs/vllm.md)",
        (Option("--tensor-parallel-size", "GPUs that one copy of the model is split over", o.positive_int, 1),),
        reads_model_files=True),
}, error=UnknownBackendError)


def backend_entry(name: str) -> BackendEntry:
    """The registry entry of ``name``; an unknown name is a usage error with suggestions."""
    return BACKENDS.entry(name)


def create_backend(name: str, settings: BackendSettings) -> Backend:
    """Import the backend's module and build it from ``settings``."""
    return load_target(backend_entry(name).factory)(settings)
