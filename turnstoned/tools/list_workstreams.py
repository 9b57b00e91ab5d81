"""list_workstreams: the coordinator's children and their state."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools._lenient import as_bool, int_or
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError

DEFAULT_LIMIT, MAX_LIMIT = 100, 500
LISTED_MESSAGE_CAP = 500


class Args(msgspec.Struct, kw_only=True):
    state: Any = None
    include_closed: Any = None
    limit: Any = None


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    state = args.state.strip().lower() if isinstance(args.state, str) and args.state.strip() else None
    if state is not None and state not in co.STATES:
        raise CoordinationError(f"Error: 'state' must be one of {', '.join(co.STATES)}")
    limit = int_or(args.limit, DEFAULT_LIMIT)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        raise CoordinationError(f"Error: 'limit' must be an integer from 1 to {MAX_LIMIT}")
    closed = as_bool(args.include_closed) or state == "closed"
    return co.plain(ctx, "⚙ list_workstreams", (state, closed, limit))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    state, closed, limit = call.data
    children = [c for c in co.need(ctx).children(ctx.env.session_id, closed)
                if state is None or c.state == state]
    return co.as_json({"total": len(children),
                       "workstreams": [c.brief(LISTED_MESSAGE_CAP) for c in children[:limit]]})
