"""An MCP server that implements only one of the two resource lists.

    python half_resources.py [--mode templates-only|resources-only|broken]

It declares the ``resources`` capability (and no tools or prompts).
``templates-only`` answers ``resources/list`` with -32601 (method not found)
and lists one template; ``resources-only`` does the reverse; ``broken``
answers ``resources/list`` with -32603 (internal error), which must fail the
connection.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TEMPLATE = types.ResourceTemplate(
    name="row",
    uri_template="db://tables/{table}/rows/{id}",
    description="One row of a table",
    mime_type="text/plain",
)
RESOURCE = types.Resource(
    name="schema", uri="db://schema", description="The database schema", mime_type="text/plain"
)


def build(mode: str) -> Server[Any]:
    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        if mode == "templates-only":
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found")
        if mode == "broken":
            raise MCPError(types.INTERNAL_ERROR, "resource index is corrupt")
        return types.ListResourcesResult(resources=[RESOURCE])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        if mode == "resources-only":
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found")
        return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        text = f"contents of {params.uri}"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=text)]
        )

    return Server(
        "half-resources",
        version="1.0.0",
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def serve(mode: str) -> None:
    server = build(mode)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode", choices=["templates-only", "resources-only", "broken"], default="templates-only"
    )
    anyio.run(serve, parser.parse_args().mode)


if __name__ == "__main__":
    main()
