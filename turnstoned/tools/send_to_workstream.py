"""send_to_workstream: a message to one of the coordinator's children (starts its turn)."""

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
    message: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        child, message = ws_id(args.ws_id), text_arg(args.message, "message", 100_000, True)
    except CoordinationError as exc:
        return prepare_error(str(exc))
    return plain(ctx, f"⚙ send_to_workstream {child[:8]}: {message.splitlines()[0][:100]}",
                 (child, message), preview=message[:300])


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    child, message = call.data
    try:
        return as_json(need(ctx).send(ctx.env.session_id, child, message).brief())
    except CoordinationError as exc:
        return refused(exc)
