"""Streaming chat completions through the openai SDK's async client.

Tolerates what real OpenAI-compatible servers send: tool-call deltas assembled
by index, ids of any shape (or none), ``content: ""`` beside calls, reasoning in
``reasoning_content``/``reasoning`` deltas or inline ``<think>`` blocks, usage
in a trailing chunk with no choices, unknown extra fields.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import msgspec
import openai

from turnstoned.config import ModelSettings
from turnstoned.llm.types import ModelError, ModelReply, OnUsage, RawToolCall

log = logging.getLogger(__name__)

_decode = msgspec.json.Decoder().decode

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


def classify(exc: BaseException) -> ModelError:
    """Map an SDK exception onto a typed turn error."""
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ModelError("unauthorized", f"The model server refused the credentials: {_msg(exc)}")
    if isinstance(exc, openai.RateLimitError):
        return ModelError("rateLimited", f"The model server is rate limiting: {_msg(exc)}")
    if isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError, openai.NotFoundError)):
        text = _msg(exc)
        if any(h in text.lower() for h in _CONTEXT_HINTS):
            return _context_error(text, exc.body)
        return ModelError("badRequest", f"The model server rejected the request: {text}")
    if isinstance(exc, openai.APIStatusError):
        return ModelError("upstreamUnavailable", f"Model server error {exc.status_code}: {_msg(exc)}")
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        request = getattr(exc, "request", None)
        where = f" at {request.url}" if request is not None else ""
        return ModelError("upstreamUnavailable", f"Cannot reach the model server{where}: {exc}")
    return ModelError("upstreamUnavailable", f"The model stream failed: {type(exc).__name__}: {exc}")


def _context_error(text: str, body: Any) -> ModelError:
    """A refusal for size, with the window the server named (llama.cpp: ``n_ctx``)."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    limit = inner.get("n_ctx") if isinstance(inner, dict) else None
    if not isinstance(limit, int):
        found = _LIMIT_IN_TEXT.search(text)
        limit = int(found.group(1)) if found else None
    return ModelError("contextWindowExceeded", text, context_limit=limit or None)


def _msg(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(exc.message)


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
        self.order: list[int] = []
        self.alias: dict[int, int] = {}  # server index -> our slot

    def add(self, delta: dict[str, Any]) -> None:
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
        if current is None:
            current = RawToolCall(id=call_id, name="")
            self.calls[index] = current
            self.order.append(index)
        elif call_id and not current.id:
            current.id = call_id
        name, arguments = _text(fn.get("name")), _text(fn.get("arguments"))
        if name and current.name != name:
            current.name += name
        current.arguments += arguments

    def result(self) -> list[RawToolCall]:
        out = []
        for i in self.order:
            call = self.calls[i]
            call.name = call.name.strip()
            if not call.id:
                call.id = f"call_{secrets.token_hex(12)}"
            if call.name:
                out.append(call)
        return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


async def _events(response: Any) -> AsyncIterator[dict[str, Any]]:
    """The stream's ``data:`` payloads as dicts, until ``[DONE]``.

    The SDK makes the request (auth, retries, status errors), but its per-chunk
    pydantic models cost ~100 us a token; the payloads are decoded with msgspec
    instead, leniently: a payload that is not a JSON object is skipped.
    """
    async for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = _decode(data)
        except msgspec.DecodeError:
            log.warning("skipping an unreadable stream event: %.200s", data)
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
    return ModelError("upstreamUnavailable", f"The model server reported an error mid-stream: {text}")


def _apply(chunk: dict[str, Any], reply: ModelReply, calls: _Assembler, think: _ThinkSplitter,
           push: Callable[[str, str], None]) -> None:
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        reply.usage = {k: int(usage.get(k) or 0)
                       for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") or {}
        thought = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        if thought:
            push("", thought)
        content = _text(delta.get("content"))
        if content:
            push(*think.feed(content))
        for tc in delta.get("tool_calls") or ():
            if isinstance(tc, dict):
                calls.add(tc)
        if choice.get("finish_reason"):
            reply.finish_reason = str(choice["finish_reason"])


async def stream_reply(
    model: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    on_text: Callable[[str], None],
    on_reasoning: Callable[[str], None],
) -> ModelReply:
    """One streamed model call; text and reasoning are pushed as they arrive."""
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
    text: list[str] = []
    reasoning: list[str] = []

    def push(content: str, thought: str) -> None:
        if thought:
            reasoning.append(thought)
            on_reasoning(thought)
        if content:
            text.append(content)
            on_text(content)

    await _after_warm_up(model)
    try:
        async with _client(model).chat.completions.with_streaming_response.create(**kwargs) as response:
            async for chunk in _events(response):
                _apply(chunk, reply, calls, think, push)
    except ModelError:
        raise
    except Exception as exc:  # every SDK or transport failure becomes a typed turn error
        raise classify(exc) from exc
    push(*think.flush())
    reply.content = "".join(text)
    reply.reasoning = "".join(reasoning)
    reply.tool_calls = calls.result()
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
