"""list_workstreams: the coordinator's children and their state."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools._coordination import STATES, as_json, need, plain, unavailable
from turnstoned.tools._lenient import as_bool, int_or
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

DEFAULT_LIMIT, MAX_LIMIT = 100, 500
LISTED_MESSAGE_CAP = 500


class Args(msgspec.Struct, kw_only=True):
    state: Any = None
    include_closed: Any = None
    limit: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    state = args.state.strip().lower() if isinstance(args.state, str) and args.state.strip() else None
    if state is not None and state not in STATES:
        return prepare_error(f"Error: 'state' must be one of {', '.join(STATES)}")
    limit = int_or(args.limit, DEFAULT_LIMIT)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        return prepare_error(f"Error: 'limit' must be an integer from 1 to {MAX_LIMIT}")
    closed = as_bool(args.include_closed) or state == "closed"
    return plain(ctx, "⚙ list_workstreams", (state, closed, limit))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    state, closed, limit = call.data
    children = [c for c in need(ctx).children(ctx.env.session_id, closed)
                if state is None or c.state == state]
    return as_json({"total": len(children),
                    "workstreams": [c.brief(LISTED_MESSAGE_CAP) for c in children[:limit]]})
