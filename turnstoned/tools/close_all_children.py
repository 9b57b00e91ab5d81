"""close_all_children: close every open child of the coordinator."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import (
    CoordinationError,
    as_json,
    need,
    plain,
    text_arg,
    unavailable,
)
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error


class Args(msgspec.Struct, kw_only=True):
    reason: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        reason = text_arg(args.reason, "reason", 512)
    except CoordinationError as exc:
        return prepare_error(str(exc))
    return plain(ctx, "⚙ close_all_children" + (f": {reason[:100]}" if reason else ""), None,
                 label="close_all_children", preview=reason)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    coordination = need(ctx)
    closed = []
    for child in coordination.children(ctx.env.session_id, include_closed=False):
        closed.append((await coordination.close(ctx.env.session_id, child.id)).brief(500))
    return as_json({"closed": closed})
