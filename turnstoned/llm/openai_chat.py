"""Streaming chat completions through the openai SDK's async client.

Tolerates what real OpenAI-compatible servers send: tool-call deltas assembled
by index, ids of any shape (or none), ``content: ""`` beside calls, reasoning in
``reasoning_content``/``reasoning`` deltas or inline ``<think>`` blocks, usage
in a trailing chunk with no choices, unknown extra fields.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

import openai

from turnstoned.config import ModelSettings
from turnstoned.llm.types import ModelError, ModelReply, RawToolCall

log = logging.getLogger(__name__)

_clients: dict[tuple[str | None, str, float], openai.AsyncOpenAI] = {}

_CONTEXT_HINTS = ("context length", "context window", "maximum context", "too many tokens",
                  "context_length_exceeded", "exceeds the available context", "prompt is too long")


def _client(model: ModelSettings) -> openai.AsyncOpenAI:
    key = (model.base_url, model.api_key, model.request_timeout)
    client = _clients.get(key)
    if client is None:
        client = openai.AsyncOpenAI(
            base_url=model.base_url, api_key=model.api_key,
            timeout=model.request_timeout, max_retries=1,
        )
        _clients[key] = client
    return client


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
            return ModelError("contextWindowExceeded", text)
        return ModelError("badRequest", f"The model server rejected the request: {text}")
    if isinstance(exc, openai.APIStatusError):
        return ModelError("upstreamUnavailable", f"Model server error {exc.status_code}: {_msg(exc)}")
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        return ModelError("upstreamUnavailable", f"Cannot reach the model server: {exc}")
    return ModelError("upstreamUnavailable", f"The model stream failed: {type(exc).__name__}: {exc}")


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

    def add(self, delta: Any) -> None:
        index = getattr(delta, "index", None)
        if index is None:
            index = self.order[-1] if self.order else 0
        index = self.alias.get(index, index)
        fn = getattr(delta, "function", None)
        call_id = getattr(delta, "id", None) or ""
        current = self.calls.get(index)
        if current is not None and call_id and current.id and call_id != current.id and current.name:
            # Some servers reuse index 0 for every call; a new id means a new call.
            slot = -1 - len(self.alias)  # negative: never a server's own index
            self.alias[getattr(delta, "index", None) or 0] = slot
            index, current = slot, None
        if current is None:
            current = RawToolCall(id=call_id, name="")
            self.calls[index] = current
            self.order.append(index)
        elif call_id and not current.id:
            current.id = call_id
        if fn is not None:
            if getattr(fn, "name", None):
                current.name += fn.name if current.name != fn.name else ""
            if getattr(fn, "arguments", None):
                current.arguments += fn.arguments

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

    try:
        stream = await _client(model).chat.completions.create(**kwargs)
    except Exception as exc:  # every SDK failure becomes a typed turn error
        raise classify(exc) from exc
    try:
        async for chunk in stream:
            usage = getattr(chunk, "usage", None)
            if usage is not None:
                reply.usage = {
                    "prompt_tokens": usage.prompt_tokens or 0,
                    "completion_tokens": usage.completion_tokens or 0,
                    "total_tokens": usage.total_tokens or 0,
                }
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta is not None:
                    thought = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
                    if isinstance(thought, str) and thought:
                        push("", thought)
                    if delta.content:
                        push(*think.feed(delta.content))
                    for tc in delta.tool_calls or ():
                        calls.add(tc)
                if choice.finish_reason:
                    reply.finish_reason = choice.finish_reason
    except Exception as exc:
        raise classify(exc) from exc
    finally:
        await stream.close()
    push(*think.flush())
    reply.content = "".join(text)
    reply.reasoning = "".join(reasoning)
    reply.tool_calls = calls.result()
    return reply
