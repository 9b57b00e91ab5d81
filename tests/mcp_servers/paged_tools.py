"""An MCP server that lists its tools in pages (cursor pagination).

    python paged_tools.py [--count 25] [--page 10]

Tools are ``t00``..``tNN`` (each echoes its name) plus one whose name needs
sanitizing for function-calling APIs (``weird.name/with spaces``) and whose
input schema carries ``$schema`` and a top-level ``anyOf``.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

ODD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"q": {"type": "string", "$schema": "x"}},
    "required": ["q", "ghost"],
    "anyOf": [{"required": ["q"]}],
}


def build(count: int, page: int) -> Server[Any]:
    tools = [
        types.Tool(name=f"t{i:02d}", description=f"tool {i}", input_schema={"type": "object"})
        for i in range(count)
    ]
    tools.append(
        types.Tool(name="weird.name/with spaces", description="odd", input_schema=ODD_SCHEMA)
    )

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page
        cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"called {params.name}")]
        )

    return Server("paged", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(count: int, page: int) -> None:
    server = build(count, page)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=25)
    parser.add_argument("--page", type=int, default=10)
    opts = parser.parse_args()
    anyio.run(serve, opts.count, opts.page)


if __name__ == "__main__":
    main()
