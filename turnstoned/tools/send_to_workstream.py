"""send_to_workstream: a message to one of the coordinator's children (starts its turn)."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


class Args(msgspec.Struct, kw_only=True):
    ws_id: Any = None
    message: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    child = co.ws_id(args.ws_id)
    message = co.text_arg(args.message, "message", 100_000, required=True)
    return co.plain(ctx, f"⚙ send_to_workstream {child[:8]}: {message.splitlines()[0][:100]}",
                    (child, message), preview=message[:300])


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    child, message = call.data
    return co.as_json(co.need(ctx).send(ctx.env.session_id, child, message).brief())
