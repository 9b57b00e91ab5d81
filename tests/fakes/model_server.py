"""A scripted OpenAI-compatible chat-completions server for tests and benchmarks.

A real HTTP/1.1 server on 127.0.0.1 (keep-alive, chunked transfer encoding) that answers
``POST /v1/chat/completions`` the way llama.cpp's llama-server and vLLM do: a
``text/event-stream`` of ``data: {json}`` chunks ending with ``data: [DONE]`` (or one JSON
body when the request has no ``stream: true``), and ``GET /v1/models``. Each POST consumes
one queued :class:`Response`, made by the builders ``text``, ``tool_calls``, ``error``,
``error_text``, ``hang``, ``gated``, ``raw``, ``token_text`` and ``flood``. A reply can also
end without ``[DONE]`` (``done=False``) or be cut off mid-body (``abort``), as a crashed
server or a proxy does. ``POST /v1/responses`` (the Responses API,
which Codex speaks) streams the text of the same replies as Responses events.

Run ``python -m tests.fakes.model_server --port N [--text-tokens N]`` to serve a fixed
N-token reply to every request (for benchmarks and manual tries).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import select
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MODEL_ID = "scripted"
NO_SCRIPT_TEXT = "(no scripted response)"
_WORDS = ("the ", "model ", "writes ", "a ", "long ", "answer ", "with ", "short ", "words ", "now ")


@dataclass(frozen=True)
class Pause:
    """A step of a reply: send nothing for ``seconds`` (ends early on disconnect or stop;
    with ``until``, the reply goes on as soon as that event is set)."""

    seconds: float
    until: threading.Event | None = None


# A data payload (a dict is JSON-encoded, a str sent verbatim), a pause, or bytes already
# framed as SSE events (``data: ...\n\n``), written as they are in one HTTP chunk.
Step = JSON | str | Pause | bytes


@dataclass(frozen=True)
class Response:
    """One scripted answer: an HTTP error, or the steps of a reply built per request.

    A streamed reply ends with ``data: [DONE]`` unless ``done`` is False; with ``abort`` the
    connection is shut after the steps, without the body's terminating chunk. ``body``, when
    set, is an error's whole body, sent as text/plain instead of the JSON error object.
    """

    status: int = 200
    message: str = ""
    error_type: str = "server_error"
    start_delay: float = 0.0
    build: Callable[[JSON], Iterable[Step]] | None = None
    done: bool = True
    abort: bool = False
    body: str | None = None


Responder = Response | Callable[[JSON], Response]


def _estimate_tokens(chars: int) -> int:
    return (chars + 3) // 4


def prompt_tokens(request: JSON) -> int:
    """The prompt size the server reports (and judges against its window): a quarter of the
    characters of the messages and tools."""
    return max(1, _estimate_tokens(len(json.dumps([request.get("messages"), request.get("tools")]))))


class _Script:
    """Accumulates the chunk sequence of one reply to one request."""

    def __init__(self, request: JSON, delay: float = 0.0) -> None:
        options = request.get("stream_options") or {}
        streaming = bool(request.get("stream"))
        self.include_usage = not streaming or bool(options.get("include_usage"))
        self.model = str(request.get("model") or MODEL_ID)
        self.prompt_tokens = prompt_tokens(request)
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.delay = delay
        self.steps: list[Step] = []
        self.generated_chars = 0
        self._role_sent = False

    def _chunk(self, choices: list[JSON]) -> JSON:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "system_fingerprint": "b0-scripted", "choices": choices}

    def delta(self, delta: JSON, chars: int = 0, finish_reason: str | None = None) -> None:
        """Append a chunk carrying ``delta`` (the first one also carries the role)."""
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        if self.delay > 0 and self.steps:
            self.steps.append(Pause(self.delay))
        self.generated_chars += chars
        self.steps.append(self._chunk([{"index": 0, "delta": delta, "finish_reason": finish_reason}]))

    def content(self, pieces: list[str], key: str = "content") -> None:
        for piece in pieces:
            self.delta({key: piece}, len(piece))

    def finish(self, reason: str, usage: bool) -> list[Step]:
        """Append the finish chunk, the usage chunk if asked for, and llama.cpp's timings."""
        self.delta({}, finish_reason=reason)
        if usage and self.include_usage:
            completion = _estimate_tokens(self.generated_chars)
            chunk = self._chunk([])
            chunk["usage"] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": completion,
                              "total_tokens": self.prompt_tokens + completion}
            self.steps.append(chunk)
        last = self.steps[-1]
        assert isinstance(last, dict)
        last["timings"] = {"prompt_n": self.prompt_tokens, "prompt_ms": 1.5,
                           "predicted_n": _estimate_tokens(self.generated_chars),
                           "predicted_ms": 2.5, "predicted_per_second": 400.0}
        return self.steps


def _chunks(text_: str, size: int) -> list[str]:
    if size < 1:
        raise ValueError("chunk_size must be at least 1")
    return [text_[i:i + size] for i in range(0, len(text_), size)]


def _split(text_: str, parts: int) -> list[str]:
    """Split into ``parts`` roughly equal non-empty pieces (one empty piece for "")."""
    parts = max(1, min(parts, len(text_)))
    bounds = [len(text_) * i // parts for i in range(parts + 1)]
    return [text_[bounds[i]:bounds[i + 1]] for i in range(parts)]


def text(content: str, *, chunk_size: int = 4, reasoning: str | None = None, usage: bool = True,
         delay: float = 0.0, finish_reason: str = "stop", start_delay: float = 0.0,
         done: bool = True) -> Response:
    """A text reply: ``reasoning`` as ``delta.reasoning_content`` first, then ``content``.

    ``delay`` is the pause between chunks; ``start_delay`` the pause before the response
    headers (a server still processing the prompt); ``done=False`` leaves out ``[DONE]``.
    """
    def build(request: JSON) -> list[Step]:
        script = _Script(request, delay)
        script.content(_chunks(reasoning or "", chunk_size), "reasoning_content")
        script.content(_chunks(content, chunk_size))
        return script.finish(finish_reason, usage)

    _chunks(content, chunk_size)
    return Response(start_delay=start_delay, build=build, done=done)


def token_text(count: int, *, delay: float = 0.0) -> Response:
    """A text reply of ``count`` tokens (a short word plus a space), one token per chunk."""
    def build(request: JSON) -> list[Step]:
        script = _Script(request, delay)
        script.content([_WORDS[i % len(_WORDS)] for i in range(count)])
        return script.finish("stop", True)

    return Response(build=build)


def tool_calls(calls: list[tuple[str, str, str]], *, content: str | None = "", split: int = 3,
               usage: bool = True, finish_reason: str = "tool_calls", delay: float = 0.0,
               start_delay: float = 0.0, cut: Literal["end", "abort"] | None = None) -> Response:
    """Tool-call deltas for ``calls`` = [(call_id, name, raw argument text)], after ``content``.

    The first delta of a call carries index, id, type and name; later ones carry only the
    index and an argument fragment. Deltas beside tool calls carry ``content: ""`` as
    llama.cpp sends; ``content=None`` leaves the key out (no content delta at all).

    ``cut`` stops the reply after the first argument fragment of the last call (no finish
    chunk, no ``[DONE]``): ``"end"`` still ends the HTTP body properly, ``"abort"`` shuts
    the connection mid-body.
    """
    beside: JSON = {} if content is None else {"content": ""}

    def build(request: JSON) -> list[Step]:
        script = _Script(request, delay)
        script.content(_chunks(content or "", 4))
        for index, (call_id, name, arguments) in enumerate(calls):
            for n, piece in enumerate(_split(arguments, split)):
                call: JSON = {"index": index, "function": {"arguments": piece}}
                if n == 0:
                    call = {"index": index, "id": call_id, "type": "function",
                            "function": {"name": name, "arguments": piece}}
                script.delta({**beside, "tool_calls": [call]}, len(piece))
                if cut and index == len(calls) - 1:
                    return script.steps
        return script.finish(finish_reason, usage)

    return Response(start_delay=start_delay, build=build, done=cut is None, abort=cut == "abort")


def error(status: int, message: str = "error", *, type_: str = "server_error") -> Response:
    """An HTTP error with a JSON body ``{"error": {...}}``, sent before any stream starts."""
    return Response(status=status, message=message, error_type=type_)


def error_text(status: int, body: str) -> Response:
    """An HTTP error whose body is ``body`` as plain text (a proxy's page, not JSON)."""
    return Response(status=status, body=body)


def hang(seconds: float = 30.0, *, after_text: str = "") -> Response:
    """Stream ``after_text``, then nothing for ``seconds``, then finish normally."""
    def build(request: JSON) -> list[Step]:
        script = _Script(request)
        script.content(_chunks(after_text, 4))
        script.steps.append(Pause(seconds))
        return script.finish("stop", True)

    return Response(build=build)


def gated(before: str, after: str, gate: threading.Event, *, timeout: float = 30.0) -> Response:
    """Stream ``before``, wait until ``gate`` is set (at most ``timeout``), then ``after``."""
    def build(request: JSON) -> list[Step]:
        script = _Script(request)
        script.content(_chunks(before, 4))
        script.steps.append(Pause(timeout, until=gate))
        script.content(_chunks(after, 4))
        return script.finish("stop", True)

    return Response(build=build)


def raw(chunks: list[JSON | str], *, delay: float = 0.0, done: bool = True,
        abort: bool = False) -> Response:
    """Send exactly these data payloads (dicts JSON-encoded, strings verbatim), then [DONE]
    (unless ``done`` is False; ``abort`` shuts the connection mid-body instead)."""
    def build(request: JSON) -> list[Step]:
        steps: list[Step] = []
        for chunk in chunks:
            if delay > 0 and steps:
                steps.append(Pause(delay))
            steps.append(chunk)
        return steps

    return Response(build=build, done=done and not abort, abort=abort)


def flood(kind: Literal["content", "reasoning", "arguments"] = "content", piece: str = "x", *,
          batch: int = 512) -> Response:
    """An endless streamed reply, as fast as the socket takes it: chunks whose delta is
    ``piece`` (as content, reasoning, or the arguments of one tool call), ``batch`` events
    to a write. It never finishes; it ends when the client goes away or the server stops.
    Streaming requests only (a non-streaming one would never be answered)."""
    def build(request: JSON) -> Iterable[Step]:
        script = _Script(request)
        if kind == "arguments":
            script.delta({"tool_calls": [{"index": 0, "id": "call_flood", "type": "function",
                                          "function": {"name": "bash", "arguments": ""}}]})
            delta: JSON = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        else:
            delta = {"reasoning_content" if kind == "reasoning" else "content": piece}
        event = script._chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        blob = f"data: {json.dumps(event)}\n\n".encode() * batch
        return itertools.chain(script.steps, itertools.repeat(blob))

    return Response(build=build, done=False)


def _merge_chunks(chunks: list[JSON]) -> JSON:
    """Fold streamed chunks into the one ``chat.completion`` body a non-streaming call gets."""
    message: JSON = {"role": "assistant", "content": ""}
    reasoning, calls, finish, usage = "", {}, None, None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            message["content"] += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part["index"], {
                    "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    head = chunks[0] if chunks else {}
    return {"id": head.get("id", "chatcmpl-raw"), "object": "chat.completion",
            "created": head.get("created", int(time.time())), "model": head.get("model", MODEL_ID),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


def _invalid_history(request: JSON) -> str | None:
    """llama-server answers 500 when a history tool call carries arguments that are not JSON."""
    for message in request.get("messages") or []:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            arguments = (call.get("function") or {}).get("arguments")
            if not isinstance(arguments, str):
                continue
            try:
                json.loads(arguments)
            except ValueError as exc:
                return f"Failed to parse tool call arguments as JSON: {exc}"
    return None


def _unanswered_calls(request: JSON) -> str | None:
    """Strict servers (OpenAI's API among them) refuse a history in which a tool call has
    no result, a result answers no call of the assistant message before it, or one
    assistant message repeats a call id."""
    pending: list[str] = []
    for message in request.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            if pending:
                break
            ids = [str(c.get("id")) for c in message.get("tool_calls") or []]
            if len(set(ids)) != len(ids):
                return f"duplicate tool_call ids in one assistant message: {ids}"
            pending = ids
        elif message.get("role") == "tool":
            answered = str(message.get("tool_call_id"))
            if answered not in pending:
                return f"tool message {answered!r} does not answer a preceding tool call"
            pending.remove(answered)
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(pending)}")
    return None


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection; writes stop quietly when the client goes away."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        owner = self.server.owner
        owner._record_get(self.path, self.client_address[1])
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            if owner.models_gate is not None:
                owner.models_gate.wait(10)  # a slow server: the list comes when the test says
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "scripted"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"no route for GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        request = self._read_json()
        if request is None:
            return
        owner = self.server.owner
        if self.path.rstrip("/") in ("/v1/responses", "/responses"):
            response = owner._next_response(request)
            self._stream_responses(response.build(request) if response.build else [])
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error(404, f"no route for POST {self.path}", "not_found_error")
            return
        owner._record(request, dict(self.headers.items()))
        owner._record_port(self.client_address[1])
        problem = _invalid_history(request) if owner.reject_invalid_arguments else None
        if problem is not None:
            self._send_error(500, problem, "server_error")
            return
        problem = _unanswered_calls(request) if owner.require_tool_results else None
        if problem is not None:
            owner.rejected.append(problem)
            self._send_error(400, problem, "invalid_request_error")
            return
        if owner.too_long(request):
            self._refuse_size(request, owner)
            return
        if owner.refuse_tools is not None and request.get("tools"):
            owner.refused_tools += 1  # like Ollama with a model whose template has no tools
            self._send_error(400, owner.refuse_tools, "invalid_request_error")
            return
        self._answer(request, owner._next_response(request))

    def _answer(self, request: JSON, response: Response) -> None:
        if response.start_delay > 0 and not self._pause(response.start_delay):
            return
        if response.build is None and response.body is not None:
            self._send_text(response.status, response.body)
            return
        if response.build is None:
            self._send_error(response.status, response.message, response.error_type)
            return
        steps = response.build(request)
        if request.get("stream"):
            self._stream(steps, response)
        else:
            self._whole(steps)

    def _read_json(self) -> JSON | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            self._send_error(400, f"invalid request body: {exc}", "invalid_request_error")
            return None
        if not isinstance(body, dict):
            self._send_error(400, "request body must be a JSON object", "invalid_request_error")
            return None
        return body

    def _send_json(self, status: int, body: JSON) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self._gone()

    def _send_text(self, status: int, body: str) -> None:
        data = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self._gone()

    def _send_error(self, status: int, message: str, type_: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": type_, "code": status}})

    def _refuse_size(self, request: JSON, owner: ScriptedModel) -> None:
        """llama-server's answer to a prompt over its window (``n_ctx`` only when asked)."""
        error: JSON = {"code": 400, "message": "the request exceeds the available context size, "
                       "try increasing it", "type": "exceed_context_size_error"}
        if owner.reveal_window:
            error |= {"n_prompt_tokens": prompt_tokens(request), "n_ctx": owner.max_prompt_tokens}
        self._send_json(400, {"error": error})

    def _whole(self, steps: Iterable[Step]) -> None:
        chunks: list[JSON] = []
        for step in steps:
            if isinstance(step, Pause):
                if not self._pause(step.seconds, step.until):
                    return
            elif isinstance(step, dict):
                chunks.append(step)
        self._send_json(200, _merge_chunks(chunks))

    def _open_events(self) -> bool:
        """Start a chunked event stream; False (and counted as gone) if the client left."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
        except OSError:
            self._gone()
            return False
        return True

    def _stream(self, steps: Iterable[Step], response: Response) -> None:
        if not self._open_events():
            return
        for step in itertools.chain(steps, ["[DONE]"] if response.done else []):
            if isinstance(step, Pause):
                sent = self._pause(step.seconds, step.until)
            elif isinstance(step, bytes):
                sent = self._write_chunk(step)
            else:
                payload = step if isinstance(step, str) else json.dumps(step)
                sent = self._write_chunk(f"data: {payload}\n\n".encode())
            if not sent:
                return
        if response.abort:  # a crash mid-reply: the body never gets its terminating chunk
            try:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.close_connection = True
            return
        self._write_chunk(b"")

    def _stream_responses(self, steps: Iterable[Step]) -> None:
        """The text deltas of ``steps`` as a Responses API event stream."""
        rid, mid = f"resp_{uuid.uuid4().hex[:24]}", f"msg_{uuid.uuid4().hex[:24]}"
        texts: list[str] = []

        def event(data: JSON) -> bool:
            return self._write_chunk(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())

        def message(status: str) -> JSON:
            content = [{"type": "output_text", "text": "".join(texts), "annotations": []}]
            return {"type": "message", "id": mid, "role": "assistant", "status": status,
                    "content": content if status == "completed" else []}

        if not self._open_events():
            return
        head = {"id": rid, "object": "response", "status": "in_progress", "output": []}
        if not (event({"type": "response.created", "response": head})
                and event({"type": "response.output_item.added", "output_index": 0,
                           "item": message("in_progress")})):
            return
        for step in steps:
            if isinstance(step, Pause):
                if not self._pause(step.seconds, step.until):
                    return
                continue
            choices = step.get("choices") if isinstance(step, dict) else None
            piece = choices[0]["delta"].get("content") if choices else None
            if piece:
                texts.append(piece)
                if not event({"type": "response.output_text.delta", "item_id": mid,
                              "output_index": 0, "content_index": 0, "delta": piece}):
                    return
        done = message("completed")
        usage = {"input_tokens": 10, "output_tokens": len(texts), "total_tokens": 10 + len(texts)}
        if event({"type": "response.output_item.done", "output_index": 0, "item": done}) and \
                event({"type": "response.completed", "response": {
                    **head, "status": "completed", "output": [done], "usage": usage}}):
            self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> bool:
        """Write one HTTP chunk (an empty one ends the body); False if the client is gone."""
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError:  # BrokenPipe/ConnectionReset, or a socket shut down by stop()
            self._gone()
            return False
        return True

    def _pause(self, seconds: float, until: threading.Event | None = None) -> bool:
        """Wait, watching for a client disconnect or a server stop; False if either happened."""
        deadline = time.monotonic() + seconds
        stopping = self.server.owner._stopping
        while (remaining := deadline - time.monotonic()) > 0:
            if until is not None and until.is_set():
                return True
            if stopping.is_set():
                self.close_connection = True
                return False
            readable, _, _ = select.select([self.connection], [], [], min(remaining, 0.05))
            if readable and self._peer_closed():
                self._gone()
                return False
            if readable:
                stopping.wait(min(remaining, 0.05))
        return True

    def _peer_closed(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _gone(self) -> None:
        self.close_connection = True
        self.server.owner._note_disconnect()


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its ScriptedModel and its open connections."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, owner: ScriptedModel, port: int) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def track(self, connection: socket.socket, is_open: bool) -> None:
        with self._connections_lock:
            if is_open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Shut every open connection so idle keep-alive handler threads end."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the peer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("connection from %s ended: %s", client_address, sys.exc_info()[1])
        else:
            log.exception("scripted model server failed on a request from %s", client_address)


class ScriptedModel:
    """A scripted OpenAI-compatible server; ``with ScriptedModel() as m:`` runs it.

    Each chat-completions POST consumes one pushed response (a :class:`Response` or a
    function of the request body returning one); with the queue empty it answers
    ``default(request)`` or the text "(no scripted response)". Like llama-server, a request
    whose history holds tool-call arguments that are not JSON gets HTTP 500 (without
    consuming a response) unless ``reject_invalid_arguments`` is False. Like OpenAI's API, a
    request whose history leaves a tool call without its result gets HTTP 400 (listed in
    ``rejected``) unless ``require_tool_results`` is False. Like llama-server, a prompt of more
    than ``max_prompt_tokens`` (see ``prompt_tokens``; None: no limit) gets HTTP 400 "the
    request exceeds the available context size" (counted in ``refused_for_size``), naming the
    window in ``n_ctx`` when ``reveal_window``.
    """

    def __init__(self, *, port: int = 0, default: Callable[[JSON], Response] | None = None,
                 reject_invalid_arguments: bool = True, require_tool_results: bool = True,
                 record: bool = True) -> None:
        self.base_url = ""
        self.requests: list[JSON] = []
        self.headers: list[dict[str, str]] = []
        self.client_ports: list[int] = []  # the client's port of each chat-completions request
        self.gets: list[tuple[str, int]] = []  # (path, client port) of each GET
        self.models_gate: threading.Event | None = None  # set: the model list is answered
        self.disconnects = 0
        self.reject_invalid_arguments = reject_invalid_arguments
        self.require_tool_results = require_tool_results
        self.rejected: list[str] = []
        self.max_prompt_tokens: int | None = None
        # Set: a request with ``tools`` gets HTTP 400 with this message (counted).
        self.refuse_tools: str | None = None
        self.refused_tools = 0
        self.reveal_window = True
        self.refused_for_size = 0
        self._port = port
        self.default = default  # answers a request when nothing is pushed
        self._record_requests = record
        self._queue: deque[Responder] = deque()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self._port

    def start(self) -> None:
        """Bind 127.0.0.1 (an ephemeral port unless one was given) and serve in a thread."""
        if self._server is not None:
            return
        self._stopping.clear()
        self._server = _Server(self, self._port)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name=f"scripted-model-{self.port}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, end hanging replies and close open connections."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        thread.join()
        self._server = self._thread = None

    def push(self, *responses: Responder) -> None:
        """Queue responses; each chat-completions POST consumes one, in order."""
        with self._changed:
            self._queue.extend(responses)

    def pending(self) -> int:
        """How many pushed responses are still unconsumed."""
        with self._changed:
            return len(self._queue)

    def wait_requests(self, n: int, timeout: float = 5.0) -> list[JSON]:
        """Block until at least ``n`` requests arrived; return them (TimeoutError if not)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self.requests)}")
            return list(self.requests)

    def wait_disconnects(self, n: int = 1, timeout: float = 5.0) -> int:
        """Block until the server has seen ``n`` clients leave mid-reply (TimeoutError if not)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.disconnects >= n, timeout):
                raise TimeoutError(f"expected {n} disconnects, saw {self.disconnects}")
            return self.disconnects

    def _record(self, request: JSON, headers: dict[str, str]) -> None:
        if not self._record_requests:
            return
        with self._changed:
            self.requests.append(request)
            self.headers.append(headers)
            self._changed.notify_all()

    def _record_port(self, port: int) -> None:
        with self._changed:
            self.client_ports.append(port)

    def _record_get(self, path: str, port: int) -> None:
        with self._changed:
            self.gets.append((path, port))
            self._changed.notify_all()

    def wait_gets(self, n: int, timeout: float = 5.0) -> list[tuple[str, int]]:
        """Block until at least ``n`` GET requests arrived; return them (TimeoutError if not)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.gets) >= n, timeout):
                raise TimeoutError(f"expected {n} GET requests, got {len(self.gets)}")
            return list(self.gets)

    def too_long(self, request: JSON) -> bool:
        """Whether the prompt is over the window (counted, without consuming a response)."""
        if self.max_prompt_tokens is None or prompt_tokens(request) <= self.max_prompt_tokens:
            return False
        with self._changed:
            self.refused_for_size += 1
        return True

    def _note_disconnect(self) -> None:
        with self._changed:
            self.disconnects += 1
            self._changed.notify_all()

    def _next_response(self, request: JSON) -> Response:
        with self._changed:
            item = self._queue.popleft() if self._queue else None
        if item is None:
            return self.default(request) if self.default else text(NO_SCRIPT_TEXT)
        return item if isinstance(item, Response) else item(request)


def main(argv: list[str] | None = None) -> int:
    """Serve a fixed N-token text reply to every request until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.model_server",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--text-tokens", type=int, default=2000, help="tokens in every reply")
    args = parser.parse_args(argv)
    server = ScriptedModel(port=args.port, default=lambda _request: token_text(args.text_tokens),
                           record=False)
    server.start()
    print(server.base_url, file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
