"""What the coordinator tools share: argument checks, error handling, inspect's rendering.

The engine's side is the ``Coordination`` contract (``tools.coordination``). A
workstream id is the child's session id (32 hex characters).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from turnstoned import protocol as p
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error
from turnstoned.tools.coordination import Coordination, CoordinationError

WS_ID = re.compile(r"^[0-9a-f]{32}$")
MAX_BATCH = 10
MAX_WAIT_IDS = 32
STATES = ("running", "awaiting_approval", "idle", "closed")


Prepare = Callable[[Any, ToolContext], PreparedCall]
Execute = Callable[[PreparedCall, ToolContext], Awaitable[ToolOutput]]


def checked(prepare: Prepare) -> Prepare:
    """A coordinator tool's ``prepare``: refused outside coordinator sessions, and a
    ``CoordinationError`` it raises is the call's error."""
    @functools.wraps(prepare)
    def wrapper(args: Any, ctx: ToolContext) -> PreparedCall:
        blocked = unavailable(ctx)
        if blocked is not None:
            return blocked
        try:
            return prepare(args, ctx)
        except CoordinationError as exc:
            return prepare_error(str(exc))
    return wrapper


def answered(execute: Execute) -> Execute:
    """A coordinator tool's ``execute``: a ``CoordinationError`` is a result the model reads."""
    @functools.wraps(execute)
    async def wrapper(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        try:
            return await execute(call, ctx)
        except CoordinationError as exc:
            return ToolOutput(str(exc), is_error=True, effect_status="none")
    return wrapper


def need(ctx: ToolContext) -> Coordination:
    """The engine's coordination (prepare checked it is there)."""
    found = ctx.env.services.coordinator
    if found is None:
        raise CoordinationError("Error: coordination is not available here")
    return found


def unavailable(ctx: ToolContext) -> PreparedCall | None:
    """A prepare error when this session cannot coordinate (not a coordinator, no engine)."""
    if ctx.env.kind != "coordinator":
        return prepare_error("Error: only coordinator sessions manage workstreams")
    if ctx.env.services.coordinator is None:
        return prepare_error("Error: coordination is not available here")
    return None


def ws_id(value: Any) -> str:
    """A syntactically valid workstream id; CoordinationError otherwise."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if not WS_ID.match(text):
        raise CoordinationError(f"Error: {value!r} is not a workstream id (32 hex characters); "
                                "list_workstreams shows your children's ids")
    return text


def text_arg(value: Any, field: str, limit: int, required: bool = False) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if required and not text:
        raise CoordinationError(f"Error: '{field}' is required")
    if len(text) > limit:
        raise CoordinationError(f"Error: '{field}' exceeds {limit} characters")
    return text


def as_json(value: Any) -> ToolOutput:
    return ToolOutput(json.dumps(value, ensure_ascii=False, indent=1))


def plain(ctx: ToolContext, header: str, data: Any, label: str | None = None,
          preview: str = "") -> PreparedCall:
    """A prepared coordinator call; ``label`` makes it ask for approval under that label."""
    return PreparedCall(header=header, preview=preview, needs_approval=label is not None,
                        approval_label=label, data=data)


# ---------------------------------------------------------------- inspect's rendering

INSPECT_BUDGET = 32_000
HEAD, TAIL = 600, 300


def _cut(text: str, tier: str) -> str:
    if tier == "skeleton":
        first = text.strip().splitlines()[0] if text.strip() else ""
        return first[:120] + (" …" if len(text) > len(first[:120]) else "")
    if tier == "compact" and len(text) > HEAD + TAIL:
        return f"{text[:HEAD]}\n[... {len(text) - HEAD - TAIL} chars ...]\n{text[-TAIL:]}"
    return text


def _render(item: p.Item, tier: str) -> str | None:
    if isinstance(item, p.UserMessageItem):
        return f"[user] {_cut(item.text, tier)}"
    if isinstance(item, p.AgentMessageItem):
        return f"[assistant] {_cut(item.text, tier)}"
    if isinstance(item, p.NoticeItem):
        return f"[notice: {item.kind}] {_cut(item.text, tier)}"
    if isinstance(item, p.ToolCallItem):
        head = f"[tool {item.tool}, {item.status}] {item.header}"
        return head if tier == "skeleton" else f"{head}\n{_cut(item.output or '', tier)}"
    return None if tier != "full" else f"[reasoning] {item.text}"


def render_items(items: list[p.Item], limit: int) -> tuple[str, str]:
    """The last ``limit`` items as text within the budget, and the tier that fit:
    full, compact (long texts keep their head and tail) or skeleton (one line each)."""
    shown = items[-limit:]
    text = ""
    for tier in ("full", "compact", "skeleton"):
        parts = [r for r in (_render(i, tier) for i in shown) if r is not None]
        text = "\n\n".join(parts)
        if len(text) <= INSPECT_BUDGET:
            return text, tier
    return text[-INSPECT_BUDGET:], "skeleton"
