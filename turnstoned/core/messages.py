"""Conversation messages as the daemon keeps and persists them.

A ``Message`` is an OpenAI chat message plus metadata the model never sees
(item ids, tool status and effect). ``to_openai`` renders what is sent;
``to_items`` renders history for an editor redrawing a resumed session.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from turnstoned import protocol as p


class ToolCall(msgspec.Struct, kw_only=True):
    id: str  # the daemon's id; tool results answer it
    name: str
    arguments: str = "{}"
    header: str = ""
    preview: str = ""
    needs_approval: bool = False
    file_change: p.FileChange | None = None
    model_id: str = ""  # the model's own id for the call ("": the same as ``id``)


class Message(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: str  # "user" | "assistant" | "tool"
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    # Metadata (never sent to the model).
    id: str = ""
    turn_id: str | None = None
    status: p.ToolStatus | None = None
    is_error: bool = False
    effect_status: p.EffectStatus | None = None
    notice: str | None = None  # set on user messages the daemon wrote (feedback, notices)
    # What came with the message besides its text (the editor state, the files it
    # mentions): the model reads it before the text; the transcript shows the text alone.
    context: str | None = None
    # What the user typed, when the message also holds input folded into it (queued text,
    # notices): the prompt to edit and send again after a rewind.
    prompt: str | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "\n".join(part.get("text", "") for part in self.content if part.get("type") == "text")


# The notice of the message that stands for compacted history (it leads the model's view).
SUMMARY_NOTICE = "compacted"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Message)


def encode(msg: Message) -> str:
    return _encoder.encode(msg).decode()


def decode(body: str) -> Message:
    return _decoder.decode(body)


def to_openai(history: list[Message]) -> list[dict[str, Any]]:
    """The history as chat-completion messages.

    Calls carry the ids the model gave them (the daemon's own ids never reach it).
    Image parts of a tool result travel in a user message right after the tool
    message, because most OpenAI-compatible servers accept only text in tool
    messages. A compaction summary and a user message right before or after it
    become one user message (strict chat templates refuse two in a row).
    """
    out: list[dict[str, Any]] = []
    model_ids: dict[str, str] = {}
    summary: dict[str, Any] | None = None
    for m in history:
        if m.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": m.text()}
            model_ids.update((c.id, c.model_id or c.id) for c in m.tool_calls)
            if m.tool_calls:
                entry["tool_calls"] = [
                    {"id": model_ids[c.id], "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments}}
                    for c in m.tool_calls
                ]
            out.append(entry)
        elif m.role == "tool":
            answered = model_ids.get(m.tool_call_id or "", m.tool_call_id)
            out.append({"role": "tool", "tool_call_id": answered, "content": m.text()})
            images = [part for part in m.content or () if isinstance(part, dict)
                      and part.get("type") == "image_url"] if isinstance(m.content, list) else []
            if images:
                label = {"type": "text", "text": f"(image returned by tool call {answered})"}
                out.append({"role": "user", "content": [label, *images]})
        else:
            content = m.content if m.content is not None else ""
            if m.context and isinstance(content, str):
                content = f"{m.context}\n\n{content}"
            elif m.context and isinstance(content, list):
                content = [{"type": "text", "text": m.context}, *content]
            before = out[-1] if out else None
            if (before is not None and (before is summary or m.notice == SUMMARY_NOTICE)
                    and before["role"] == "user" and isinstance(before["content"], str)
                    and isinstance(content, str)):
                before["content"] += "\n\n" + content
            else:
                out.append({"role": m.role, "content": content})
            if m.notice == SUMMARY_NOTICE:
                summary = out[-1]
    return out


def _images(content: Any) -> list[p.ImageData]:
    """The pictures of a message's content parts (data URLs)."""
    found = []
    for part in content if isinstance(content, list) else ():
        url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
        head, _, data = url.partition(";base64,")
        if head.startswith("data:") and data:
            found.append(p.ImageData(mime_type=head[5:], data=data))
    return found


def _tool_item(call: ToolCall, result: Message | None) -> p.ToolCallItem:
    if result is None:
        return p.ToolCallItem(
            id=call.id, call_id=call.id, tool=call.name, arguments=call.arguments,
            header=call.header, preview=call.preview, needs_approval=call.needs_approval,
            status="cancelled", is_error=True, effect_status="unknown", file_change=call.file_change,
        )
    return p.ToolCallItem(
        id=call.id, call_id=call.id, tool=call.name, arguments=call.arguments,
        header=call.header, preview=call.preview, needs_approval=call.needs_approval,
        status=result.status or ("failed" if result.is_error else "completed"),
        output=result.text(), is_error=result.is_error, effect_status=result.effect_status,
        file_change=call.file_change,
    )


def to_items(history: list[Message],
             marks: Mapping[int, Sequence[p.Item]] | None = None) -> list[p.Item]:
    """The history as protocol items, in order (tool results joined to their calls);
    ``marks[i]`` are items shown before message ``i`` (``len(history)``: after the last)."""
    results = {m.tool_call_id: m for m in history if m.role == "tool"}
    marks = marks or {}
    items: list[p.Item] = []
    for i, m in enumerate(history):
        items.extend(marks.get(i, ()))
        if m.role == "user":
            if m.notice:
                items.append(p.NoticeItem(id=m.id, kind=m.notice, text=m.text()))
            else:
                items.append(p.UserMessageItem(id=m.id, text=m.text(), turn_id=m.turn_id,
                                               images=_images(m.content)))
        elif m.role == "assistant":
            if m.reasoning:
                items.append(p.ReasoningItem(id=f"{m.id}_r", text=m.reasoning))
            if m.text():
                items.append(p.AgentMessageItem(id=m.id, text=m.text()))
            items.extend(_tool_item(c, results.get(c.id)) for c in m.tool_calls)
    items.extend(marks.get(len(history), ()))
    return items


def repair(history: list[Message]) -> list[Message]:
    """Receipts for tool calls that have no result (the daemon stopped mid-batch)."""
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    out: list[Message] = []
    for m in history:
        out.append(m)
        if m.role != "assistant":
            continue
        for c in m.tool_calls:
            if c.id not in answered:
                out.append(Message(
                    role="tool", tool_call_id=c.id, name=c.name, id=c.id, turn_id=m.turn_id,
                    content=("The daemon stopped before this call's result was recorded. Outcome "
                             "UNKNOWN — it may have run; reconcile before re-issuing it."),
                    status="cancelled", is_error=True, effect_status="unknown",
                ))
    return out
