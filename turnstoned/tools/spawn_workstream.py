"""spawn_workstream: start one child session of a coordinator (see ``_coordination``)."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _coordination as co
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError

MAX_MESSAGE = 100_000


class Args(msgspec.Struct, kw_only=True):
    initial_message: Any = None
    name: Any = None
    model: Any = None


def spec(raw: Any) -> tuple[str, str, str]:
    """(name, message, model) of one child, checked."""
    if isinstance(raw, str):
        raw = {"initial_message": raw}
    if not isinstance(raw, dict):
        raise CoordinationError("Error: a child is an object with initial_message, name, model")
    return (co.text_arg(raw.get("name"), "name", 80),
            co.text_arg(raw.get("initial_message"), "initial_message", MAX_MESSAGE),
            co.text_arg(raw.get("model"), "model", 200))


@co.checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    name, message, model = spec({"name": args.name, "initial_message": args.initial_message,
                                 "model": args.model})
    first = message.splitlines()[0][:100] if message else "(idle)"
    return co.plain(ctx, f"⚙ spawn_workstream {name or 'child'}: {first}",
                    (name, message, model), label="spawn_workstream", preview=message[:300])


@co.answered
async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    name, message, model = call.data
    child = co.need(ctx).spawn(ctx.env.session_id, name or None, message or None, model or None)
    return co.as_json(child.brief())
