"""Completions from any OpenAI-compatible ``/v1/completions`` server (vLLM, llama.cpp, TGI, ``transformers serve``).

Audit a model where it is served.  Every request carries one prompt, ``n=1``
and its own seed, ``request_seed(run seed, prompt, sample index)``: several
servers ignore ``n``, and one seed for a list of prompts would give every
prompt the same noise.  Every sampling parameter is sent explicitly, because
servers have their own defaults (llama.cpp's server adds ``min_p`` 0.05 and
``repeat_penalty`` 1.1 unless told otherwise).  Two request formats:

* ``openai``: the parameters as top-level fields, plus the neutral values of
  the servers' own extras (:data:`NEUTRAL_FIELDS`).  vLLM and llama.cpp's
  server read them; servers ignore the fields they do not know.
* ``transformers``: ``transformers serve`` rejects any field outside the
  OpenAI schema (a plain ``top_k`` is a 422) and takes the sampling parameters
  as a JSON ``generation_config`` string instead.

Prompts go as token ids wherever the server takes them (vLLM does, and the
OpenAI schema allows a list of ids): the ids the in-process engine feeds the
model (:mod:`~fairness_core.backends.prompt_formats`), from the model's own tokenizer found
locally (a demo name, a folder, the hub cache, or the ``root`` the server
lists).  A server that tokenizes text itself may append an end token, as vLLM
and ``transformers serve`` do for SentencePiece (彼女は → ``[372, 1]``): the
model then continues a text that has ended, and the audit measures another
distribution (0.247 for a planted 0.30).  Where a server takes only text, the
client compares its prompt token count with the local one and the
description (so the report) says what it found.

Under a chat format (``--prompt-format=chat-prefill`` or ``chat-instruction``)
requests go to ``/chat/completions`` as the framing's turns, with the same
seeds, retries, journal and resumption; ``chat-prefill`` adds
``continue_final_message: true, add_generation_prompt: false``, which vLLM
and llama.cpp read.  A server that refuses those turns (``transformers serve``
cannot continue an assistant message: a 422 naming the switches) or has no
chat route gets them rendered here, by the model's chat template from a local
copy of its tokenizer, and posted to ``/completions`` (as ids where it takes
them, else as text without the template's BOS).  A chat API's own refusal
(finish reason ``content_filter``, a ``message.refusal``) is kept as the finish
reason ``content_filter``: the evaluations count it as a refusal.

``--request-format=auto`` (the default) sends one probe request in the
``openai`` format when the backend is created and switches to
``transformers`` when the server answers with a 4xx that names one of the
fields; the format chosen is part of the cache key.  ``transformers serve``
reseeds one process-wide generator per request, so its completions repeat
only at ``--concurrency=1`` (the description says so otherwise); vLLM and
llama.cpp seed each request's own generator.

The client is ``httpx`` on ``asyncio``: one thread keeps ``--concurrency``
requests in flight over pooled keep-alive connections at a small CPU cost
(``benchmarks/bench_http.py``), with per-request timeouts, and its exception
hierarchy (``TransportError`` for refused connections, timeouts and cut
bodies) maps directly onto "retry or not".  ``--request-timeout`` bounds each
request as a whole (httpx's own timeouts bound each read, so a server that
trickles bytes would never trip them).  Retries (exponential backoff with full
jitter, or the server's ``Retry-After``) happen only on connection errors,
unreadable bodies, 408, 429 and 5xx; any other 4xx ends the run at once with
the server's message.  ``--deadline`` bounds the time all of a run's requests
take, the connection probe included: a ``Retry-After`` wait is cut to the time
left, and a long one is announced on stderr before it starts.

An interrupted run resumes: each completion is appended to a journal (one JSON
line, keyed by the fingerprint and protocol, :class:`Journal`) as soon as it
arrives, and the next run asks the server only for the samples the journal
lacks.  The journal is in the run's cache folder or ``--journal-dir``; with
``--no-cache`` and no ``--journal-dir`` nothing is journalled.  The whole-call
generation cache (``cache.py``) still wraps this backend.

The model that the answers name is recorded (``served_model`` in the
description), and the run's notes say so when it is not ``--model``: real
APIs answer an alias with a dated name, so it is a warning, not an error.

The API key is read from ``$JA_FAIRNESS_AUDIT_API_KEY`` (or
``$OPENAI_API_KEY``), stripped of surrounding whitespace, and only ever sent
in the ``Authorization`` header: it is in no description, fingerprint,
journal, report or error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from fairness_core.backends.base import (
    FILTERED,
    AnswerRoomError,
    BackendSettings,
    Completion,
    GenerationError,
    Request,
    ScoreRequest,
    ScoringUnsupportedError,
    request_seed,
)
from fairness_core.backends.journal import Journal, journal_notes
from fairness_core.backends.prompt_formats import PromptFormat
from fairness_core.backends.token_ids import encode_continuation
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.errors import AuditUsageError
from fairness_core.japanese.sentence_reading import cut_reading, needs_more

API_KEY_VARIABLES = ("JA_FAIRNESS_AUDIT_API_KEY", "OPENAI_API_KEY")
#: Part of the cache key: bumped whenever a change to the requests sent can change a completion.
CLIENT_REVISION = "2"
#: The servers' own sampling extras, set to the values that switch them off, sent with every ``openai``-format
#: request: llama.cpp (min_p, repeat_penalty, typical_p, mirostat, dry_multiplier, xtc_probability),
#: vLLM and TGI (repetition_penalty, min_p), OpenAI (presence_penalty, frequency_penalty).
NEUTRAL_FIELDS: Mapping[str, float | int] = {
    "min_p": 0.0, "repeat_penalty": 1.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
    "frequency_penalty": 0.0, "typical_p": 1.0, "mirostat": 0, "dry_multiplier": 0.0, "xtc_probability": 0.0,
}
FINISH_REASONS = ("stop", "length")
#: A chat answer that called tools (OpenAI's current and former names) ended its turn: read as ``stop``, its text
#: (usually none: then the answer is withheld, fairness_core.api.answers) as any other.
TOOL_CALLS = ("tool_calls", "function_call")
#: Where a request is posted: text or token ids to continue, or chat turns for the server's chat template.
ROUTES = {"completions": "/completions", "chat": "/chat/completions"}
#: What the report says of prompts sent as chat turns.
CHAT_PROMPTS = "chat turns (POST /chat/completions: the server renders them with the model's chat template)"
#: The protocol of the requests that probe a server: one token, greedy enough to be cheap.
PROBE_PROTOCOL = SamplingProtocol(num_samples=1, max_new_tokens=1)
#: ``transformers serve`` seeds one process-wide torch generator per request, so requests in flight together
#: draw from each other's streams: measured, 60 of 60 completions repeat at concurrency 1, 0-2 of 60 at 4 or 16.
TRANSFORMERS_SERVE_SEEDING = ("no: transformers serve shares one random generator between the requests in flight; "
                              "completions repeat only at --concurrency=1")
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 30.0
#: A wait for ``Retry-After`` at least this long is announced on stderr before it starts.
ANNOUNCED_WAIT_S = 10.0
#: How the note on answers read within the window alone begins (:meth:`OpenAIBackend._note_not_repeated`).
NOT_REPEATED = "openai: refusal reading:"
#: What error messages show in place of the API key, should a server or a library quote it.
KEY_SHOWN_AS = "<the API key>"


#: How servers refuse a request that does not fit the model's context window (vLLM's max_model_len, OpenAI's
#: context_length_exceeded): an evaluation whose answers need the room is then not judged, as in process.
WINDOW_MESSAGE = re.compile(r"max_model_len|maximum context length|context_length_exceeded", re.IGNORECASE)


class ServerError(AuditUsageError):
    """The server cannot be used as asked (unreachable, model not served, request rejected): the message says why."""


class ApiKeyError(AuditUsageError):
    """The API key in the environment cannot be sent: the message names the variable, never the key."""


def request_body(model: str, prompt: str | list[int], seed: int, protocol: SamplingProtocol,
                 request_format: str, *, chat: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body of one request in ``request_format`` (``openai`` or ``transformers``).

    ``chat`` (the turns and template switches of :meth:`PromptFormat.chat_request`) makes it a
    ``/chat/completions`` body in place of ``prompt``.  Greedy decoding
    (``do_sample: false``) is ``temperature`` 0 in the ``openai`` format (vLLM
    and llama.cpp read it so) and ``do_sample: false`` in a ``generation_config``.

    >>> body = request_body("m", "母は", 7, SamplingProtocol(), "openai")
    >>> body["top_k"], body["min_p"], body["n"], body["seed"]
    (50, 0.0, 1, 7)
    >>> json.loads(request_body("m", "母は", 7, SamplingProtocol(), "transformers")["generation_config"])["top_k"]
    50
    >>> sorted(request_body("m", "", 7, SamplingProtocol(), "openai", chat={"messages": []}).keys())[:3]
    ['dry_multiplier', 'frequency_penalty', 'max_tokens']
    """
    body: dict[str, Any] = {"model": model, **(dict(chat) if chat is not None else {"prompt": prompt}), "n": 1,
                            "seed": seed, "stream": False, "max_tokens": protocol.max_new_tokens}
    if request_format == "transformers":
        body["generation_config"] = json.dumps({
            "do_sample": protocol.do_sample, "temperature": protocol.temperature, "top_k": protocol.top_k,
            "top_p": protocol.top_p, "repetition_penalty": 1.0, "max_new_tokens": protocol.max_new_tokens,
        })
        return body
    sampled = protocol.do_sample
    return {**body, "temperature": protocol.temperature if sampled else 0.0,
            "top_p": protocol.top_p if sampled else 1.0, "top_k": protocol.top_k if sampled else 0,
            **NEUTRAL_FIELDS}


def server_message(response: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, FastAPI and llama.cpp shapes), else the raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or "(empty body)"
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:500]
    return json.dumps(body, ensure_ascii=False)[:500]


def answer_text(choice: Any) -> str | None:
    """The text of one choice: ``text`` (``/completions``) or ``message.content`` (``/chat/completions``, where a
    refusal field, a content filter or tool calls may leave it null: then the refusal's text or ``""``); ``None``
    when it has neither shape.  A served reasoning model's ``reasoning_content`` is never part of it: the thinking
    is not the answer."""
    if not isinstance(choice, dict):
        return None
    if isinstance(choice.get("text"), str):
        return choice["text"]
    message = choice.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), str | None):
        return message.get("content") or message.get("refusal") or ""
    return None


def completion_answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON body of a 200 answer to ``POST /completions`` or ``/chat/completions``, checked to have the shape
    the client reads.

    An object with a ``choices`` list of objects holding a string ``text`` (or a
    ``message`` with a string or null ``content``), and a ``usage`` object of
    whole-number counts if there is one.  Anything else raises ``ValueError``
    quoting the start of the body: the client retries it as a garbled answer
    and in the end reports it, never a Python error.

    >>> completion_answer(httpx.Response(200, json={"choices": ["hello"]}))
    Traceback (most recent call last):
    ...
    ValueError: the body is not an OpenAI completion (a choice has no string 'text' nor a 'message'): '{"choices":["hello"]}'
    """
    body = response.json()
    problem = None
    if not isinstance(body, dict):
        problem = f"a JSON {type(body).__name__}, not an object"
    elif not isinstance(body.get("choices"), list):
        problem = "no 'choices' list"
    elif not all(answer_text(c) is not None for c in body["choices"]):
        problem = "a choice has no string 'text' nor a 'message'"
    elif not isinstance(body.get("usage") or {}, dict):
        problem = "'usage' is not an object"
    else:
        counts = {k: v for k, v in (body.get("usage") or {}).items() if k in ("prompt_tokens", "completion_tokens")}
        if any(type(v) is not int for v in counts.values()):
            problem = f"'usage' counts are not whole numbers: {counts}"
    if problem:
        raise ValueError(f"the body is not an OpenAI completion ({problem}): {response.text[:200]!r}")
    return body


def auth_hint(status: int) -> str:
    """What to do about a 401 or 403 (the key comes from the environment, never from an option), else ``""``."""
    if status not in (401, 403):
        return ""
    return (f" The server wants an API key: set {API_KEY_VARIABLES[0]} (or {API_KEY_VARIABLES[1]}) to the key it "
            f"accepts.")


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds to wait (a number of seconds or an HTTP date), ``None`` when absent or unreadable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


@dataclass(frozen=True)
class ClientSettings:
    base_url: str
    model: str
    seed: int = 0
    concurrency: int = 8
    request_timeout: float = 60.0
    deadline: float | None = None
    max_retries: int = 5
    request_format: str = "auto"
    #: Where finished samples are journalled; ``None``: nowhere.
    journal_dir: Path | None = None
    #: Where the served model's tokenizer is, when known before asking the server (a local folder: a demo model's).
    tokenizer: str | None = None
    #: How a prompt is put to the model (``--prompt-format``): a chat format goes to ``/chat/completions``.
    prompt_format: PromptFormat = PromptFormat()


class OpenAIBackend:
    """Seeded completions from an OpenAI-compatible server; see the module docstring.

    ``usage`` counts requests sent, retries, samples resumed from the journal
    and tokens, for the report's provenance; ``notes`` what the run's summary
    should say (:meth:`summary_lines`).
    """

    def __init__(self, settings: ClientSettings, *, api_key: str | None = None):
        self.settings = settings
        self._api_key = api_key
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._jitter = random.Random()
        self.usage = {"requests": 0, "retries": 0, "resumed": 0, "prompt_tokens": 0, "completion_tokens": 0,
                      "reading_requests": 0}
        self._not_repeated = 0  # answers whose longer request did not start with the window's text
        self.notes: list[str] = []
        self.description: dict[str, str] = {}  # served_model, as the answers name it; completed below
        self._served: list[str] = []
        self._tokenizer = None  # set by _connect when the server takes token ids
        self._renderer = None  # (source, tokenizer) that renders chat turns as text, where a server cannot
        self.route = "completions"  # or "chat": where requests are posted (:data:`ROUTES`), chosen by _connect
        self._spent = 0.0  # seconds of --deadline used
        self._deadline_at: float | None = None  # when the current phase's share of --deadline runs out
        self._announced_until = 0.0
        self._last_problem = ""
        model_root, self.system_fingerprint, self.request_format, prompts = self._within_deadline(
            self._connect(), lambda elapsed: (
                f"--deadline={settings.deadline:g} s passed after {elapsed:.0f} s before the server at "
                f"{settings.base_url} answered the connection probe"
                + (f" (last answer: {self._last_problem})" if self._last_problem else "") + "."))
        self.description = {"backend": "openai", "model": settings.model, "base_url": settings.base_url,
                            "request_format": self.request_format, "prompts": prompts, **self.description}
        if settings.prompt_format.is_chat:
            self.description["prompt_format"] = settings.prompt_format.name
        if self.request_format == "transformers" and settings.concurrency > 1:
            self.description["reproducible"] = TRANSFORMERS_SERVE_SEEDING
        self.fingerprint = {
            "backend": "openai", "base_url": settings.base_url, "model": settings.model, "model_root": model_root,
            "system_fingerprint": self.system_fingerprint or "(none sent)", "request_format": self.request_format,
            "neutral_fields": json.dumps(dict(NEUTRAL_FIELDS), sort_keys=True) if self.request_format == "openai" else "",
            "seed": str(settings.seed), "client": CLIENT_REVISION, "prompts": prompts,
            **settings.prompt_format.fingerprint(self._renderer[1] if self._renderer else self._tokenizer),
            **({"route": self.route} if settings.prompt_format.is_chat else {}),
        }

    def summary_lines(self) -> list[str]:
        """What the run's summary should say about this backend: another served model, a journal not kept."""
        return list(self.notes)

    def _within_deadline(self, work: Coroutine[Any, Any, Any], passed: Callable[[float], str]) -> Any:
        """Run ``work`` in what is left of ``--deadline``; ``passed(seconds spent)`` is the message when it runs out.

        Every phase (the connection probe, each ``generate`` call) counts
        against one budget, so the deadline bounds all of a run's requests.
        """
        deadline = self.settings.deadline
        left = None if deadline is None else max(0.0, deadline - self._spent)
        started = time.monotonic()
        self._deadline_at = None if left is None else started + left
        with self._key_kept_out():
            try:
                return asyncio.run(asyncio.wait_for(work, timeout=left))
            except asyncio.TimeoutError:
                raise GenerationError(passed(self._spent + time.monotonic() - started)) from None
            finally:
                self._spent += time.monotonic() - started
                self._deadline_at = None

    @contextlib.contextmanager
    def _key_kept_out(self) -> Iterator[None]:
        """Re-raise a usage error whose message quotes the API key (a server or library echoing it) without it."""
        try:
            yield
        except AuditUsageError as err:
            if self._api_key and self._api_key in str(err):
                raise type(err)(str(err).replace(self._api_key, KEY_SHOWN_AS)) from None
            raise

    def _client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=self.settings.concurrency,
                              max_keepalive_connections=self.settings.concurrency)
        return httpx.AsyncClient(base_url=self.settings.base_url, headers=self._headers, limits=limits,
                                 timeout=self.settings.request_timeout)

    async def _connect(self) -> tuple[str, str | None, str, str]:
        """Check that ``GET /models`` lists the model; its ``root`` (vLLM: the weights' path or hub id),
        the server's system fingerprint, the request format to use and how prompts are sent (:meth:`_prompts`)."""
        s = self.settings
        async with self._client() as client:
            try:
                response = await asyncio.wait_for(client.get("/models"), timeout=s.request_timeout)
            except (httpx.TimeoutException, asyncio.TimeoutError):
                raise ServerError(f"--base-url={s.base_url}: the server did not answer GET /models within "
                                  f"--request-timeout={s.request_timeout:g} s.") from None
            except httpx.TransportError as err:
                raise ServerError(f"--base-url={s.base_url}: cannot reach the server ({type(err).__name__}: {err}).") from None
            if response.status_code != 200:
                raise ServerError(f"--base-url={s.base_url}: GET /models answered HTTP {response.status_code}: "
                                  f"{server_message(response)}.{auth_hint(response.status_code)}")
            try:
                served = {entry["id"]: entry for entry in response.json()["data"]}
            except (ValueError, KeyError, TypeError):
                raise ServerError(f"--base-url={s.base_url}: GET /models did not answer an OpenAI model list "
                                  f"({{\"data\": [{{\"id\": ...}}]}}): {response.text[:200]!r}") from None
            if s.model not in served:
                raise ServerError(f"--model={s.model} is not served at {s.base_url}; it serves: "
                                  f"{', '.join(map(str, served)) or '(nothing)'}")
            model_root = str(served[s.model].get("root", s.model))
            for route in (("chat", "completions") if s.prompt_format.is_chat else ("completions",)):
                connected = await self._probe(client, route, model_root)
                if connected is not None:
                    return model_root, *connected
            raise AssertionError("unreachable: the completions route either connects or raises")

    async def _probe(self, client: httpx.AsyncClient, route: str,
                     model_root: str) -> tuple[str | None, str, str] | None:
        """One probe request on ``route`` in each request format: the server's system fingerprint, the format to
        use and how prompts are sent; ``None`` when a chat server cannot take this format's turns (the audit then
        renders them itself and posts them to ``/completions``)."""
        s = self.settings
        probe = Request("こんにちは")
        if route == "completions" and s.prompt_format.is_chat:
            self._renderer = self._chat_tokenizer(model_root)
        formats = ["openai", "transformers"] if s.request_format == "auto" else [s.request_format]
        for request_format in formats:
            body = self._body(probe, 0, PROBE_PROTOCOL, request_format, route)
            try:
                response, answer = await self._post(client, body, probe, route)
            except GenerationError as err:
                raise ServerError(f"--base-url={s.base_url}: the server lists the model but its first "
                                  f"{ROUTES[route]} request failed: {err}") from None
            if answer is not None:
                self.route = route
                prompts = (CHAT_PROMPTS if route == "chat"
                           else await self._prompts(client, request_format, probe, answer, model_root))
                return answer.get("system_fingerprint"), request_format, prompts
            message = server_message(response)
            hint = auth_hint(response.status_code)
            if hint:
                raise ServerError(f"--base-url={s.base_url} refused the completion request (HTTP "
                                  f"{response.status_code}): {message}.{hint}")
            if route == "chat" and (response.status_code in (404, 405)
                                    or any(switch in message for switch in s.prompt_format.template_flags())):
                return None
            if not any(field in message for field in ("top_k", *NEUTRAL_FIELDS)):
                break
        raise ServerError(f"{s.base_url} rejects the {ROUTES[route]} request (HTTP {response.status_code}): {message}. "
                          f"Request formats tried: {', '.join(formats[:formats.index(request_format) + 1])}; "
                          "the audit needs a server that takes top_k, top_p, temperature and seed.")

    def _chat_tokenizer(self, model_root: str):
        """The served model's tokenizer, found locally, to render chat turns where the server cannot (a
        ``transformers serve`` cannot continue an assistant message); a usage error when there is none."""
        s = self.settings
        found = local_tokenizer([s.tokenizer, s.model, model_root])
        if found is None or not getattr(found[1], "chat_template", None):
            raise ServerError(
                f"--prompt-format={s.prompt_format.name}: the server at {s.base_url} does not take these chat turns on "
                f"/chat/completions, and no local copy of the model's tokenizer with a chat template was found to "
                f"render them for /completions. Give --model as a local folder, or use --prompt-format=chat-instruction.")
        return found

    def _body(self, request: Request, seed: int, protocol: SamplingProtocol, request_format: str,
              route: str) -> dict[str, Any]:
        """The body of ``request`` on ``route``: chat turns, token ids, or text (rendered by the chat template)."""
        fmt = self.settings.prompt_format
        if route == "chat":
            return request_body(self.settings.model, "", seed, protocol, request_format,
                                chat=fmt.chat_request(request.prompt, protocol))
        if self._tokenizer is not None:
            prompt: str | list[int] = fmt.encode(self._tokenizer, request.prompt, protocol)
        elif fmt.is_chat:
            assert self._renderer is not None, "set by _probe before chat turns go to /completions"
            prompt = fmt.render(self._renderer[1], request.prompt, protocol)
        else:
            prompt = request.prompt
        return request_body(self.settings.model, prompt, seed, protocol, request_format)

    async def _prompts(self, client: httpx.AsyncClient, request_format: str, probe: Request, answer: dict[str, Any],
                       model_root: str) -> str:
        """Send prompts as token ids if the server takes them (``self._tokenizer`` is then set); what the report says.

        ``answer`` is the server's answer to ``probe`` sent as text: its prompt
        token count, against the local encoding's, shows an end token the server
        appends, or a local tokenizer that is not the server's (then ids are not sent).
        """
        s = self.settings
        found = self._renderer or local_tokenizer([s.tokenizer, s.model, model_root])
        if found is None:
            return ("text: no local copy of the model's tokenizer was found, so an end token that the server "
                    "appends to each prompt cannot be detected")
        source, tokenizer = found
        ids = s.prompt_format.encode(tokenizer, probe.prompt, PROBE_PROTOCOL)
        counted = (answer.get("usage") or {}).get("prompt_tokens")
        if counted is not None and counted not in (len(ids), len(ids) + 1):
            return (f"text: the server counts {counted} tokens in {probe.prompt!r} where the tokenizer at {source} "
                    f"gives {len(ids)}: it is not the served model's tokenizer, so ids are not sent")
        body = request_body(s.model, ids, 0, PROBE_PROTOCOL, request_format)
        try:
            _, taken = await self._post(client, body, probe, "completions")
        except GenerationError:
            taken = None
        if taken is not None:
            self._tokenizer = tokenizer
            return f"token ids (the in-process engine's encoding, tokenizer at {source})"
        appended = f"appends {counted - len(ids)} token" if counted is not None and counted > len(ids) else None
        return (f"text (the server takes no token ids); it {appended} to each prompt ({probe.prompt!r}: {counted} "
                f"tokens there, {len(ids)} locally), which the model reads as the end of the text"
                if appended else "text (the server takes no token ids); its prompt token counts match the local encoding's")

    async def _post(self, client: httpx.AsyncClient, body: dict, request: Request,
                    route: str) -> tuple[httpx.Response, dict[str, Any] | None]:
        """POST to ``route`` (:data:`ROUTES`), retrying transient failures: the final response and, for a 200, its checked body
        (:func:`completion_answer`); ``None`` with a 4xx to report."""
        attempt = 0
        while True:
            wait = None
            try:
                self.usage["requests"] += 1
                response = await asyncio.wait_for(client.post(ROUTES[route], json=body),
                                                  timeout=self.settings.request_timeout)
                if response.status_code == 200:
                    # a cut or garbled body is a transient failure, like a dropped connection
                    answer = completion_answer(response)
                    self._record_served(answer)
                    return response, answer
                problem = f"HTTP {response.status_code}: {server_message(response)}"
                if response.status_code not in (408, 429) and response.status_code < 500:
                    return response, None
                wait = retry_after_seconds(response)
                if wait is not None:
                    problem += f" (Retry-After: {wait:.0f} s)"
            except (httpx.TimeoutException, asyncio.TimeoutError):
                problem = f"no answer within --request-timeout={self.settings.request_timeout:g} s"
            except (httpx.TransportError, ValueError) as err:
                problem = f"{type(err).__name__}: {err}"
            self._last_problem = problem
            if attempt == self.settings.max_retries:
                raise GenerationError(
                    f"The sample {request.sample_index} of the prompt {request.prompt!r}"
                    f"{f' ({request.prompt_id})' if request.prompt_id else ''} failed after "
                    f"{attempt + 1} attempts at {self.settings.base_url}; last error: {problem}")
            self.usage["retries"] += 1
            await asyncio.sleep(self._retry_wait(wait, attempt, problem))
            attempt += 1

    def _retry_wait(self, asked: float | None, attempt: int, problem: str) -> float:
        """Seconds to wait before the next attempt: ``Retry-After`` (``asked``) or the backoff, cut to the
        time left before ``--deadline``; a long wait is announced on stderr first."""
        wait = asked if asked is not None else self._backoff(attempt)
        left = None if self._deadline_at is None else max(0.0, self._deadline_at - time.monotonic())
        if left is not None:
            wait = min(wait, left)
        now = time.monotonic()
        if asked is not None and wait >= ANNOUNCED_WAIT_S and now + wait > self._announced_until + 1:
            self._announced_until = now + wait
            bound = (f"--deadline ends the run in {left:.0f} s" if left is not None
                     else "no --deadline is set; --deadline=SECONDS bounds the wait")
            print(f"{self.settings.base_url} answered {problem}: the server asked to wait {asked:.0f} s; waiting "
                  f"{wait:.0f} s before retrying ({bound})", file=sys.__stderr__ or sys.stderr, flush=True)
        return wait

    def _record_served(self, answer: Mapping[str, Any]) -> None:
        """Keep each model name the answers give (``served_model``); a note when one is not ``--model``."""
        served = answer.get("model")
        if not isinstance(served, str) or not served or served in self._served:
            return
        self._served.append(served)
        self.description["served_model"] = ", ".join(self._served)
        if served != self.settings.model:
            self.notes.append(f"openai: the server at {self.settings.base_url} answered as the model {served!r}, not "
                              f"--model={self.settings.model}: a dated name for an alias is expected, another model "
                              f"is not; check which model the server serves under that name")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter, so that many clients do not retry in lockstep."""
        return self._jitter.uniform(0, min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** attempt))

    async def _complete(self, client: httpx.AsyncClient, request: Request, seed: int, protocol: SamplingProtocol,
                        reading: int) -> Completion:
        """The answer in the protocol's window, and where the window ends before the answer's opening sentences do,
        the answer read on to their end within ``reading`` tokens (:attr:`Completion.reading`).

        The window is the very request the protocol makes (``max_tokens`` the
        window), so what the evaluations score does not depend on the reading.
        The reading is a second request, the same but for ``max_tokens`` =
        ``reading``, with the same seed: a server that seeds each request
        (vLLM, llama.cpp) repeats the window's tokens and goes on.  Its text is
        taken only where it starts with the window's text; where it does not
        (a server that does not repeat a seeded answer), the refusal is read in
        the window alone and the run's notes say how often.  One request with
        ``logprobs`` would give the tokens to cut the window at, but the token
        strings servers return (SentencePiece pieces, ``bytes:`` fragments) do
        not always concatenate to the answer, and many servers send none.
        """
        window = await self._ask(client, request, seed, protocol)
        if reading <= protocol.max_new_tokens or window.finish_reason != "length" \
                or not needs_more(window.text):
            return window
        longer = await self._ask(client, request, seed, protocol.model_copy(update={"max_new_tokens": reading}))
        self.usage["reading_requests"] += 1
        if not longer.text.startswith(window.text):
            self._not_repeated += 1
            return window
        return Completion(window.text, window.num_tokens, window.finish_reason,
                          cut_reading(longer.text, len(window.text)))

    async def _ask(self, client: httpx.AsyncClient, request: Request, seed: int,
                   protocol: SamplingProtocol) -> Completion:
        body = self._body(request, seed, protocol, self.request_format, self.route)
        response, answer = await self._post(client, body, request, self.route)
        where = f"the sample {request.sample_index} of the prompt {request.prompt!r}"
        if answer is None:
            message = server_message(response)
            if response.status_code == 400 and WINDOW_MESSAGE.search(message):
                raise AnswerRoomError(f"{self.settings.base_url} rejected {where}: the prompt and max_new_tokens="
                                      f"{protocol.max_new_tokens} do not fit the served model's context window "
                                      f"({message}); lower max_new_tokens in the thresholds file, or serve the model "
                                      f"with a longer window")
            raise ServerError(f"{self.settings.base_url} rejected {where} (HTTP {response.status_code}): "
                              f"{message}.{auth_hint(response.status_code)}")
        choices = answer.get("choices") or []
        if len(choices) != 1:
            raise GenerationError(f"The server returned {len(choices)} choices for {where}; exactly 1 was asked for (n=1).")
        choice = choices[0]
        allowed = FINISH_REASONS if self.route == "completions" else (*FINISH_REASONS, FILTERED, *TOOL_CALLS)
        if choice.get("finish_reason") not in allowed:
            raise GenerationError(f"The server ended {where} with finish_reason={choice.get('finish_reason')!r}; "
                                  f"allowed: {', '.join(allowed)}.")
        # A chat API's own refusal (a filtered answer, OpenAI's message.refusal) is a refusal whatever the text.
        refused = choice["finish_reason"] == FILTERED or bool((choice.get("message") or {}).get("refusal"))
        usage = answer.get("usage") or {}
        num_tokens = usage.get("completion_tokens")
        if num_tokens is not None and num_tokens > protocol.max_new_tokens:
            raise GenerationError(f"The server generated {num_tokens} tokens for {where}; max_tokens was "
                                  f"{protocol.max_new_tokens}: it does not honour the protocol.")
        self.usage["prompt_tokens"] += usage.get("prompt_tokens", 0)
        self.usage["completion_tokens"] += num_tokens or 0
        finish = "stop" if choice["finish_reason"] in TOOL_CALLS else choice["finish_reason"]
        return Completion(answer_text(choice) or "", -1 if num_tokens is None else num_tokens,
                          FILTERED if refused else finish)

    def generate(self, requests: Sequence[Request], protocol: SamplingProtocol) -> list[Completion]:
        """One completion per request, in order; samples already in the journal are not asked for again.

        ``num_tokens`` is the server's ``usage.completion_tokens``, or -1 where it sends no usage.
        """
        reading = self.settings.prompt_format.reading_tokens(protocol)
        protocol = self.settings.prompt_format.sampled(protocol)
        directory = self.settings.journal_dir
        journal = Journal(directory, self.fingerprint, protocol) if directory is not None else None
        done = journal.read() if journal is not None else {}
        results: list[Completion | None] = [done.get((r.prompt, r.sample_index)) for r in requests]
        pending = [i for i, completion in enumerate(results) if completion is None]
        self.usage["resumed"] += len(requests) - len(pending)
        if not pending:
            return results  # type: ignore[return-value]

        def passed(elapsed: float) -> str:
            missing = sum(results[i] is None for i in pending)
            received = len(pending) - missing
            if journal is None:
                kept = f"the {received} received are not kept (with --no-cache, only --journal-dir keeps them)"
            elif journal.not_kept:
                kept = f"the {received} received are not kept ({journal.not_kept})"
            else:
                kept = f"the {received} received are kept in {journal.path}: run again to resume"
            return (f"--deadline={self.settings.deadline:g} s passed after {elapsed:.0f} s with {missing} of "
                    f"{len(requests)} completions missing; {kept}.")

        with journal.writing() if journal is not None else contextlib.nullcontext():
            try:
                self._within_deadline(self._generate_pending(requests, pending, results, protocol, journal, reading),
                                      passed)
            finally:
                journal_notes(journal, self.notes)
                self._note_not_repeated()
        return results  # type: ignore[return-value]

    def _note_not_repeated(self) -> None:
        """A note, kept current, of the answers whose refusal was read in the window alone (:meth:`_complete`)."""
        self.notes[:] = [n for n in self.notes if not n.startswith(NOT_REPEATED)]
        if self._not_repeated:
            self.notes.append(f"{NOT_REPEATED} {self._not_repeated} answer(s) were read for refusals within the "
                              f"window alone: asked again with the same seed and a longer max_tokens, the server at "
                              f"{self.settings.base_url} did not repeat the answer's start, so a refusal whose verb "
                              f"comes after the window may be missed there")

    async def _generate_pending(self, requests, pending, results, protocol, journal: Journal | None,
                                reading: int) -> None:
        queue = iter(pending)  # shared by the workers: each index is taken exactly once

        async def worker(client):
            for index in queue:
                request = requests[index]
                seed = request_seed(self.settings.seed, request.prompt, request.sample_index)
                results[index] = await self._complete(client, request, seed, protocol, reading)
                if journal is not None:
                    journal.append(request, seed, results[index])

        async with self._client() as client:
            workers = [asyncio.ensure_future(worker(client)) for _ in range(min(self.settings.concurrency, len(pending)))]
            try:
                await asyncio.gather(*workers)
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Each continuation's log-probability after its context, from the server's echoed prompt log-probabilities.

        One ``/completions`` request per distinct text (:func:`score_body`); a
        server that answers without them is one :class:`ScoringUnsupportedError`.
        """
        texts = list(dict.fromkeys((r.context, r.continuation) for r in requests))
        scores = asyncio.run(self._score_all(texts))
        return [scores[(r.context, r.continuation)] for r in requests]

    async def _score_all(self, texts: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        found: dict[tuple[str, str], float] = {}
        queue = iter(texts)

        async def worker(client):
            for context, continuation in queue:
                found[(context, continuation)] = await self._score_one(client, context, continuation)

        async with self._client() as client:
            await asyncio.gather(*(worker(client) for _ in range(min(self.settings.concurrency, len(texts)))))
        return found

    async def _score_one(self, client: httpx.AsyncClient, context: str, continuation: str) -> float:
        if self._tokenizer is not None:
            context_ids, continuation_ids = encode_continuation(self._tokenizer, context, continuation)
            prompt: str | list[int] = context_ids + continuation_ids
        else:
            prompt = context + continuation
        response, answer = await self._post(client, score_body(self.settings.model, prompt),
                                            Request(context + continuation), "completions")
        if answer is None:
            raise ScoringUnsupportedError(f"{self.settings.base_url} does not score continuations: it answers a request "
                                          f"with echo, logprobs and max_tokens 0 with HTTP {response.status_code}: "
                                          f"{server_message(response)}")
        try:
            if self._tokenizer is not None:
                return continuation_logprob(answer, first_token=len(context_ids), tokens=len(continuation_ids))
            return continuation_logprob(answer, first_character=len(context),
                                        end_character=len(context) + len(continuation))
        except ValueError as err:
            raise ScoringUnsupportedError(f"{self.settings.base_url} does not score continuations: {err}") from None


def score_body(model: str, prompt: str | list[int]) -> dict[str, Any]:
    """A request for the prompt's own token log-probabilities and nothing generated (vLLM's ``echo`` with ``max_tokens`` 0).

    >>> score_body("m", [5, 6])["echo"], score_body("m", [5, 6])["max_tokens"]
    (True, 0)
    """
    return {"model": model, "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 0, "temperature": 0.0,
            "n": 1, "stream": False}


def continuation_logprob(answer: dict[str, Any], *, first_token: int | None = None, tokens: int | None = None,
                         first_character: int | None = None, end_character: int | None = None) -> float:
    """The sum of the echoed prompt's token log-probabilities from ``first_token`` on (``tokens`` of them), or, for a
    prompt sent as text, of the tokens that start at or after ``first_character`` and before ``end_character``;
    ``ValueError`` without them.  A token that starts at the end of the text is one the server appended to the
    prompt (a SentencePiece ``</s>``): the model reads it, but it is no part of the continuation.

    >>> answer = {"choices": [{"text": "ab", "logprobs": {"token_logprobs": [None, -1.0, -0.5], "text_offset": [0, 1, 2]}}]}
    >>> continuation_logprob(answer, first_token=1, tokens=2), continuation_logprob(answer, first_character=2)
    (-1.5, -0.5)
    """
    choices = answer.get("choices") or [{}]
    logprobs = choices[0].get("logprobs") or {}
    values = logprobs.get("token_logprobs")
    if not isinstance(values, list) or not values:
        raise ValueError("its answer holds no logprobs.token_logprobs of the prompt (it needs echo with logprobs)")
    if first_token is not None and tokens is not None:
        picked = values[first_token:first_token + tokens]
        if len(picked) != tokens:
            raise ValueError(f"it echoed {len(values)} token log-probabilities for a prompt of {first_token + tokens} tokens")
    else:
        offsets = logprobs.get("text_offset")
        if not isinstance(offsets, list) or len(offsets) != len(values):
            raise ValueError("its answer holds no logprobs.text_offset to find the continuation's tokens by")
        start = offsets[0] if offsets else 0
        end = float("inf") if end_character is None else end_character
        picked = [v for v, offset in zip(values, offsets) if (first_character or 0) <= offset - start < end]
    if not picked or any(not isinstance(v, (int, float)) for v in picked):
        raise ValueError("its answer has no log-probability for the continuation's tokens")
    return float(sum(picked))


def local_tokenizer(candidates: Sequence[str | None]):
    """``(source, tokenizer)`` for the first candidate that loads without the network, else ``None``."""
    from transformers import AutoTokenizer

    for candidate in dict.fromkeys(c for c in candidates if c):
        try:
            return candidate, AutoTokenizer.from_pretrained(candidate, local_files_only=True)
        except Exception:  # noqa: BLE001 - any failure only means "not this one": the next candidate is tried
            continue
    return None


def api_key_from_environment() -> str | None:
    """The first of :data:`API_KEY_VARIABLES` that is set, without surrounding whitespace (a key pasted with its
    line break); one that still cannot be an HTTP header value is an :class:`ApiKeyError` naming the variable.

    The key is never an option, so never in a log, and no message quotes it.
    """
    for name in API_KEY_VARIABLES:
        key = os.environ.get(name, "").strip()
        if not key:
            continue
        if not key.isascii():
            found = "a character that is not ASCII (a full-width letter, a typographic quote or dash?)"
        elif not key.isprintable():
            found = "a control character (a line break or a tab inside it?)"
        else:
            return key
        raise ApiKeyError(f"${name} cannot be sent as an HTTP header value: it holds {found}. An API key is printable "
                          f"ASCII; set {name} to the key alone.")
    return None


def create_backend(settings: BackendSettings) -> OpenAIBackend:
    """The registry's factory: ``--base-url`` etc. arrive in ``settings.options``."""
    o = settings.options
    return OpenAIBackend(ClientSettings(
        base_url=o["base_url"], model=settings.model.name, seed=settings.seed, concurrency=o["concurrency"],
        request_timeout=o["request_timeout"], deadline=o["deadline"], max_retries=o["max_retries"],
        request_format=o["request_format"], prompt_format=settings.prompt_format,
        journal_dir=o["journal_dir"] or (settings.cache_dir / "journals" if settings.cache_dir else None),
        tokenizer=settings.model.location if settings.model.local else None,
    ), api_key=api_key_from_environment())
