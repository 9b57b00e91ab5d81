"""inspect_workstream: a child's recent items, within about 32 KB."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools._lenient import int_or
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError

DEFAULT_LIMIT, MAX_LIMIT = 20, 200


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None
    message_limit: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    child = co.ws_id(args.ws_id)
    limit = int_or(args.message_limit, DEFAULT_LIMIT)
    if limit is None:
        raise CoordinationError("Error: 'message_limit' must be an integer")
    return co.plain(ctx, f"⚙ inspect_workstream {child[:8]}",
                    (child, max(1, min(MAX_LIMIT, limit))))


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    child, limit = call.data
    found, items = co.need(ctx).inspect(ctx.env.session_id, child)
    body, tier = co.render_items(items, limit)
    head = (f"Workstream {found.id} ({found.name}): {found.state}, last turn "
            f"{found.last_status or 'none'}; the last {min(limit, len(items))} of {len(items)} "
            f"items ({tier}):")
    return ToolOutput(f"{head}\n\n{body or '(nothing yet)'}", summary=f"{len(items)} items")
