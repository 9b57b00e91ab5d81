"""Streaming chat completions through the openai SDK's async client.

Tolerates what real OpenAI-compatible servers send: tool-call deltas assembled
by index, ids of any shape (or none), ``content: ""`` beside calls, reasoning in
``reasoning_content``/``reasoning`` deltas or inline ``<think>`` blocks, usage
in a trailing chunk with no choices, unknown extra fields.

And what a broken or hostile one sends: a reply is at most ``MAX_REPLY_CHARS``
(an endless stream fails the call instead of filling memory), the loop is
yielded to every few events (an interrupt lands even in a flood of tiny
chunks), a stream that ends with neither a ``finish_reason`` nor ``[DONE]``
fails as cut short (no half-written tool call runs), and an error message
built from the server's words is redacted by the output guard first (a 401
may echo the key it refused).
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import httpx2
import msgspec
import openai

from turnstoned import guard
from turnstoned.config import ModelSettings
from turnstoned.llm import textcalls
from turnstoned.llm.types import ModelError, ModelReply, OnUsage, RawToolCall
from turnstoned.protocol import TurnErrorKind

log = logging.getLogger(__name__)

_decode = msgspec.json.Decoder().decode

# The most one reply may hold, in characters: its text, reasoning and tool calls (names and
# arguments) together. A model's reply is at most a few MiB of text; past this the server
# is looping or hostile, and the call fails rather than the daemon's memory.
MAX_REPLY_CHARS = 8 * 1024 * 1024
# What each tool call costs of that budget besides its text (its records), so a flood of
# empty calls is stopped too.
_CALL_COST = 256
# The longest tool name kept (OpenAI allows 64 characters); more is dropped, not appended.
_MAX_NAME = 1024
# Stream events between yields to the event loop: a flood of tiny chunks that arrive
# faster than they are read never leaves the socket empty, so the loop would otherwise
# get a turn only once per read of 64 KiB (about a thousand events).
_YIELD_EVERY = 128

_clients: dict[tuple[str | None, str, float], openai.AsyncOpenAI] = {}
# Set once a client's warm-up connection is open (or failed): a turn that starts meanwhile
# waits for it, briefly, rather than opening a second connection beside it.
_warmed: dict[tuple[str | None, str, float], asyncio.Event] = {}
_WARM_WAIT = 2.0

_CONTEXT_HINTS = ("context length", "context window", "maximum context", "too many tokens",
                  "context_length_exceeded", "exceeds the available context", "prompt is too long")
# "maximum context length is 4096 tokens" (OpenAI, vLLM), "context size (4096 tokens)".
_LIMIT_IN_TEXT = re.compile(r"(?:maximum context length is|context size \()\s*(\d+)",
                            re.IGNORECASE)


def _key(model: ModelSettings) -> tuple[str | None, str, float]:
    return (model.base_url, model.api_key, model.request_timeout)


def _client(model: ModelSettings) -> openai.AsyncOpenAI:
    key = _key(model)
    client = _clients.get(key)
    if client is None:
        client = openai.AsyncOpenAI(
            base_url=model.base_url, api_key=model.api_key,
            timeout=model.request_timeout, max_retries=1,
        )
        _clients[key] = client
    return client


async def prewarm(model: ModelSettings, timeout: float = 10.0) -> None:
    """Open the connection a first turn will reuse: ask for the model list (cheap) through
    the client turns share. A failure is only logged; the turn reports real problems."""
    client = _client(model).with_options(max_retries=0)  # the same connection pool
    warmed = _warmed.setdefault(_key(model), asyncio.Event())
    try:
        async with asyncio.timeout(timeout):
            await client.models.list()
    except (openai.OpenAIError, TimeoutError) as exc:
        log.debug("the model server was not reached ahead of the first turn: %s", exc)
    finally:
        warmed.set()


async def _after_warm_up(model: ModelSettings) -> None:
    warmed = _warmed.get(_key(model))
    if warmed is not None and not warmed.is_set():
        try:
            await asyncio.wait_for(warmed.wait(), _WARM_WAIT)
        except TimeoutError:
            pass  # a slow server: the turn opens its own connection


def _redact(text: str) -> str:
    """``text`` with any credential in it replaced, by the output guard's rules."""
    return guard.check(text, redact=True).text


def _error(kind: TurnErrorKind, message: str, context_limit: int | None = None) -> ModelError:
    """A turn error whose message may quote the server (or a URL): redacted, since a server
    echoes back the key it refused and the message goes to the editor and the logs."""
    return ModelError(kind, _redact(message), context_limit=context_limit)


def classify(exc: BaseException) -> ModelError:
    """Map an SDK exception onto a typed turn error."""
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return _error("unauthorized", f"The model server refused the credentials: {_msg(exc)}")
    if isinstance(exc, openai.RateLimitError):
        return _error("rateLimited", f"The model server is rate limiting: {_msg(exc)}")
    if isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError, openai.NotFoundError)):
        text = _msg(exc)
        if any(h in text.lower() for h in _CONTEXT_HINTS):
            return _context_error(text, exc.body)
        return _error("badRequest", f"The model server rejected the request: {text}")
    if isinstance(exc, openai.APIStatusError):
        return _error("upstreamUnavailable", f"Model server error {exc.status_code}: {_msg(exc)}")
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        request = getattr(exc, "request", None)
        where = f" at {request.url}" if request is not None else ""
        return _error("upstreamUnavailable", f"Cannot reach the model server{where}: {exc}")
    return _error("upstreamUnavailable", f"The model stream failed: {type(exc).__name__}: {exc}")


def _context_error(text: str, body: Any) -> ModelError:
    """A refusal for size, with the window the server named (llama.cpp: ``n_ctx``)."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    limit = inner.get("n_ctx") if isinstance(inner, dict) else None
    if not isinstance(limit, int):
        found = _LIMIT_IN_TEXT.search(text)
        limit = int(found.group(1)) if found else None
    return _error("contextWindowExceeded", text, context_limit=limit or None)


def _msg(exc: openai.APIStatusError) -> str:
    """The server's own words for a refusal (redacted: they may quote the key)."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _redact(str(inner["message"]))
        if isinstance(inner, str):
            return _redact(inner)
    if isinstance(body, str) and body.strip():  # a proxy's own text: its first words
        return _redact(f"{exc.message} - {' '.join(body.split())[:300]}")
    return _redact(str(exc.message))


def _size(chars: int) -> str:
    if chars >= 1024 * 1024:
        return f"{chars / (1024 * 1024):g} MiB"
    return f"{chars / 1024:g} KiB" if chars >= 1024 else f"{chars} characters"


class _Budget:
    """What one reply may still hold; ``spend`` fails the call once it is over."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, chars: int) -> None:
        self.used += chars
        if self.used > self.limit:
            raise ModelError(
                "upstreamUnavailable",
                f"The model's reply exceeded {_size(self.limit)}, the most one reply may hold; "
                "the call was stopped (the server may be looping).")


class _Pieces:
    """Text that arrives in pieces, kept in few strings: every 256 pieces are joined into
    one, so a reply of a million one-character deltas holds thousands of strings, not a
    million (a str object costs ~50 bytes besides its text)."""

    __slots__ = ("joined", "tail")

    def __init__(self) -> None:
        self.joined: list[str] = []
        self.tail: list[str] = []

    def add(self, piece: str) -> None:
        self.tail.append(piece)
        if len(self.tail) >= 256:
            self.joined.append("".join(self.tail))
            self.tail.clear()

    def text(self) -> str:
        return "".join(self.joined + self.tail)


class _ThinkSplitter:
    """Routes a leading inline ``<think>…</think>`` block to reasoning, streaming-safe."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.state = "start"  # start -> inside -> after -> done, or start -> done
        self.pending = ""

    def feed(self, text: str) -> tuple[str, str]:
        buf, self.pending = self.pending + text, ""
        if self.state == "start":
            head = buf.lstrip()
            if head.startswith(self.OPEN):
                self.state, buf = "inside", head[len(self.OPEN):]
            elif self.OPEN.startswith(head):
                self.pending = buf
                return "", ""
            else:
                self.state = "done"
        if self.state == "after":  # drop the newlines that separate the block from the answer
            buf = buf.lstrip("\n")
            self.state = "done" if buf else "after"
        if self.state in ("done", "after"):
            return buf, ""
        idx = buf.find(self.CLOSE)
        if idx >= 0:
            self.state = "after"
            rest, thought = buf[idx + len(self.CLOSE):], buf[:idx]
            return self.feed(rest)[0] if rest else "", thought
        keep = next((n for n in range(len(self.CLOSE) - 1, 0, -1) if buf.endswith(self.CLOSE[:n])), 0)
        self.pending = buf[len(buf) - keep:]
        return "", buf[: len(buf) - keep]

    def flush(self) -> tuple[str, str]:
        rest, self.pending = self.pending, ""
        return ("", rest) if self.state == "inside" else (rest, "")


class _Assembler:
    """Collects streamed tool-call deltas by index."""

    def __init__(self) -> None:
        self.calls: dict[int, RawToolCall] = {}
        self.arguments: dict[int, _Pieces] = {}  # joined into each call's text at the end
        self.order: list[int] = []
        self.alias: dict[int, int] = {}  # server index -> our slot

    def add(self, delta: dict[str, Any]) -> int:
        """Fold in one delta; returns how much of the reply's budget it took."""
        server_index = delta.get("index")
        index = server_index if isinstance(server_index, int) else (
            self.order[-1] if self.order else 0)
        index = self.alias.get(index, index)
        fn = delta.get("function") or {}
        call_id = _text(delta.get("id"))
        current = self.calls.get(index)
        if current is not None and call_id and current.id and call_id != current.id and current.name:
            # Some servers reuse index 0 for every call; a new id means a new call.
            slot = -1 - len(self.alias)  # negative: never a server's own index
            self.alias[server_index if isinstance(server_index, int) else 0] = slot
            index, current = slot, None
        cost = len(call_id)
        if current is None:
            current = RawToolCall(id=call_id, name="")
            self.calls[index] = current
            self.arguments[index] = _Pieces()
            self.order.append(index)
            cost += _CALL_COST
        elif call_id and not current.id:
            current.id = call_id
        name, arguments = _text(fn.get("name")), _text(fn.get("arguments"))
        if name and current.name != name and len(current.name) + len(name) <= _MAX_NAME:
            current.name += name
        if arguments:
            self.arguments[index].add(arguments)
        return cost + len(name) + len(arguments)

    def result(self) -> list[RawToolCall]:
        out = []
        for i in self.order:
            call = self.calls[i]
            call.arguments += self.arguments[i].text()
            call.name = call.name.strip()
            if not call.id:
                call.id = f"call_{secrets.token_hex(12)}"
            if call.name:
                out.append(call)
        return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Events:
    """The stream's ``data:`` payloads as dicts, until ``[DONE]`` (``done`` says it came).

    The SDK makes the request (auth, retries, status errors), but its per-chunk
    pydantic models cost ~100 us a token; the payloads are decoded with msgspec
    instead, leniently: a payload that is not a JSON object is skipped. Lines are
    split here, from the body's bytes, so that one endless line is refused at
    ``max_line`` bytes instead of being buffered whole; every ``_YIELD_EVERY``
    events the loop gets a turn.
    """

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.done = False

    async def _lines(self, response: Any) -> AsyncIterator[bytes]:
        buffer = bytearray()
        async for data in response.iter_bytes():
            if b"\r" in data:  # CRLF or CR line ends (a raw CR is escaped inside JSON)
                data = data.replace(b"\r", b"\n")
            start = len(buffer)  # what is already buffered holds no line end
            buffer += data
            if buffer.find(b"\n", start) >= 0:
                end = buffer.rfind(b"\n")
                lines = bytes(buffer[:end]).split(b"\n")
                del buffer[:end + 1]
                for line in lines:
                    yield line
            if len(buffer) > self.max_line:
                raise ModelError("upstreamUnavailable",
                                 f"The model's reply exceeded {_size(self.max_line)} in one "
                                 "stream event; the call was stopped.")
        if buffer:
            yield bytes(buffer)

    async def __call__(self, response: Any) -> AsyncIterator[dict[str, Any]]:
        count = 0
        async for line in self._lines(response):
            if not line.startswith(b"data:"):
                continue
            count += 1
            if count % _YIELD_EVERY == 0:
                await asyncio.sleep(0)  # an interrupt (a cancel) lands here in a flood
            data = line[5:].strip()
            if data == b"[DONE]":
                self.done = True
                return
            try:
                chunk = _decode(data)
            except msgspec.DecodeError:
                shown = data[:200].decode("utf-8", "replace")
                log.warning("skipping an unreadable stream event: %s", _redact(shown))
                continue
            if isinstance(chunk, dict):
                if chunk.get("error"):
                    raise _stream_error(chunk["error"])
                yield chunk


def _stream_error(error: Any) -> ModelError:
    message = error.get("message") if isinstance(error, dict) else str(error)
    text = str(message or error)
    if any(h in text.lower() for h in _CONTEXT_HINTS):
        return _context_error(text, error)
    return _error("upstreamUnavailable", f"The model server reported an error mid-stream: {text}")


def _cut_short(detail: str = "") -> ModelError:
    return ModelError("upstreamUnavailable",
                      "The model server ended the reply before it was complete (no "
                      f"finish_reason and no [DONE]{detail}); nothing of it was acted on.")


def _apply(chunk: dict[str, Any], reply: ModelReply, calls: _Assembler, think: _ThinkSplitter,
           push: Callable[[str, str], None], budget: _Budget) -> None:
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        reply.usage = {k: int(usage.get(k) or 0)
                       for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") or {}
        thought = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        content = _text(delta.get("content"))
        budget.spend(len(thought) + len(content))  # before anything of it is shown
        if thought:
            push("", thought)
        if content:
            push(*think.feed(content))
        for tc in delta.get("tool_calls") or ():
            if isinstance(tc, dict):
                budget.spend(calls.add(tc))
        if choice.get("finish_reason"):
            reply.finish_reason = str(choice["finish_reason"])


async def stream_reply(
    model: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    on_text: Callable[[str], None],
    on_reasoning: Callable[[str], None],
    *,
    max_chars: int = MAX_REPLY_CHARS,
) -> ModelReply:
    """One streamed model call, with its tool calls native or written as text
    (``textcalls``): text mode when configured or found for this model; in auto mode a
    server that refuses ``tools``, or a model that writes its calls in its reply,
    switches the model to text mode (that call is answered at once, later ones start in
    text mode)."""
    if not tools:
        return await _stream(model, messages, tools, on_text, on_reasoning, max_chars, None)
    names = {str((t.get("function") or {}).get("name")) for t in tools}
    mode = textcalls.mode_for(model.base_url, model.name, model.tool_calling)
    if mode == "text":
        return await _text_call(model, messages, tools, on_text, on_reasoning, max_chars, names)
    auto = model.tool_calling == "auto"
    scanner = textcalls.Scanner(names, fences=False) if auto else None
    try:
        reply = await _stream(model, messages, tools, on_text, on_reasoning, max_chars, scanner)
    except ModelError as exc:
        if not (auto and exc.kind == "badRequest" and textcalls.refuses_tools(exc.message)):
            raise
        textcalls.remember(model.base_url, model.name, f"the server refused tools: {exc.message}")
        return await _text_call(model, messages, tools, on_text, on_reasoning, max_chars, names)
    if scanner is not None and reply.tool_calls and reply.tool_calls is scanner.calls:
        textcalls.remember(model.base_url, model.name, "the model wrote its calls in tags")
    elif auto and not reply.tool_calls:
        shown, calls = textcalls.calls_in(reply.content, names)
        if calls:  # the model wrote its calls as text (a server without a tool parser)
            textcalls.remember(model.base_url, model.name, "the model wrote its calls as text")
            reply.content, reply.tool_calls = shown, calls
    return reply


async def _text_call(model: ModelSettings, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]], on_text: Callable[[str], None],
                     on_reasoning: Callable[[str], None], max_chars: int,
                     names: set[str]) -> ModelReply:
    """A call in text mode: the tools described in the system message, none sent."""
    return await _stream(model, textcalls.as_text(messages, tools), [], on_text, on_reasoning,
                         max_chars, textcalls.Scanner(names, fences=True))


async def _stream(
    model: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    on_text: Callable[[str], None],
    on_reasoning: Callable[[str], None],
    max_chars: int,
    scanner: textcalls.Scanner | None,
) -> ModelReply:
    """One streamed model call; text and reasoning are pushed as they arrive (through
    ``scanner``, when given: tool-call markup in the text is withheld and read as calls).

    Raises ``ModelError`` when the call fails, the reply grows past ``max_chars``
    (text, reasoning and tool calls together), or the stream ends with neither a
    ``finish_reason`` nor ``[DONE]`` (cut short: its tool calls may be half-written).
    A finish_reason without [DONE] (some proxies drop it), or [DONE] without a
    finish_reason, is a complete reply.
    """
    kwargs: dict[str, Any] = {
        "model": model.name, "messages": messages, "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        kwargs["tools"] = tools
    if model.max_tokens:
        kwargs["max_tokens"] = model.max_tokens
    if model.temperature is not None:
        kwargs["temperature"] = model.temperature
    reply, calls, think = ModelReply(), _Assembler(), _ThinkSplitter()
    budget = _Budget(max_chars)
    # One event holds at most the whole budget, JSON-escaped (\uXXXX: 6 bytes a character).
    events = _Events(max_line=6 * max_chars + 65536)
    text, reasoning = _Pieces(), _Pieces()

    def show(content: str) -> None:
        if content:
            text.add(content)
            on_text(content)

    def push(content: str, thought: str) -> None:
        if thought:
            reasoning.add(thought)
            on_reasoning(thought)
        show(scanner.feed(content) if scanner is not None and content else content)

    await _after_warm_up(model)
    try:
        async with _client(model).chat.completions.with_streaming_response.create(**kwargs) as response:
            try:
                async for chunk in events(response):
                    _apply(chunk, reply, calls, think, push, budget)
            except (httpx2.RemoteProtocolError, httpx2.ReadError) as exc:  # the body broke off
                raise _cut_short(f": {exc}") from exc
    except ModelError:
        raise
    except Exception as exc:  # every SDK or transport failure becomes a typed turn error
        raise classify(exc) from exc
    if reply.finish_reason is None and not events.done:
        raise _cut_short()
    push(*think.flush())
    reply.tool_calls = calls.result()
    if scanner is not None:
        rest, written = scanner.finish()
        show(rest)
        if not reply.tool_calls:
            reply.tool_calls = written
    reply.content = text.text()
    reply.reasoning = reasoning.text()
    return reply


async def complete(model: ModelSettings, messages: list[dict[str, Any]],
                   on_usage: OnUsage | None = None) -> str:
    """A side call without tools (e.g. reading a fetched page): the reply's text; the
    server's token counts go to ``on_usage`` when it sent them.

    The reply may use at most a quarter of the context window (or the model's
    own ``max_tokens``, if smaller); its reasoning is not returned.
    """
    cap = max(256, model.context_window // 4)
    if model.max_tokens:
        cap = min(cap, model.max_tokens)
    reply = await stream_reply(replace(model, max_tokens=cap), messages, [],
                               lambda text: None, lambda thought: None)
    if on_usage is not None and reply.usage:
        on_usage(reply.usage)
    return reply.content
