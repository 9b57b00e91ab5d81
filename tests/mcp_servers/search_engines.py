"""Search tools as well-known search MCP servers name them, with canned results (stdio).

``search_engines.py brave``: ``brave_web_search(query, count, offset)``, as Brave Search's
server has it; ``tavily``: ``tavily-search(query, max_results, search_depth)``; ``files``: a
generic ``search(query)`` that searches files, not the web. Each call's arguments are in
its answer, so a test sees what was sent.
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer

FLAVOUR = sys.argv[1] if len(sys.argv) > 1 else "brave"
server = MCPServer(FLAVOUR, version="1.0.0", log_level="WARNING")


def _results(engine: str, query: str, count: int, sent: dict[str, object]) -> str:
    lines = [f"{n}. {engine} result {n} for {query!r}: https://{engine}.test/{n}"
             for n in range(1, count + 1)]
    return "\n".join([*lines, f"(arguments: {json.dumps(sent, sort_keys=True)})"])


def brave_web_search(query: str, count: int = 10, offset: int = 0) -> str:
    return _results("brave", query, count, {"query": query, "count": count, "offset": offset})


def tavily_search(query: str, max_results: int = 5, search_depth: str = "basic") -> str:
    return _results("tavily", query, max_results,
                    {"query": query, "max_results": max_results, "search_depth": search_depth})


def search(query: str) -> str:
    return f"files matching {query!r}: notes.txt"


if FLAVOUR == "brave":
    server.add_tool(brave_web_search, name="brave_web_search",
                    description="Performs a web search using the Brave Search API.")
elif FLAVOUR == "tavily":
    server.add_tool(tavily_search, name="tavily-search",
                    description="A search engine optimised for LLMs and AI agents.")
else:
    server.add_tool(search, description="Search the files of the project folder by name.")


if __name__ == "__main__":
    server.run()
