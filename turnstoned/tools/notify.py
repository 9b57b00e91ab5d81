"""notify: a short message for the user, to the editor and the configured webhook channels.

The editor gets a ``session/notice`` of kind ``notify`` (clients surface it as a
system notification); each webhook channel of ``[notify.channels]`` gets a POST
in its format (``turnstoned.net.webhook``), tried three times. A turn may send five
notifications; one that reached nobody does not count. The text is the model's:
credentials in it are redacted by the output guard before it goes anywhere (a
webhook is outside the machine).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned import guard
from turnstoned.net import webhook
from turnstoned.tools._lenient import is_blank
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

MAX_MESSAGE, MAX_TITLE = 2000, 200
PER_TURN = 5
KEPT_TURNS = 256  # per-turn counters remembered


class Args(msgspec.Struct, kw_only=True):
    message: Any = None
    title: Any = None
    channel: Any = None


@dataclass(frozen=True, slots=True)
class Plan:
    message: str
    title: str | None
    channels: tuple[str, ...]
    editor: bool


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else "" if is_blank(value) else str(value)


def _screened(value: Any) -> str:
    return guard.check(_text(value), redact=True).text


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    message, title = _screened(args.message), _screened(args.title) or None
    if not message:
        return prepare_error("Error: message is required", header="✉ notify: (no message)")
    if len(message) > MAX_MESSAGE:
        return prepare_error(f"Error: message exceeds {MAX_MESSAGE} character limit")
    if title and len(title) > MAX_TITLE:
        return prepare_error(f"Error: title exceeds {MAX_TITLE} character limit")
    settings = ctx.env.services.notify
    configured = tuple(settings.channels) if settings else ()
    wanted = _text(args.channel)
    if wanted and wanted not in configured:
        known = ", ".join(configured) or "none are configured"
        return prepare_error(f"Error: unknown channel {wanted!r} (channels: {known})")
    editor = (settings is None or settings.editor) and not wanted
    channels = (wanted,) if wanted else configured
    if not editor and not channels:
        return prepare_error("Error: notifications are turned off: no channel is configured "
                             "and [notify] editor is false")
    where = ", ".join((["editor"] if editor else []) + list(channels))
    head = f"{title}: {message}" if title else message
    return PreparedCall(header=f"✉ notify → {where}", preview=head[:120],
                        data=Plan(message, title, channels, editor))


def _reserve(ctx: ToolContext) -> str | None:
    """Count this notification against its turn; the key to release it, None when over."""
    counts = ctx.env.services.turn_counts
    key = f"notify:{ctx.turn_id or ctx.env.session_id}"
    if counts.get(key, 0) >= PER_TURN:
        return None
    counts[key] = counts.get(key, 0) + 1
    while len(counts) > KEPT_TURNS:
        del counts[next(iter(counts))]
    return key


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    plan: Plan = call.data
    key = _reserve(ctx)
    if key is None:
        return ToolOutput(f"Error: notification rate limit exceeded (max {PER_TURN} per turn)",
                          is_error=True, effect_status="none")
    sent, failed = await _send(plan, ctx)
    if not sent:
        ctx.env.services.turn_counts[key] -= 1  # reached nobody: not counted
        return ToolOutput("Error: notification delivery failed: " + "; ".join(failed),
                          is_error=True, summary="failed")
    text = f"Notification sent to {', '.join(sent)}."
    if failed:
        text += " Not delivered: " + "; ".join(failed) + "."
    return ToolOutput(text, summary=f"sent to {len(sent)}")


async def _send(plan: Plan, ctx: ToolContext) -> tuple[list[str], list[str]]:
    """Deliver everywhere at once; the destinations reached, and the failures with why."""
    settings = ctx.env.services.notify
    sent = []
    if plan.editor:
        ctx.env.announce("notify", plan.message,
                         {"title": plan.title, "channels": list(plan.channels)})
        sent.append("the editor")
    if not plan.channels or settings is None:
        return sent, []
    context = {"sessionId": ctx.env.session_id, "project": ctx.env.cwd.name}
    jobs = []
    for name in plan.channels:
        channel = settings.channels[name]
        body = webhook.payload(channel.format, plan.title, plan.message, context)
        jobs.append(webhook.deliver(channel, body, settings.timeout_seconds))
    failed = []
    for name, error in zip(plan.channels, await asyncio.gather(*jobs), strict=True):
        if error is None:
            sent.append(name)
        else:
            failed.append(f"{name} ({error})")
    return sent, failed
