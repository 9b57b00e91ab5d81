"""inspect_workstream: a child's recent items, within about 32 KB."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import (
    CoordinationError,
    need,
    plain,
    refused,
    render_items,
    unavailable,
    ws_id,
)
from turnstoned.tools._lenient import int_or
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

DEFAULT_LIMIT, MAX_LIMIT = 20, 200


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None
    message_limit: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        child = ws_id(args.ws_id)
    except CoordinationError as exc:
        return prepare_error(str(exc))
    limit = int_or(args.message_limit, DEFAULT_LIMIT)
    if limit is None:
        return prepare_error("Error: 'message_limit' must be an integer")
    return plain(ctx, f"⚙ inspect_workstream {child[:8]}", (child, max(1, min(MAX_LIMIT, limit))))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    child, limit = call.data
    try:
        found, items = need(ctx).inspect(ctx.env.session_id, child)
    except CoordinationError as exc:
        return refused(exc)
    body, tier = render_items(items, limit)
    head = (f"Workstream {found.id} ({found.name}): {found.state}, last turn "
            f"{found.last_status or 'none'}; the last {min(limit, len(items))} of {len(items)} "
            f"items ({tier}):")
    return ToolOutput(f"{head}\n\n{body}" if body else f"{head}\n\n(nothing yet)",
                      summary=f"{len(items)} items")
