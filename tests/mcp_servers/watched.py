"""An MCP server whose one resource changes, and which offers subscriptions to it.

    python watched.py        (stdio)

``notes://today`` reads "version N"; the ``bump`` tool makes it N+1 and tells every
session subscribed to it (``notifications/resources/updated``).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

URI = "notes://today"


def build() -> Server[Any]:
    state: dict[str, Any] = {"version": 1, "subscribers": []}

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            name="today", uri=URI, description="Today's notes", mime_type="text/plain")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=params.uri, text=f"version {state['version']}")])

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        state["subscribers"].append(ctx.session)
        return types.EmptyResult()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name="bump", description="Change today's notes.",
            input_schema={"type": "object", "properties": {}})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        state["version"] += 1
        for session in state["subscribers"]:
            await session.send_resource_updated(URI)
        return types.CallToolResult(content=[types.TextContent(
            type="text", text=f"now version {state['version']}")])

    return Server("watched", version="1.0.0", on_list_resources=list_resources,
                  on_read_resource=read_resource, on_subscribe_resource=subscribe,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
