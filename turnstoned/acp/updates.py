"""Engine items as ACP session updates: tool calls with their kind, status, locations and
content (output, diffs), message and thought chunks, plans. Pure functions of the items.

A ``toolCall`` item becomes a ``tool_call`` (at ``item/started``) and
``tool_call_update``s (approval, streamed output, ``item/completed``). Statuses:
``pending`` stays ``pending``, ``running`` is ``in_progress``, ``completed`` is
``completed``; ``failed``, ``declined`` and ``cancelled`` are ``failed`` (ACP has no
word for a denied or interrupted call: the output says which, and ``_meta`` keeps
turnstoned's own status).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

from turnstoned import protocol as p

JSON = dict[str, Any]

KINDS: dict[str, str] = {
    "read_file": "read", "read_resource": "read", "bash_output": "read", "diff_file": "read",
    "skill": "read", "use_prompt": "read", "inspect_workstream": "read",
    "list_workstreams": "read",
    "write_file": "edit", "edit_file": "edit",
    "search": "search", "web_search": "search", "tool_search": "search", "recall": "search",
    "bash": "execute", "watch": "execute", "kill_shell": "execute",
    "web_fetch": "fetch", "open_preview": "fetch",
    "propose_plan": "switch_mode",
    "tasks": "think",
}
STATUSES: dict[str, str] = {"pending": "pending", "running": "in_progress",
                            "completed": "completed", "failed": "failed",
                            "declined": "failed", "cancelled": "failed"}
OUTPUT_TAIL = 65_536  # chars of a command's streamed output resent with each update
_PLAN_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+(?:\[[ xX]\]\s+)?(.+)$")


def kind_of(item: p.ToolCallItem) -> str:
    if item.file_change is not None and item.file_change.kind == "delete":
        return "delete"
    return KINDS.get(item.tool, "other")


def arguments(item: p.ToolCallItem) -> JSON:
    try:
        found = json.loads(item.arguments or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def title_of(item: p.ToolCallItem) -> str:
    return item.header.strip() or item.tool


def locations(item: p.ToolCallItem, cwd: Path) -> list[JSON]:
    """The files a call reads or changes (absolute paths; a line where one is named)."""
    if item.file_change is not None:
        return [{"path": item.file_change.path}]
    if KINDS.get(item.tool) not in ("read", "edit"):
        return []
    args = arguments(item)
    value = args.get("path", args.get("path_a"))
    if not isinstance(value, str) or not value:
        return []
    path = Path(value).expanduser()
    found: JSON = {"path": str(path if path.is_absolute() else cwd / path)}
    line = args.get("offset") or args.get("near_line")
    if isinstance(line, int) and line > 0:
        found["line"] = line
    return [found]


def fenced(text: str, lang: str = "") -> str:
    """``text`` in a markdown code fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def text_content(text: str) -> JSON:
    return {"type": "content", "content": {"type": "text", "text": text}}


def output_content(item: p.ToolCallItem, output: str) -> list[JSON]:
    """A call's output as tool-call content: commands' in a code fence (the tail of a long
    one while it streams), others as they are."""
    if not output:
        return []
    if item.tool in ("bash", "bash_output", "watch", "kill_shell"):
        tail = output[-OUTPUT_TAIL:]
        if len(tail) < len(output):
            tail = f"... {len(output) - len(tail)} chars above ...\n" + tail
        return [text_content(fenced(tail))]
    return [text_content(output)]


def diff_content(path: str, old: str | None, new: str) -> JSON:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def hunk_diffs(change: p.FileChange) -> list[JSON]:
    """A change's unified diff as ``diff`` contents, one per hunk (old and new text of the
    lines it shows), for when the whole texts are not at hand (a replayed history)."""
    out: list[JSON] = []
    old: list[str] | None = None
    new: list[str] = []

    def close() -> None:
        if old is not None:
            created = change.kind == "create" and not old
            out.append(diff_content(change.path, None if created else "".join(old), "".join(new)))

    for line in change.unified_diff.splitlines(keepends=True):
        if line.startswith("@@"):
            close()
            old, new = [], []
        elif old is None or line.startswith("\\"):
            continue  # the file header, or "\\ No newline at end of file"
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    close()
    return out


def meta(item: p.ToolCallItem) -> JSON:
    """What turnstoned knows of a call that ACP has no field for."""
    found: JSON = {"tool": item.tool, "status": item.status}
    for key, value in (("verdict", item.verdict), ("sandbox", item.sandbox),
                       ("autoApproveReason", item.auto_approve_reason),
                       ("effectStatus", item.effect_status)):
        if value is not None:
            found[key] = msgspec.to_builtins(value)
    return {"turnstoned": found}


def tool_call(item: p.ToolCallItem, cwd: Path, content: list[JSON] | None = None) -> JSON:
    """The ``tool_call`` update that opens a call (a call that never asks runs at once:
    ``in_progress``)."""
    status = STATUSES[item.status]
    if item.status == "pending" and not item.needs_approval:
        status = "in_progress"
    update: JSON = {"sessionUpdate": "tool_call", "toolCallId": item.call_id,
                    "title": title_of(item), "kind": kind_of(item),
                    "status": status, "rawInput": arguments(item),
                    "locations": locations(item, cwd), "_meta": meta(item)}
    if content:
        update["content"] = content
    return update


def tool_call_update(call_id: str, **fields: Any) -> JSON:
    """A ``tool_call_update``: only the fields given change (``content`` replaces)."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
            **{k: v for k, v in fields.items() if v is not None}}


def finished(item: p.ToolCallItem, cwd: Path, diffs: list[JSON] | None) -> JSON:
    """The update that closes a call: its final status, output and diff."""
    content = list(diffs or []) + output_content(item, item.output or "")
    return tool_call_update(item.call_id, status=STATUSES[item.status], title=title_of(item),
                            content=content, locations=locations(item, cwd), _meta=meta(item),
                            rawOutput={"output": item.output, "isError": item.is_error})


def plan_entries(item: p.ToolCallItem) -> list[JSON]:
    """The steps of a proposed plan (``propose_plan``), as ACP plan entries."""
    plan = arguments(item).get("plan")
    if not isinstance(plan, str):
        return []
    steps = [m.group(1).strip() for line in plan.splitlines() if (m := _PLAN_STEP.match(line))]
    return [{"content": step, "priority": "medium", "status": "pending"} for step in steps]


TASK_STATUSES = {"pending": "pending", "in_progress": "in_progress", "done": "completed",
                 "blocked": "pending", "needs_user": "pending"}


def task_entries(tasks: list[Any]) -> list[JSON]:
    """A coordinator's task list (``store.tasks.Task``) as ACP plan entries: ``blocked``
    and ``needs_user`` are pending, with the status in the entry's text."""
    out: list[JSON] = []
    for task in tasks:
        text = task.title
        if task.status in ("blocked", "needs_user"):
            text += f" ({task.status.replace('_', ' ')})"
        if task.note:
            text += f" — {task.note}"
        out.append({"content": text, "priority": "medium",
                    "status": TASK_STATUSES.get(task.status, "pending")})
    return out


def replay(items: list[p.Item], cwd: Path, notices: bool) -> list[JSON]:
    """A session's history as the updates that redraw it (``session/load``): messages as
    chunks, tool calls opened in their final state (their diffs from the stored hunks),
    compaction marks as notices when the client shows notices."""
    out: list[JSON] = []
    for item in items:
        if isinstance(item, p.UserMessageItem):
            out.append(chunk("user_message_chunk", item.text, item.id))
        elif isinstance(item, p.AgentMessageItem):
            if item.text:
                out.append(chunk("agent_message_chunk", item.text, item.id))
        elif isinstance(item, p.ReasoningItem):
            if item.text:
                out.append(chunk("agent_thought_chunk", item.text, item.id))
        elif isinstance(item, p.ToolCallItem):
            diffs = hunk_diffs(item.file_change) if item.file_change is not None else []
            opened = tool_call(item, cwd, diffs + output_content(item, item.output or ""))
            opened["status"] = STATUSES[item.status]
            opened["rawOutput"] = {"output": item.output, "isError": item.is_error}
            out.append(opened)
        elif isinstance(item, p.NoticeItem) and notices:
            out.append({"sessionUpdate": "notice", "severity": "info",
                        "title": (item.text.splitlines() or [""])[0][:200] or item.kind,
                        "description": item.detail or item.text})
    return out


def chunk(kind: str, text: str, message_id: str | None = None) -> JSON:
    """``agent_message_chunk``, ``agent_thought_chunk`` or ``user_message_chunk``."""
    update: JSON = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id:
        update["messageId"] = message_id
    return update
