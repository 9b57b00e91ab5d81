"""web_search: a SearxNG instance, or an MCP server's search tool, chosen by configuration.

``[tools] web_search_backend`` is ``""``/``"searxng"`` (SearxNG at
``searxng_url``) or ``"mcp:<server>:<tool>"``. The tool is offered to the
model only while its backend resolves (``available``). SearxNG results are
put in the reranker's order when one is configured (``rerank_web_search``).
Each search asks the user: the query leaves the machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned.net import searxng
from turnstoned.net.endpoints import EndpointError
from turnstoned.net.rerank import reorder
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext, ToolOutput, prepare_error

if TYPE_CHECKING:
    from turnstoned.mcp.models import MCPTool

DEFAULT_RESULTS, MAX_RESULTS = 5, 20
NO_BACKEND = ("Error: No web search backend available. Set [tools] searxng_url to a SearxNG "
              "instance, or [tools] web_search_backend to an MCP search tool "
              "(\"mcp:<server>:<tool>\").")


class Args(msgspec.Struct, kw_only=True):
    query: str = ""
    max_results: Any = None
    category: Any = None


@dataclass(frozen=True, slots=True)
class Searxng:
    url: str


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    max_results: int
    category: str
    backend: Searxng | MCPTool


def backend(env: SessionEnv) -> Searxng | MCPTool | None:
    """Where a search would go now, or None."""
    web = env.services.web
    if web is None:
        return None
    spec = web.settings.web_search_backend
    if spec in ("", "searxng"):
        return Searxng(web.settings.searxng_url) if web.settings.searxng_url else None
    server, _, tool = spec.removeprefix("mcp:").partition(":")
    manager = env.services.mcp
    tools: list[MCPTool] = list(manager.tools()) if manager is not None else []
    return next((t for t in tools if t.server == server and t.tool == tool), None)


def available(env: SessionEnv) -> bool:
    """Offered to the model only when a backend resolves."""
    return backend(env) is not None


def _count(value: Any) -> int:
    try:
        count = int(value) if value not in (None, "") and not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        count = 0
    return max(1, min(MAX_RESULTS, count or DEFAULT_RESULTS))


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    query = args.query.strip()
    if not query:
        return prepare_error("Error: no query provided")
    found = backend(ctx.env)
    if found is None:
        return prepare_error(NO_BACKEND, header="✗ web_search: no backend")
    category = args.category if args.category in searxng.CATEGORIES else "general"
    search = Search(query, _count(args.max_results), category, found)
    where = "SearxNG" if isinstance(found, Searxng) else f"MCP {found.server}/{found.tool}"
    return PreparedCall(
        header=f"⚙ web_search: {query[:120]}",
        preview=f"Query: {query}\nCategory: {category}; up to {search.max_results} results; "
                f"sent to {where}",
        needs_approval=True, approval_label="web_search", data=search)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    search: Search = call.data
    if not isinstance(search.backend, Searxng):
        return await _mcp(search, ctx)
    web = ctx.env.services.web
    assert web is not None
    try:
        data = await searxng.search(web.endpoints, search.backend.url, search.query,
                                    search.category, web.settings.searxng_engines,
                                    web.settings.timeout)
    except EndpointError as exc:
        return ToolOutput(f"Error: web search failed: {exc}", is_error=True)
    results = searxng.results(data)
    if web.settings.rerank_web_search:
        results = await reorder(web.reranker, search.query, results, searxng.document,
                                "web search results")
    text = searxng.render(data, results, search.query, search.max_results)
    return ToolOutput(text, summary=f"{min(len(results), search.max_results)} results")


async def _mcp(search: Search, ctx: ToolContext) -> ToolOutput:
    tool = search.backend
    assert not isinstance(tool, Searxng)
    manager = ctx.env.services.need_mcp()
    declared = set((tool.input_schema or {}).get("properties") or ())
    arguments: dict[str, Any] = {"query": search.query}
    if "max_results" in declared:
        arguments["max_results"] = search.max_results
    if "category" in declared:
        arguments["category"] = search.category
    result = await manager.call_tool(tool.name, arguments)
    return ToolOutput(result.content, is_error=result.is_error, effect_status=result.effect_status)
