"""cancel_workstream: stop a child's running turn (the child stays open)."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    child = co.ws_id(args.ws_id)
    return co.plain(ctx, f"⚙ cancel_workstream {child[:8]}", child, label="cancel_workstream")


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    child, stopped = co.need(ctx).cancel(ctx.env.session_id, call.data)
    return co.as_json({"stopped": stopped, **child.brief(500)})
