"""watch: a shell command the daemon polls across turns and restarts (create / list / cancel).

``prepare`` checks everything the model sent (the command against the bash
blocklist, the interval, the ``stop_on`` condition with the same checker the
runner evaluates it with); ``create`` asks for approval like bash. The rows live
in the store (``store.watches``); the runner that polls them and delivers the
final poll to the session is ``core.watches``.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned.condition import ConditionError, compile_condition
from turnstoned.shell.blocklist import blocked_message, normalize_command
from turnstoned.store.watches import Watch, WatchStore
from turnstoned.tools._lenient import int_or, is_blank
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

ACTIONS = ("create", "list", "cancel")
DEFAULT_EVERY = "5m"
MIN_INTERVAL, MAX_INTERVAL = 10.0, 86_400.0
DEFAULT_POLLS, MAX_POLLS = 100, 10_000
MAX_ACTIVE = 5  # per session
MAX_NAME = 64
_DURATION = re.compile(r"^\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s)?\s*$", re.IGNORECASE)
_NAME = re.compile(r"^[\w.:-]+$")


class Args(msgspec.Struct, kw_only=True):
    """watch arguments; every field is checked in ``prepare``."""

    action: Any = None
    command: Any = None
    poll_every: Any = None
    stop_on: Any = None
    name: Any = None
    max_polls: Any = None


@dataclass(frozen=True, slots=True)
class Plan:
    action: str
    name: str = ""
    command: str = ""
    interval: float = 0.0
    stop_on: str | None = None
    max_polls: int = DEFAULT_POLLS


class _Invalid(Exception):
    """An argument problem; the text is what the model reads."""


def parse_duration(text: str) -> float:
    """Seconds in ``"90"``, ``"1.5"``, ``"30s"``, ``"5m"``, ``"1h 30m"``; ValueError if not one."""
    try:
        seconds = float(text)
    except ValueError:
        match = _DURATION.match(text)
        if not match or not any(match.groups()):
            raise ValueError(f"{text!r} is not a duration like 30s, 5m, 1h or 1h30m") from None
        h, m, s = (int(g or 0) for g in match.groups())
        seconds = h * 3600 + m * 60 + s
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def format_duration(seconds: float) -> str:
    """``45s``, ``5m``, ``2h``, ``1h30m``."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m"
    hours, minutes = divmod(total // 60, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def _text(value: Any, field: str) -> str:
    if is_blank(value):
        return ""
    if not isinstance(value, str):
        raise _Invalid(f"Error: '{field}' must be a string")
    return value.strip()


def _interval(value: Any) -> float:
    text = _text(value, "poll_every") if not isinstance(value, int | float) else str(value)
    try:
        seconds = parse_duration(text or DEFAULT_EVERY)
    except ValueError as exc:
        raise _Invalid(f"Error: invalid poll_every: {exc}") from None
    if seconds < MIN_INTERVAL:
        raise _Invalid(f"Error: invalid poll_every: the minimum poll interval is "
                       f"{MIN_INTERVAL:g}s")
    if seconds > MAX_INTERVAL:
        raise _Invalid("Error: invalid poll_every: the maximum poll interval is 24h")
    return seconds


def _create(args: Args, ctx: ToolContext, watches: WatchStore) -> Plan:
    command = normalize_command(_text(args.command, "command")).strip()
    if not command:
        raise _Invalid("Error: 'command' is required for create")
    blocked = blocked_message(command)
    if blocked:
        raise _Invalid(blocked)
    interval = _interval(args.poll_every)
    stop_on = _text(args.stop_on, "stop_on") or None
    if stop_on is not None:
        try:
            compile_condition(stop_on)
        except ConditionError as exc:
            raise _Invalid(f"Error: invalid stop_on: {exc}") from None
    name = _text(args.name, "name") or f"watch-{secrets.token_hex(2)}"
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise _Invalid(f"Error: a watch name is at most {MAX_NAME} letters, digits, '-', '_', "
                       "'.' or ':'")
    polls = int_or(args.max_polls, DEFAULT_POLLS)
    if polls is None:
        raise _Invalid("Error: 'max_polls' must be an integer")
    active = watches.active(ctx.env.session_id)
    if len(active) >= MAX_ACTIVE:
        raise _Invalid(f"Error: this session already has {len(active)} active watches (the most "
                       f"is {MAX_ACTIVE}); cancel one first.")
    if any(w.name == name for w in active):
        raise _Invalid(f'Error: an active watch is already named "{name}".')
    return Plan("create", name, command, interval, stop_on, max(1, min(MAX_POLLS, polls)))


def _plan(args: Args, ctx: ToolContext) -> Plan:
    action = _text(args.action, "action").lower()
    if action not in ACTIONS:
        raise _Invalid(f"Error: action must be create, list or cancel, got {args.action!r}")
    if ctx.env.services.store is None:
        raise _Invalid("Error: watches need the daemon's database, which is not available here")
    if action == "list":
        return Plan("list")
    if action == "cancel":
        name = _text(args.name, "name")
        if not name:
            raise _Invalid("Error: 'name' is required for cancel")
        return Plan("cancel", name)
    return _create(args, ctx, WatchStore(ctx.env.services.need_store()))


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    try:
        plan = _plan(args, ctx)
    except _Invalid as exc:
        return prepare_error(str(exc), header=f"⏱ watch {_text(args.action, 'x') or '?'}: error")
    if plan.action != "create":
        what = f": {plan.name}" if plan.name else ""
        return PreparedCall(header=f"⏱ watch {plan.action}{what}", data=plan)
    condition = f"condition: {plan.stop_on}" if plan.stop_on else "fires when the output changes"
    return PreparedCall(
        header=f"⏱ watch {plan.name} every {format_duration(plan.interval)}: "
               f"{plan.command.splitlines()[0][:120]}",
        preview=f"{plan.command}\n\n{condition}; at most {plan.max_polls} polls",
        needs_approval=True, approval_label="watch", data=plan)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    plan: Plan = call.data
    watches = WatchStore(ctx.env.services.need_store())
    if plan.action == "list":
        return _list(watches.active(ctx.env.session_id))
    if plan.action == "cancel":
        return _cancel(watches, ctx, plan.name)
    now = time.time()
    watch = Watch(id=secrets.token_hex(16), session_id=ctx.env.session_id, name=plan.name,
                  command=plan.command, interval=plan.interval, stop_on=plan.stop_on,
                  max_polls=plan.max_polls, poll_count=0, last_output=None, last_exit_code=None,
                  last_poll=None, next_poll=now + plan.interval, active=True, ended=None,
                  created_at=now)
    refused = watches.create(watch, MAX_ACTIVE)
    if refused:
        return ToolOutput(refused, is_error=True, effect_status="none")
    ctx.env.services.watches_changed()
    condition = f"condition: {plan.stop_on}" if plan.stop_on else "mode: fire on output change"
    return ToolOutput(
        f'Watch "{plan.name}" ({watch.id[:8]}) created: every {format_duration(plan.interval)}, '
        f"at most {plan.max_polls} polls, {condition}.\nCommand: {plan.command}\nThe first poll "
        f"runs in {format_duration(plan.interval)}; only the final poll is reported to you.",
        summary=f"every {format_duration(plan.interval)}")


def describe(w: Watch) -> str:
    """One line about a watch, as ``list`` shows it."""
    condition = w.stop_on or "on change"
    return (f"  {w.name} ({w.id[:8]}): every {format_duration(w.interval)}, poll "
            f"#{w.poll_count}/{w.max_polls}, condition: {condition}, cmd: {w.command[:60]}")


def _list(active: list[Watch]) -> ToolOutput:
    if not active:
        return ToolOutput("No active watches.", summary="none")
    return ToolOutput("\n".join(["Active watches:", *(describe(w) for w in active)]),
                      summary=f"{len(active)} active")


def _cancel(watches: WatchStore, ctx: ToolContext, key: str) -> ToolOutput:
    found = watches.find(ctx.env.session_id, key)
    if found is None:
        return ToolOutput(f'Watch "{key}" not found.', is_error=True)
    if not found.active or not watches.deactivate(found.id, "cancelled"):
        ended = watches.get(found.id)
        why = ended.ended if ended and ended.ended else "ended"
        return ToolOutput(f'Watch "{found.name}" already completed ({why}).')
    ctx.env.services.watches_changed()
    return ToolOutput(f'Watch "{found.name}" cancelled.', summary="cancelled")
