"""close_workstream: close one of the coordinator's children."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None
    reason: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    child, reason = co.ws_id(args.ws_id), co.text_arg(args.reason, "reason", 512)
    return co.plain(ctx, f"⚙ close_workstream {child[:8]}" + (f": {reason[:100]}" if reason else ""),
                    child, label="close_workstream", preview=reason)


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    return co.as_json((await co.need(ctx).close(ctx.env.session_id, call.data)).brief())
