"""close_workstream: close one of the coordinator's children."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import (
    CoordinationError,
    as_json,
    need,
    plain,
    refused,
    text_arg,
    unavailable,
    ws_id,
)
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None
    reason: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        child, reason = ws_id(args.ws_id), text_arg(args.reason, "reason", 512)
    except CoordinationError as exc:
        return prepare_error(str(exc))
    return plain(ctx, f"⚙ close_workstream {child[:8]}" + (f": {reason[:100]}" if reason else ""),
                 child, label="close_workstream", preview=reason)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    try:
        return as_json((await need(ctx).close(ctx.env.session_id, call.data)).brief())
    except CoordinationError as exc:
        return refused(exc)
