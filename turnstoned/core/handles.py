"""Every tool-handle type of the engine, besides a built-in tool module's.

What the pipeline calls: an MCP server's tool, the synthetic ``tool_search``
over deferred MCP tools, and ``task_agent`` refused inside a task agent (a
built-in tool module's handle is ``tools.ToolSpec.handle``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.mcp.models import MCPTool

EXPANDED_KEY = "expanded_tools"
TOOL_SEARCH = "tool_search"


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
        result = await self.manager.call_tool(self.name, call.data)
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
    """The synthetic ``tool_search``: BM25 over deferred MCP tools, expanding the matches."""

    name = TOOL_SEARCH
    primary_key: str | None = "query"

    def __init__(self, deferred: list[MCPTool], max_results: int) -> None:
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
            lines.append(f"- {t.name} [MCP: {t.server}]: {desc[:300]}")
        return ToolOutput("\n".join(lines), summary=f"{len(hits)} tools")


class RefusedAgent:
    """``task_agent`` inside a task agent: depth is one."""

    name = "task_agent"
    primary_key: str | None = "prompt"

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        return prepare_error("Error: agents cannot spawn further agents")

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        raise AssertionError("a refused call never runs")
