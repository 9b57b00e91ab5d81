"""Every tool-handle type of the engine, besides a built-in tool module's.

What the pipeline calls: an MCP server's tool, the synthetic ``tool_search``
over deferred tools (MCP tools, and built-ins at a small window), and ``task_agent`` refused inside a task agent (a
built-in tool module's handle is ``tools.ToolSpec.handle``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from turnstoned import protocol as p
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.mcp.models import MCPTool

EXPANDED_KEY = "expanded_tools"
TOOL_SEARCH = "tool_search"
BUILT_IN = "built-in"  # the ``server`` of a deferred built-in tool


class Searchable(Protocol):
    """A tool ``tool_search`` can find: an MCP tool or a deferred built-in."""

    @property
    def name(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def description(self) -> str: ...
    def openai_schema(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A built-in tool kept behind ``tool_search`` (its full schema)."""

    name: str
    description: str
    schema: dict[str, Any]
    server: str = BUILT_IN

    @property
    def tool(self) -> str:
        return self.name

    @classmethod
    def of(cls, schema: dict[str, Any]) -> BuiltinTool:
        fn = schema["function"]
        return cls(fn["name"], fn.get("description", ""), schema)

    def openai_schema(self) -> dict[str, Any]:
        return self.schema


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence."""
    match = re.search(r"(?<=[.!?])\s", text)
    return text[:match.start()] if match else text


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool schema for a small window: descriptions cut to their first sentence."""
    fn = schema["function"]
    params = dict(fn.get("parameters") or {})
    props = params.get("properties")
    if isinstance(props, dict):
        params["properties"] = {k: _compact_property(v) for k, v in props.items()}
    return {"type": "function", "function": {
        "name": fn["name"], "description": first_sentence(fn.get("description", "")),
        "parameters": params}}


def _compact_property(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    out = {k: v for k, v in prop.items() if k != "description"}
    if isinstance(prop.get("description"), str):
        out["description"] = first_sentence(prop["description"])
    if isinstance(out.get("items"), dict) and isinstance(out["items"].get("properties"), dict):
        out["items"] = {**out["items"], "properties": {
            k: _compact_property(v) for k, v in out["items"]["properties"].items()}}
    return out


class McpToolHandle:
    """An MCP server's tool in the pipeline: always asks unless granted, per tool."""

    primary_key: str | None = None

    def __init__(self, tool: MCPTool, manager: MCPManager) -> None:
        self.name = tool.name
        self.tool = tool
        self.manager = manager

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        shown = json.dumps(args, ensure_ascii=False, indent=2)
        preview = shown if len(shown) <= 4000 else shown[:4000] + "\n…"
        return PreparedCall(header=f"⚙ {self.name} [MCP: {self.tool.server}]", preview=preview,
                            needs_approval=True, approval_label=self.name, data=args)

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        elicit, server = ctx.env.services.elicit, self.tool.server

        async def asker(message: str, schema: dict[str, Any]
                        ) -> tuple[str, dict[str, Any] | None]:
            """The server's question, to the user (no editor able to answer: declined)."""
            props = schema.get("properties")
            answer = await elicit(p.McpElicitParams(
                session_id=ctx.env.session_id, server=server, message=message,
                requested_schema=schema,
                property_order=list(props) if isinstance(props, dict) else [],
            )) if elicit is not None else None
            return (answer.action, answer.content) if answer is not None else ("decline", None)

        def progress(done: float, total: float | None, message: str | None) -> None:
            """A server's progress notification, on the running call's card."""
            if ctx.emit_output is not None:
                of = f"/{total:g}" if total is not None else ""
                ctx.emit_output(f"[progress {done:g}{of}{': ' + message if message else ''}]\n")

        async def opener(server: str, url: str) -> bool | None:
            """The server's login page, when it asks for more access for this call."""
            authorize = ctx.env.services.authorize
            return await authorize(p.McpAuthorizeParams(
                server=server, url=url, session_id=ctx.env.session_id,
            )) if authorize is not None else None

        result = await self.manager.call_tool(self.name, call.data, asker=asker,
                                              progress=progress, opener=opener,
                                              card=ctx.emit_output)
        return ToolOutput(result.content, is_error=result.is_error,
                          effect_status=result.effect_status)


def tool_search_schema(deferred: int, servers: list[str], max_results: int) -> dict[str, Any]:
    where = f" from {', '.join(servers[:8])}" if servers else ""
    return {"type": "function", "function": {
        "name": TOOL_SEARCH,
        "description": (
            f"Search {deferred} more tools{where} that are not loaded yet. Returns up to "
            f"{max_results} matching tools by name and description and makes them callable "
            "for the rest of this session. Use it when no visible tool fits the task."),
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words."},
        }, "required": ["query"]},
    }}


class ToolSearchHandle:
    """The synthetic ``tool_search``: BM25 over deferred tools, expanding the matches."""

    name = TOOL_SEARCH
    primary_key: str | None = "query"

    def __init__(self, deferred: list[Searchable], max_results: int) -> None:
        self.deferred = deferred
        self.max_results = max_results

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return prepare_error("Error: missing query")
        return PreparedCall(header=f"⚙ tool_search: {query[:200]}", data=query.strip())

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        from turnstoned.net.rerank import POOL, reorder
        from turnstoned.search import BM25Index

        index = BM25Index.from_fields(
            [(t.name, t.tool, t.server, t.description) for t in self.deferred], weights=[3, 3, 1, 1])
        web = ctx.env.services.web
        reranker = web.bm25_reranker() if web is not None else None
        ranked = [self.deferred[i] for i in index.search(
            call.data, k=POOL if reranker is not None else self.max_results)]
        hits = (await reorder(reranker, call.data, ranked,
                              lambda t: f"{t.name}\n{t.description}", "tool search"))
        hits = hits[:self.max_results]
        if not hits:
            return ToolOutput(f"No deferred tools match {call.data!r}. Try other words.",
                              summary="no matches")
        expanded = list(ctx.env.persisted.get(EXPANDED_KEY, []))
        expanded += [t.name for t in hits if t.name not in expanded]
        ctx.env.persist(EXPANDED_KEY, expanded)
        lines = [f"Found {len(hits)} of {len(self.deferred)} deferred tools; they are callable now:"]
        for t in hits:
            desc = " ".join((t.description or "").split())
            where = "built-in" if t.server == BUILT_IN else f"MCP: {t.server}"
            lines.append(f"- {t.name} [{where}]: {desc[:300]}")
        return ToolOutput("\n".join(lines), summary=f"{len(hits)} tools")


class RefusedAgent:
    """``task_agent`` inside a task agent: depth is one."""

    name = "task_agent"
    primary_key: str | None = "prompt"

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        return prepare_error("Error: agents cannot spawn further agents")

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        raise AssertionError("a refused call never runs")
