"""spawn_batch: start up to ten child sessions of a coordinator at once."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import (
    MAX_BATCH,
    CoordinationError,
    as_json,
    need,
    plain,
    unavailable,
)
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error
from turnstoned.tools.spawn_workstream import spec


class Args(msgspec.Struct, kw_only=True):
    children: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    if not isinstance(args.children, list) or not args.children:
        return prepare_error("Error: 'children' must be a list of 1 to 10 children")
    if len(args.children) > MAX_BATCH:
        return prepare_error(f"Error: at most {MAX_BATCH} children per batch, got "
                             f"{len(args.children)}")
    try:
        specs = [spec(raw) for raw in args.children]
    except CoordinationError as exc:
        return prepare_error(str(exc))
    if any(not message for _, message, _ in specs):
        return prepare_error("Error: every child needs an initial_message")
    names = ", ".join(name or f"#{i}" for i, (name, _, _) in enumerate(specs))
    preview = "\n\n".join(f"{name or f'#{i}'}: {message[:200]}"
                          for i, (name, message, _) in enumerate(specs))
    return plain(ctx, f"⚙ spawn_batch: {len(specs)} children ({names})", specs,
                 label="spawn_batch", preview=preview)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    coordination = need(ctx)
    results: dict[str, Any] = {}
    for index, (name, message, model) in enumerate(call.data):
        try:
            child = coordination.spawn(ctx.env.session_id, name or None, message, model or None)
            results[str(index)] = child.brief()
        except CoordinationError as exc:
            results[str(index)] = {"error": str(exc)}
    return as_json(results)
