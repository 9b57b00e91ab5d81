"""web_search: a SearxNG instance, or an MCP server's search tool.

``[tools] web_search_backend`` chooses: ``"searxng"`` (SearxNG at ``searxng_url``),
``"mcp:<server>:<tool>"`` (that MCP tool), ``"none"`` (no web search), or ``""`` (the
default): SearxNG when ``searxng_url`` is set, else the first connected MCP tool that
is a web search (``automatic``: by its name, or for a generic name like ``search`` by
its server's name or its description; servers, then tools, in name order). An explicit
setting always wins, also while the tool it names is not connected. The tool is offered
to the model only while its backend resolves (``available``). The arguments an MCP tool
gets follow its input schema (``arguments``). SearxNG results are put in the reranker's
order when one is configured (``rerank_web_search``). Each search asks the user: the
query leaves the machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned.net import searxng
from turnstoned.net.endpoints import EndpointError
from turnstoned.net.rerank import reorder
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext, ToolOutput, prepare_error

if TYPE_CHECKING:
    from turnstoned.mcp.models import MCPTool
    from turnstoned.net.services import WebSettings

DEFAULT_RESULTS, MAX_RESULTS = 5, 20
HOW_TO = ("set [tools] searxng_url to a SearxNG instance, connect a search MCP server "
          "(Brave, Tavily, Exa, Kagi, DuckDuckGo, ...), or set [tools] web_search_backend "
          "to an MCP search tool (\"mcp:<server>:<tool>\")")
NO_BACKEND = f"Error: No web search backend available: {HOW_TO}."
TURNED_OFF = "Error: web search is turned off ([tools] web_search_backend = \"none\")."

# Tool names (lower case, "-" read as "_") that are web searches wherever they are served.
# Any name with both "web" and "search" in it is one too.
SEARCH_TOOLS = frozenset({
    "brave_web_search", "tavily_search", "web_search_exa", "exa_search", "kagi_search_fetch",
    "duckduckgo_search", "ddg_search", "searxng_web_search", "perplexity_search",
    "google_search", "bing_search", "serper_search", "internet_search", "web_search",
})
# Names that say "search" but not what is searched: a web search only when the server's
# name or the tool's description says web.
GENERIC_TOOLS = frozenset({"search", "find"})
# Words (in a server's name) of search engines and of the web itself.
WEB_SERVERS = frozenset({
    "web", "websearch", "internet", "brave", "tavily", "exa", "kagi", "duckduckgo", "ddg",
    "searxng", "searx", "perplexity", "google", "bing", "serper", "serpapi", "jina",
})
_WEB_WORDS = re.compile(r"\b(?:web|internet|websites?|webpages?)\b", re.IGNORECASE)
# An MCP tool's argument for the query and for the number of results: the first its
# input schema declares.
QUERY_ARGS = ("query", "q", "search_query", "searchQuery", "search_term", "searchTerm")
COUNT_ARGS = ("count", "max_results", "num_results", "limit", "maxResults", "numResults")


class Args(msgspec.Struct, kw_only=True):
    query: str = ""
    max_results: Any = None
    category: Any = None


@dataclass(frozen=True, slots=True)
class Searxng:
    url: str


@dataclass(frozen=True, slots=True)
class Choice:
    """Where a search goes (None: nowhere), whether it was chosen automatically, and the
    sentence a person reads about it (doctor, health)."""

    backend: Searxng | MCPTool | None
    automatic: bool = False
    reason: str = ""

    def describe(self) -> str:
        found = self.backend
        if isinstance(found, Searxng):
            return f"searxng at {found.url}"
        if found is not None:
            return f"MCP {found.server}:{found.tool}" + (" (automatic)" if self.automatic else "")
        return f"none: {self.reason or HOW_TO}"


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    max_results: int
    category: str
    backend: Searxng | MCPTool


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def is_web_search(tool: MCPTool) -> bool:
    """Whether an MCP tool searches the web, by its name (and for a generic name, by its
    server's name or its description)."""
    name = tool.tool.lower().replace("-", "_")
    if name in SEARCH_TOOLS or ("web" in name and "search" in name):
        return True
    if name not in GENERIC_TOOLS:
        return False
    return (any(w in WEB_SERVERS for w in _words(tool.server))
            or bool(_WEB_WORDS.search(f"{tool.title or ''} {tool.description}")))


def automatic(tools: Iterable[MCPTool]) -> MCPTool | None:
    """The first web search among connected MCP tools, servers then tools in name order."""
    found = sorted((t for t in tools if is_web_search(t)), key=lambda t: (t.server, t.tool))
    return found[0] if found else None


def choose(settings: WebSettings, tools: Iterable[MCPTool]) -> Choice:
    """The backend ``settings`` and the connected MCP ``tools`` give."""
    spec = settings.web_search_backend
    url = settings.searxng_url
    if spec == "none":
        return Choice(None, reason="turned off ([tools] web_search_backend = \"none\")")
    if spec == "searxng":
        return Choice(Searxng(url) if url else None, reason=(
            "[tools] web_search_backend = \"searxng\", but searxng_url is not set"))
    if spec.startswith("mcp:"):
        server, _, name = spec.removeprefix("mcp:").partition(":")
        named = next((t for t in tools if t.server == server and t.tool == name), None)
        return Choice(named, reason=f"[tools] web_search_backend = \"{spec}\": MCP server "
                                    f"{server!r} is not connected or has no tool {name!r}")
    if url:
        return Choice(Searxng(url))
    found = automatic(tools)
    return Choice(found, automatic=found is not None)


def selection(env: SessionEnv) -> Choice:
    """The backend a search in this session would use now."""
    web = env.services.web
    if web is None:
        return Choice(None, reason="the web tools are not running here")
    manager = env.services.mcp
    return choose(web.settings, manager.tools() if manager is not None else ())


def backend(env: SessionEnv) -> Searxng | MCPTool | None:
    """Where a search would go now, or None."""
    return selection(env).backend


def available(env: SessionEnv) -> bool:
    """Offered to the model only when a backend resolves."""
    return backend(env) is not None


def _count(value: Any) -> int:
    try:
        count = int(value) if value not in (None, "") and not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        count = 0
    return max(1, min(MAX_RESULTS, count or DEFAULT_RESULTS))


def _types(prop: Any) -> set[str]:
    """The JSON types a property's schema allows (``type``, or the branches of anyOf/oneOf);
    empty when it does not say."""
    if not isinstance(prop, dict):
        return set()
    kind = prop.get("type")
    found = {kind} if isinstance(kind, str) else {
        k for k in (kind if isinstance(kind, list) else ()) if isinstance(k, str)}
    for branch in (*(prop.get("anyOf") or ()), *(prop.get("oneOf") or ())):
        found |= _types(branch)
    return found


def _bounded(count: int, prop: dict[str, Any]) -> int:
    """``count`` within the property's ``minimum``/``maximum``, when it has them."""
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(high, int | float) and not isinstance(high, bool) and count > high:
        count = int(high)
    if isinstance(low, int | float) and not isinstance(low, bool) and count < low:
        count = int(low)
    return count


def arguments(tool: MCPTool, query: str, count: int, category: str) -> dict[str, Any]:
    """The arguments for an MCP search tool, named as its input schema names them: the query
    (``QUERY_ARGS``; else its one required string argument; else ``query``), the number of
    results (``COUNT_ARGS``, when declared as a number or untyped) and ``category``."""
    schema = tool.input_schema or {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    key = next((k for k in QUERY_ARGS if k in props), None)
    if key is None:
        required = [k for k in schema.get("required") or () if "string" in _types(props.get(k))]
        key = required[0] if len(required) == 1 else "query"
    out: dict[str, Any] = {key: query}
    for name in COUNT_ARGS:
        prop = props.get(name)
        if name in props and (not _types(prop) or _types(prop) & {"integer", "number"}):
            out[name] = _bounded(count, prop if isinstance(prop, dict) else {})
            break
    if "category" in props:
        out["category"] = category
    return out


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    query = args.query.strip()
    if not query:
        return prepare_error("Error: no query provided")
    chosen = selection(ctx.env)
    found = chosen.backend
    if found is None:
        off = ctx.env.services.web is not None and (
            ctx.env.services.web.settings.web_search_backend == "none")
        return prepare_error(TURNED_OFF if off else NO_BACKEND, header="✗ web_search: no backend")
    category = args.category if args.category in searxng.CATEGORIES else "general"
    search = Search(query, _count(args.max_results), category, found)
    where = "SearxNG" if isinstance(found, Searxng) else f"MCP {found.server}/{found.tool}"
    if chosen.automatic:
        where += " (chosen automatically)"
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
    sent = arguments(tool, search.query, search.max_results, search.category)
    result = await manager.call_tool(tool.name, sent)
    return ToolOutput(result.content, is_error=result.is_error, effect_status=result.effect_status)
