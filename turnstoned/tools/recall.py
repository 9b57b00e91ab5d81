"""recall: full-text search over the messages of every session (see ``store.recall``).

Beyond the original, earlier turns of the calling session are searched too: an
editor session is resumed for days, so its beginning is as far away as another
session's, and it will fall out of the context once history is compacted. Only
the running turn is left out (the model has it in front of it), and so are
recall's own calls and results (they are never indexed), so a search never
finds itself. A hit from a message that compaction took out of its session's
context (the model there reads a summary instead) says so.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from turnstoned.store import recall as index
from turnstoned.tools._lenient import int_or
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

DEFAULT_LIMIT, MAX_LIMIT = 20, 50


class Args(msgspec.Struct, kw_only=True):
    """recall arguments; checked in ``prepare``."""

    query: Any = None
    limit: Any = None
    offset: Any = None


@dataclass(frozen=True, slots=True)
class Plan:
    query: str
    limit: int
    offset: int


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Check the query and clamp limit (1..50) and offset (>= 0)."""
    if ctx.env.services.store is None:
        return prepare_error("Error: conversation history is not available in this daemon.")
    query = args.query.strip() if isinstance(args.query, str) else ""
    if not query:
        return prepare_error("Error: query is required", header="⚠ recall: no query")
    limit, offset = int_or(args.limit, DEFAULT_LIMIT), int_or(args.offset, 0)
    if limit is None or offset is None:
        return prepare_error("Error: limit and offset must be integers",
                             header=f"⚠ recall '{query[:80]}': bad limit/offset")
    plan = Plan(query, max(1, min(MAX_LIMIT, limit)), max(0, offset))
    page = f", from {plan.offset}" if plan.offset else ""
    return PreparedCall(header=f"⚙ recall '{query[:120]}'{page}", data=plan)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """Search in a worker thread (a large history takes a moment) and list the hits."""
    plan: Plan = call.data
    store, session_id = ctx.env.services.need_store(), ctx.env.session_id

    def run() -> list[index.Hit]:
        turn = index.current_turn(store, session_id)
        return index.search(store, plan.query, limit=plan.limit, offset=plan.offset,
                            exclude=(session_id, turn))

    try:
        hits = await asyncio.to_thread(run)
    except index.RecallUnavailable as exc:
        return ToolOutput(f"Error: {exc}.", is_error=True)
    return ToolOutput(render(hits, plan, session_id), summary=f"{len(hits)} match(es)")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M")


def _hit_line(hit: index.Hit, current: str) -> str:
    title = f' "{hit.title}"' if hit.title else ""
    here = " (this session)" if hit.session_id == current else ""
    text = " ".join(hit.text.split())
    if hit.chars > index.WHOLE_TEXT_CHARS:
        text += f" ({hit.chars} chars in all)"
    where = f"session {hit.session_id}{here}{title}"
    compacted = ""
    if hit.compacted:
        compacted = (" · compacted (earlier in this conversation, now only summarised in your "
                     "context)" if here else " · compacted")
    return f"[{_when(hit.created_at)} · {where} · {hit.kind}{compacted}] {text}"


def render(hits: list[index.Hit], plan: Plan, current: str) -> str:
    """The model-facing result text."""
    if not hits:
        more = " at this offset" if plan.offset else ""
        return f"No conversation history found for '{plan.query}'{more}."
    page = f", offset {plan.offset}" if plan.offset else ""
    lines = [f"Conversations ({len(hits)} matches{page}):"]
    lines.extend(_hit_line(h, current) for h in hits)
    if len(hits) == plan.limit:
        lines.append(f"(More may match: call recall with offset={plan.offset + plan.limit}.)")
    return "\n".join(lines)
