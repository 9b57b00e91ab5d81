"""spawn_workstream: start one child session of a coordinator (see ``_coordination``)."""

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
)
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

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
    return (text_arg(raw.get("name"), "name", 80),
            text_arg(raw.get("initial_message"), "initial_message", MAX_MESSAGE),
            text_arg(raw.get("model"), "model", 200))


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    blocked = unavailable(ctx)
    if blocked:
        return blocked
    try:
        name, message, model = spec({"name": args.name, "initial_message": args.initial_message,
                                     "model": args.model})
    except CoordinationError as exc:
        return prepare_error(str(exc))
    first = message.splitlines()[0][:100] if message else "(idle)"
    return plain(ctx, f"⚙ spawn_workstream {name or 'child'}: {first}",
                 (name, message, model), label="spawn_workstream", preview=message[:300])


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    name, message, model = call.data
    try:
        child = need(ctx).spawn(ctx.env.session_id, name or None, message or None, model or None)
    except CoordinationError as exc:
        return refused(exc)
    return as_json(child.brief())
