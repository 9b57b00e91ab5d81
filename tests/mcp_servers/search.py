"""An MCP server with one web-search tool, for the web_search MCP backend (stdio)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("find", version="1.0.0", log_level="WARNING")


@server.tool()
def search(query: str, max_results: int = 5) -> str:
    """Search the web."""
    return "\n".join(f"{n}. result {n} for {query!r}" for n in range(1, max_results + 1))


if __name__ == "__main__":
    server.run()
