"""cancel_workstream: stop a child's running turn (the child stays open)."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import (
    CoordinationError,
    as_json,
    need,
    plain,
    refused,
    unavailable,
    ws_id,
)
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        child = ws_id(args.ws_id)
    except CoordinationError as exc:
        return prepare_error(str(exc))
    return plain(ctx, f"⚙ cancel_workstream {child[:8]}", child, label="cancel_workstream")


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    try:
        child, stopped = need(ctx).cancel(ctx.env.session_id, call.data)
    except CoordinationError as exc:
        return refused(exc)
    return as_json({"stopped": stopped, **child.brief(500)})
