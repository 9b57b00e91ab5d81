"""Phases 1, 3 and the guard of phase 4: prepare, execute, truncate to budget.

Approval (phase 2) lives in ``approvals``; the generation-checked fold lives in
the turn runner, which owns the conversation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from turnstoned.llm.types import RawToolCall
from turnstoned.tools.base import (
    PreparedCall,
    ToolContext,
    ToolOutput,
    prepare_error,
    truncate_middle,
)

log = logging.getLogger(__name__)

MAX_PARALLEL = 4

SALVAGE_KEYS = (
    "action", "command", "code", "content", "initial_message", "message", "name", "page",
    "parent_ws_id", "path", "pattern", "prompt", "query", "status", "task_id", "title", "uri",
    "url", "ws_id",
)
_SALVAGE = {k: re.compile(rf'"{k}"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL) for k in SALVAGE_KEYS}


class ToolHandle(Protocol):
    """A callable tool as the pipeline sees it (built-in module or MCP adapter)."""

    name: str
    primary_key: str | None

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall: ...

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput: ...


class BuiltinTool:
    """Adapts a ``turnstoned.tools.<name>`` module to ``ToolHandle``."""

    def __init__(self, name: str, module: Any, primary_key: str | None) -> None:
        self.name, self.module, self.primary_key = name, module, primary_key

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        try:
            decoded = msgspec.convert(args, self.module.Args, strict=False)
        except msgspec.ValidationError as exc:
            return prepare_error(f"Error: invalid arguments for {self.name}: {exc}")
        call: PreparedCall = self.module.prepare(decoded, ctx)
        return call

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        output: ToolOutput = await self.module.execute(call, ctx)
        return output


def _salvage(raw: str) -> dict[str, Any] | None:
    for key, pattern in _SALVAGE.items():
        m = pattern.search(raw)
        if m:
            try:
                return {key: json.loads(f'"{m.group(1)}"')}
            except ValueError:
                return {key: m.group(1)}
    return None


def parse_arguments(name: str, raw: str | None, primary_key: str | None) -> dict[str, Any] | str:
    """The call's arguments as a dict, or the error text the model should read."""
    text = raw if raw and raw.strip() else "{}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        salvaged = _salvage(text)
        if salvaged is not None:
            return salvaged
        if primary_key and text.strip() and not text.strip().startswith("{"):
            return {primary_key: text}
        hint = (f'Expected valid JSON, e.g. {{"{primary_key}": "..."}}' if primary_key
                else "Arguments must be valid JSON.")
        return (f"JSON parse error for tool '{name}': {exc}\nRaw arguments (first 500 chars): "
                f"{text[:500]}\n{hint}\nPlease retry with correctly formatted JSON arguments.")
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and primary_key:
        return {primary_key: value}  # beyond the original: a JSON string is a bare value
    return (f"Error: arguments for tool '{name}' must be a JSON object, got "
            f"{type(value).__name__}: {text[:200]}")


def unknown_tool_text(name: str, available: Sequence[str]) -> str:
    return (f"Unknown tool: '{name}'. Available tools: {', '.join(available)}. "
            "Use one of the listed tool names exactly.")


def prepare_one(raw: RawToolCall, handle: ToolHandle | None, available: Sequence[str],
                ctx: ToolContext) -> PreparedCall:
    """Phase 1 for one call; whatever goes wrong stays inside this call."""
    name = raw.name.strip()
    if handle is None:
        call = prepare_error(unknown_tool_text(name, available), header=f"⚠ unknown tool {name}")
        args_json = raw.arguments if _is_object(raw.arguments) else "{}"
    else:
        args = parse_arguments(name, raw.arguments, handle.primary_key)
        if isinstance(args, str):
            call = prepare_error(args, header=f"⚠ {name}: malformed arguments "
                                             f"{(raw.arguments or '')[:200]!r}")
            args_json = "{}"
        else:
            args_json = json.dumps(args, ensure_ascii=False)
            try:
                call = handle.prepare(args, ctx)
            except Exception as exc:  # a preparer bug must not spoil its siblings
                log.exception("preparing %s failed", name)
                call = prepare_error(
                    f"Internal error preparing {name}: {type(exc).__name__}: {exc}\n"
                    "Sibling tool calls in this batch were unaffected.")
    call.call_id, call.tool, call.arguments = raw.id, name, args_json
    return call


def _is_object(text: str | None) -> bool:
    try:
        return isinstance(json.loads(text or ""), dict)
    except ValueError:
        return False


def apply_batch_policies(calls: list[PreparedCall]) -> bool:
    """Refuse mixed read/write groups; returns whether the batch must run serially."""
    if len(calls) < 2:
        return False
    groups: dict[str, list[PreparedCall]] = {}
    for c in calls:
        if c.policy and not c.error:
            groups.setdefault(c.policy.group, []).append(c)
    for members in groups.values():
        if len({m.policy.access for m in members if m.policy}) > 1:
            for m in members:
                assert m.policy is not None
                m.error = m.policy.mixed_access_error or (
                    f"{m.policy.group} read and write actions cannot run in the same tool batch.")
                m.needs_approval = False
    return any(c.policy and c.policy.serialize and not c.error for c in calls)


@dataclass(slots=True)
class Outcome:
    """A call's result before the fold."""

    call: PreparedCall
    output: ToolOutput
    status: str  # completed | failed | declined | cancelled


@dataclass(slots=True)
class Execution:
    """Tracks which calls crossed the 'started' mark, for interrupt receipts."""

    started: set[str] = field(default_factory=set)
    streamed: dict[str, list[str]] = field(default_factory=dict)


async def execute_all(
    calls: list[PreparedCall],
    handles: dict[str, ToolHandle],
    make_ctx: Callable[[PreparedCall], ToolContext],
    track: Execution,
    serialize: bool,
) -> list[Outcome]:
    """Phase 3: run the approved calls (errors pass through), results in model order."""
    semaphore = asyncio.Semaphore(1 if serialize else MAX_PARALLEL)

    async def run_one(call: PreparedCall) -> Outcome:
        if call.error:
            return Outcome(call, ToolOutput(call.error, is_error=True, effect_status="none"), "failed")
        async with semaphore:
            track.started.add(call.call_id)
            try:
                output = await handles[call.tool].execute(call, make_ctx(call))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("executing %s failed", call.tool)
                output = ToolOutput(
                    f"Error executing {call.tool}: {type(exc).__name__}: {exc}\nThis tool raised an "
                    "unexpected exception. Sibling tool calls in this batch (if any) completed "
                    "independently.", is_error=True)
        return Outcome(call, output, "failed" if output.is_error else "completed")

    jobs: list[Awaitable[Outcome]] = [run_one(c) for c in calls]
    if len(jobs) == 1:
        return [await jobs[0]]
    return list(await asyncio.gather(*jobs))


REPEAT_WARNING = ("\n\n⚠ Warning: this is an identical repeat of a previous tool call. The "
                  "result is the same. Try a different approach.")
REPEAT_EXEMPT = frozenset({"bash_output"})  # polling a background shell is legitimate


@dataclass(slots=True)
class RepeatDetector:
    """Spots a model calling the same tool with the same arguments a third time in a row."""

    last: tuple[str, str] | None = None
    streak: int = 0
    limit: int = 3

    def see(self, tool: str, arguments: str) -> bool:
        """Record a call; True when it completes a streak (which then starts over)."""
        if tool in REPEAT_EXEMPT:
            return False
        key = (tool, arguments)
        self.streak = self.streak + 1 if key == self.last else 1
        self.last = key
        if self.streak >= self.limit:
            self.last, self.streak = None, 0
            return True
        return False

    def mark(self, output: ToolOutput) -> ToolOutput:
        """The output with the repeat warning appended (structured JSON results are left alone)."""
        if not isinstance(output.content, str) or output.content.lstrip().startswith(("{", "[")):
            return output
        return ToolOutput(output.content + REPEAT_WARNING, output.is_error, output.effect_status,
                          output.summary)


@dataclass(slots=True)
class Budget:
    """The remaining context budget for tool results, in characters."""

    remaining: int
    cap: int
    grace: int = 4096

    def fit(self, output: ToolOutput) -> ToolOutput:
        text = output.text()
        if not text:
            return output
        limit = min(self.cap, self.remaining)
        if output.is_error:
            limit = max(limit, 2048)
        if limit <= 0 and len(text) <= 2048 and self.grace >= len(text):
            self.grace -= len(text)
            return output
        if limit <= 0:
            dropped = (f"Error: tool result dropped — context budget exhausted. The call ran and "
                       f"produced a {len(text)}-char result, but none of it could be added to the "
                       "conversation. Narrow the request (fewer lines, a tighter pattern).")
            return ToolOutput(dropped, True, output.effect_status, output.summary)
        self.remaining -= min(len(text), limit)
        if len(text) <= limit:
            return output
        cut = truncate_middle(text, limit)
        if isinstance(output.content, list):
            parts = [part for part in output.content if part.get("type") != "text"]
            return ToolOutput([{"type": "text", "text": cut}, *parts], output.is_error,
                              output.effect_status, output.summary)
        return ToolOutput(cut, output.is_error, output.effect_status, output.summary)
