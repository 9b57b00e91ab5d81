"""spawn_batch: start up to ten child sessions of a coordinator at once."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError
from turnstoned.tools.spawn_workstream import spec


class Args(msgspec.Struct, kw_only=True):
    children: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    if not isinstance(args.children, list) or not args.children:
        raise CoordinationError("Error: 'children' must be a list of 1 to 10 children")
    if len(args.children) > co.MAX_BATCH:
        raise CoordinationError(f"Error: at most {co.MAX_BATCH} children per batch, got "
                                   f"{len(args.children)}")
    specs = [spec(raw) for raw in args.children]
    if any(not message for _, message, _ in specs):
        raise CoordinationError("Error: every child needs an initial_message")
    names = ", ".join(name or f"#{i}" for i, (name, _, _) in enumerate(specs))
    preview = "\n\n".join(f"{name or f'#{i}'}: {message[:200]}"
                          for i, (name, message, _) in enumerate(specs))
    return co.plain(ctx, f"⚙ spawn_batch: {len(specs)} children ({names})", specs,
                    label="spawn_batch", preview=preview)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    coordination = co.need(ctx)
    results: dict[str, Any] = {}
    for index, (name, message, model) in enumerate(call.data):
        try:
            child = coordination.spawn(ctx.env.session_id, name or None, message, model or None)
            results[str(index)] = child.brief()
        except CoordinationError as exc:
            results[str(index)] = {"error": str(exc)}
    return co.as_json(results)
