"""tasks: a coordinator's task list, kept in the store (``store.tasks``)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned.store.tasks import STATUSES, Task, TaskStore
from turnstoned.tools._coordination import as_json, checked, plain, text_arg, ws_id
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput
from turnstoned.tools.coordination import CoordinationError

ACTIONS = ("add", "update", "remove", "reorder", "list")
MAX_TEXT = 200
MAX_TASKS = 200


class Args(msgspec.Struct, kw_only=True):
    action: Any = None
    title: Any = None
    task_id: Any = None
    status: Any = None
    note: Any = None
    child_ws_id: Any = None
    task_ids: Any = None


@dataclass(frozen=True, slots=True)
class Plan:
    action: str
    fields: dict[str, Any]
    task_id: str = ""
    order: tuple[str, ...] = ()


def _fields(args: Args) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in (("title", args.title), ("note", args.note)):
        if value is not None:
            fields[name] = text_arg(value, name, MAX_TEXT)
    if args.status is not None:
        status = str(args.status).strip().lower()
        if status not in STATUSES:
            raise CoordinationError(f"Error: 'status' must be one of {', '.join(STATUSES)}")
        fields["status"] = status
    if args.child_ws_id is not None:
        fields["child_id"] = ws_id(args.child_ws_id) if str(args.child_ws_id).strip() else None
    return fields


def _plan(args: Args) -> Plan:
    action = str(args.action or "").strip().lower()
    if action not in ACTIONS:
        raise CoordinationError(f"Error: action must be one of {', '.join(ACTIONS)}")
    if action == "list":
        return Plan(action, {})
    if action == "reorder":
        if not isinstance(args.task_ids, list) or not args.task_ids:
            raise CoordinationError("Error: 'task_ids' must list every task id in the new order")
        return Plan(action, {}, order=tuple(str(t).strip() for t in args.task_ids))
    fields = _fields(args)
    if action == "add":
        if not fields.get("title"):
            raise CoordinationError("Error: 'title' is required for add")
        return Plan(action, fields)
    task_id = str(args.task_id or "").strip()
    if not task_id:
        raise CoordinationError(f"Error: 'task_id' is required for {action}")
    if action == "update" and not fields:
        raise CoordinationError("Error: update needs title, status, note or child_ws_id")
    return Plan(action, fields, task_id=task_id)


@checked
def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    if ctx.env.services.store is None:
        raise CoordinationError("Error: the task list needs the daemon's database")
    plan = _plan(args)
    what = plan.fields.get("title") or plan.task_id
    return plain(ctx, f"☑ tasks {plan.action}" + (f": {what}" if what else ""), plan)


def _show(t: Task) -> dict[str, Any]:
    return {"task_id": t.id, "title": t.title, "status": t.status, "note": t.note,
            "child_ws_id": t.child_id}


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    plan: Plan = call.data
    store, sid = TaskStore(ctx.env.services.need_store()), ctx.env.session_id
    current = store.of(sid)
    if plan.action == "add":
        if len(current) >= MAX_TASKS:
            return ToolOutput(f"Error: the list already has {MAX_TASKS} tasks", is_error=True)
        store.add(f"t{secrets.token_hex(3)}", sid, plan.fields["title"],
                  plan.fields.get("status", "pending"), plan.fields.get("note", ""),
                  plan.fields.get("child_id"))
    elif plan.action in ("update", "remove"):
        done = (store.update(sid, plan.task_id, **plan.fields) if plan.action == "update"
                else store.remove(sid, plan.task_id))
        if not done:
            known = ", ".join(t.id for t in current) or "the list is empty"
            return ToolOutput(f"Error: no task {plan.task_id!r} ({known})", is_error=True)
    elif plan.action == "reorder":
        if sorted(plan.order) != sorted(t.id for t in current):
            return ToolOutput("Error: 'task_ids' must name every task exactly once: "
                              + ", ".join(t.id for t in current), is_error=True)
        store.reorder(sid, list(plan.order))
    return as_json({"tasks": [_show(t) for t in store.of(sid)]})
