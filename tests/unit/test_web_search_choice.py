"""Which backend web_search uses, and the arguments an MCP search tool is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.tooling import prepare, tool_ctx
from turnstoned import config
from turnstoned.mcp.models import MCPTool
from turnstoned.net.services import WebServices, WebSettings
from turnstoned.tools import web_search
from turnstoned.tools.web_search import Searxng, arguments, automatic, choose, is_web_search


def tool(server: str, name: str, description: str = "",
         schema: dict[str, Any] | None = None) -> MCPTool:
    return MCPTool(name=f"mcp__{server}__{name}", server=server, tool=name,
                   description=description, input_schema=schema or {})


@pytest.mark.parametrize("server,name", [
    ("brave", "brave_web_search"), ("tavily", "tavily-search"), ("tavily", "tavily_search"),
    ("exa", "web_search_exa"), ("kagi", "kagi_search_fetch"), ("ddg", "duckduckgo_search"),
    ("searxng", "searxng_web_search"), ("perplexity", "perplexity_search"),
    ("tools", "web_search"), ("tools", "Google-Web-Search"), ("x", "websearch"),
])
def test_search_tools_are_known_by_their_names(server: str, name: str) -> None:
    assert is_web_search(tool(server, name))


@pytest.mark.parametrize("server,description", [
    ("duckduckgo", ""), ("brave-search", ""), ("my_web_tools", ""),
    ("files", "Search the web with DuckDuckGo."), ("tools", "Searches the Internet."),
    ("tools", "Find websites about a topic."),
])
def test_a_generic_name_is_a_web_search_when_its_server_or_description_says_web(
        server: str, description: str) -> None:
    assert is_web_search(tool(server, "search", description))


@pytest.mark.parametrize("server,name,description", [
    ("files", "search", "Search the files of the project folder by name."),
    ("github", "search", "Search code, issues and pull requests."),
    ("webhooks", "search", "Search the delivered events."),  # "webhooks" is not the web
    ("fs", "search_files", "Search files."),
    ("papers", "research", "Research a topic in the web archive."),
    ("web", "fetch", "Fetch a web page."),
    ("websocket", "websocket_send", "Send a frame."),
])
def test_other_tools_are_not_web_searches(server: str, name: str, description: str) -> None:
    assert not is_web_search(tool(server, name, description))


def test_the_first_candidate_by_server_then_tool_name_wins() -> None:
    tools = [tool("zeta", "brave_web_search"), tool("files", "search", "Search files."),
             tool("alpha", "web_search_exa"), tool("alpha", "tavily-search"),
             tool("beta", "search", "Search the web.")]
    assert automatic(tools) == tools[3]
    assert automatic(reversed(tools)) == tools[3]
    assert automatic(tools[1:2]) is None and automatic([]) is None


def test_choose_explicit_settings_win_over_the_automatic_choice() -> None:
    brave, find = tool("brave", "brave_web_search"), tool("find", "lookup")
    tools = [brave, find]
    auto = choose(WebSettings(), tools)
    assert (auto.backend, auto.automatic) == (brave, True)
    assert auto.describe() == "MCP brave:brave_web_search (automatic)"

    off = choose(WebSettings(web_search_backend="none", searxng_url="http://s.test"), tools)
    assert off.backend is None and off.describe().startswith("none: turned off")

    searx = choose(WebSettings(searxng_url="http://s.test"), tools)
    assert searx.backend == Searxng("http://s.test") and not searx.automatic
    assert searx.describe() == "searxng at http://s.test"
    unset = choose(WebSettings(web_search_backend="searxng"), tools)
    assert unset.backend is None and "searxng_url is not set" in unset.describe()

    named = choose(WebSettings(web_search_backend="mcp:find:lookup"), tools)
    assert (named.backend, named.automatic) == (find, False)
    assert named.describe() == "MCP find:lookup"
    # A named tool that is not connected is not replaced by another.
    missing = choose(WebSettings(web_search_backend="mcp:kagi:kagi_search_fetch"), tools)
    assert missing.backend is None and "'kagi' is not connected" in missing.describe()

    nothing = choose(WebSettings(), [find])
    assert nothing.backend is None
    assert nothing.describe() == f"none: {web_search.HOW_TO}"
    for option in ("searxng_url", "connect a search MCP server", '"mcp:<server>:<tool>"'):
        assert option in nothing.describe() and option in web_search.NO_BACKEND


def test_prepare_says_which_is_missing(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    ctx.env.services.web = WebServices(settings=WebSettings())
    assert prepare(web_search, ctx, query="x").error == web_search.NO_BACKEND
    ctx.env.services.web = WebServices(settings=WebSettings(web_search_backend="none"))
    assert prepare(web_search, ctx, query="x").error == web_search.TURNED_OFF
    assert not web_search.available(ctx.env)


def props(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize("schema,sent", [
    ({}, {"query": "rust"}),
    (props(query={"type": "string"}, max_results={"type": "integer"}),
     {"query": "rust", "max_results": 7}),
    (props(q={"type": "string"}, count={"type": "integer", "maximum": 5}),
     {"q": "rust", "count": 5}),
    (props(search_query={"type": "string"}, num_results={"anyOf": [{"type": "integer"},
                                                                   {"type": "null"}]}),
     {"search_query": "rust", "num_results": 7}),
    (props(query={"type": "string"}, limit={"type": ["integer", "null"], "minimum": 10}),
     {"query": "rust", "limit": 10}),
    # A "count" that is not a number is left out; the next name the schema has is used.
    (props(query={"type": "string"}, count={"type": "string"}, limit={}),
     {"query": "rust", "limit": 7}),
    ({**props(keywords={"type": "string"}, region={"type": "string"}), "required": ["keywords"]},
     {"keywords": "rust"}),
    (props(query={"type": "string"}, category={"type": "string"}),
     {"query": "rust", "category": "it"}),
])
def test_arguments_follow_the_input_schema(schema: dict[str, Any], sent: dict[str, Any]) -> None:
    assert arguments(tool("s", "web_search", schema=schema), "rust", 7, "it") == sent


def test_none_is_a_valid_setting(isolated_home: Path) -> None:
    write_config(isolated_home, '[tools]\nweb_search_backend = "none"\n')
    assert config.load().tools.web_search_backend == "none"
    write_config(isolated_home, '[tools]\nweb_search_backend = "off"\n')
    with pytest.raises(config.ConfigError, match="web_search_backend"):
        config.load()
