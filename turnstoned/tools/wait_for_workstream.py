"""wait_for_workstream: wait until any or all of the given children are idle or closed."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools._lenient import is_blank
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError

DEFAULT_TIMEOUT, MAX_TIMEOUT = 60.0, 600.0


class Args(msgspec.Struct, kw_only=True):
    ws_ids: Any = None
    timeout: Any = None
    mode: Any = None


def _timeout(value: Any) -> float:
    if is_blank(value):
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise CoordinationError("Error: 'timeout' must be a number of seconds") from None
    if not 0 <= seconds <= MAX_TIMEOUT:
        raise CoordinationError(
            f"Error: 'timeout' must be between 0 and {MAX_TIMEOUT:g} seconds")
    return seconds


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    raw = [args.ws_ids] if isinstance(args.ws_ids, str) else args.ws_ids
    if not isinstance(raw, list) or not raw:
        raise CoordinationError("Error: 'ws_ids' must list 1 to 32 workstream ids")
    if len(raw) > co.MAX_WAIT_IDS:
        raise CoordinationError(f"Error: at most {co.MAX_WAIT_IDS} ids, got {len(raw)}")
    ids = list(dict.fromkeys(co.ws_id(v) for v in raw))
    timeout = _timeout(args.timeout)
    mode = (args.mode or "any").strip().lower() if isinstance(args.mode, str | None) else ""
    if mode not in ("any", "all"):
        raise CoordinationError("Error: 'mode' must be any or all")
    return co.plain(ctx, f"⏳ wait_for_workstream ({mode}, {timeout:g}s): {len(ids)} child(ren)",
                    (ids, timeout, mode))


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    ids, timeout, mode = call.data
    children, timed_out = await co.need(ctx).wait(ctx.env.session_id, ids, timeout, mode)
    return co.as_json({"mode": mode, "timed_out": timed_out,
                       "workstreams": [c.brief() for c in children]})
