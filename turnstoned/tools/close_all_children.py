"""close_all_children: close every open child of the coordinator."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


class Args(msgspec.Struct, kw_only=True):
    reason: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    reason = co.text_arg(args.reason, "reason", 512)
    return co.plain(ctx, "⚙ close_all_children" + (f": {reason[:100]}" if reason else ""), None,
                    label="close_all_children", preview=reason)


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    coordination, parent = co.need(ctx), ctx.env.session_id
    closed = [(await coordination.close(parent, child.id)).brief(500)
              for child in coordination.children(parent, include_closed=False)]
    return co.as_json({"closed": closed})
