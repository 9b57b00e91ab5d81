"""A small "everything" MCP server for tests: tools, resources, templates and prompts.

Run over stdio (default) or streamable HTTP on 127.0.0.1 with an ephemeral port:

    python everything.py [--name NAME] [--http [--port N]] [--no-prompts] [--no-resources]

In HTTP mode the server binds port 0 (or N) itself and prints ``PORT <n>`` on stdout
once listening, so a test never races for a free port. ``MARKER_DIR`` in the
environment makes the ``hang`` tool write ``<MARKER_DIR>/hang-started`` and, when its
request is cancelled, ``<MARKER_DIR>/hang-cancelled``; failed tool listings append
to ``<MARKER_DIR>/list-failures``; every start appends the pid to ``<MARKER_DIR>/starts``.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

# A 1x1 transparent PNG.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def _marker_dir() -> Path | None:
    value = os.environ.get("MARKER_DIR")
    return Path(value) if value else None


class FlakyServer(MCPServer):
    """An MCPServer whose next ``fail_lists`` tools/list requests fail."""

    fail_lists = 0

    async def list_tools(self) -> list[types.Tool]:
        if self.fail_lists > 0:
            self.fail_lists -= 1
            marker = _marker_dir()
            if marker is not None:
                with (marker / "list-failures").open("a") as fh:
                    fh.write("1\n")
            raise MCPError(types.INTERNAL_ERROR, "tool index is rebuilding")
        return await super().list_tools()


def build(name: str, *, prompts: bool, resources: bool) -> FlakyServer:
    """Build the server with its tools, and optionally resources and prompts."""
    server = FlakyServer(name, version="1.0.0", log_level="WARNING")
    _add_tools(server)
    if resources:
        _add_resources(server)
    if prompts:
        _add_prompts(server)
    return server


def _add_tools(server: FlakyServer) -> None:
    @server.tool(description="Echo the given text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Return the server's process id.")
    def pid() -> str:
        return str(os.getpid())

    @server.tool(description="Return an environment variable of the server process.")
    def getenv(key: str) -> str:
        return os.environ.get(key, "<unset>")

    @server.tool(description="Return a caption and a 1x1 PNG image.")
    def image() -> types.CallToolResult:
        data = base64.b64encode(PNG_1X1).decode()
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="a tiny image"),
                types.ImageContent(type="image", data=data, mime_type="image/png"),
            ]
        )

    @server.tool(description="Return a text and an embedded resource.")
    def embedded() -> types.CallToolResult:
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="see attached"),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(
                        uri="memo://attached", mime_type="text/plain", text="hello inside"
                    ),
                ),
            ]
        )

    @server.tool(description="Always fails with isError.")
    def fail(reason: str = "it broke") -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"failure: {reason}")], is_error=True
        )

    @server.tool(description="Never returns until cancelled.")
    async def hang() -> str:
        marker = _marker_dir()
        if marker is not None:
            (marker / "hang-started").write_text("1")
        try:
            await anyio.sleep_forever()
        finally:
            if marker is not None:
                with anyio.CancelScope(shield=True):  # noqa: ASYNC100 (the marker is written even when cancelled)
                    (marker / "hang-cancelled").write_text("1")
        return "unreachable"

    @server.tool(description="Register a new tool and announce tools/list_changed.")
    async def add_tool(tool_name: str, ctx: Context) -> str:
        def dynamic(text: str = "") -> str:
            return f"{tool_name}:{text}"

        server.add_tool(dynamic, name=tool_name, description=f"Dynamically added {tool_name}.")
        await ctx.session.send_tool_list_changed()
        return f"added {tool_name}"

    @server.tool(description="Remove a tool and announce tools/list_changed.")
    async def remove_tool(tool_name: str, ctx: Context) -> str:
        server.remove_tool(tool_name)
        await ctx.session.send_tool_list_changed()
        return f"removed {tool_name}"

    @server.tool(
        description="Add a tool, make the next `failures` tool listings fail, announce the change."
    )
    async def add_tool_flaky(tool_name: str, failures: int, ctx: Context) -> str:
        server.add_tool(
            lambda: tool_name, name=tool_name, description="Added while listings were failing."
        )
        server.fail_lists = failures
        await ctx.session.send_tool_list_changed()
        return f"added {tool_name}; next {failures} listings fail"

    @server.tool(description="Return an HTTP request header (HTTP transport only).")
    def header(name: str, ctx: Context) -> str:
        request = ctx.request_context.request
        headers = getattr(request, "headers", None)
        return headers.get(name, "<absent>") if headers is not None else "<no http request>"

    @server.tool(description="Exit the server process immediately.")
    def crash(code: int = 3) -> str:
        os._exit(code)


def _add_resources(server: MCPServer) -> None:
    @server.resource("memo://readme", description="The project readme", mime_type="text/plain")
    def readme() -> str:
        return "Read me first."

    @server.resource("memo://logo", description="A tiny logo", mime_type="image/png")
    def logo() -> bytes:
        return PNG_1X1

    @server.resource(
        "memo://notes/{topic}", description="Notes about a topic", mime_type="text/plain"
    )
    def notes(topic: str) -> str:
        return f"notes on {topic}"


def _add_prompts(server: MCPServer) -> None:
    @server.prompt(description="Review the given code carefully.")
    def review(code: str, language: str = "python") -> str:
        return f"Please review this {language} code:\n{code}"

    @server.prompt(description="Say hello.")
    def greet() -> str:
        return "Hello there."


def _options(server: MCPServer) -> InitializationOptions:
    lowlevel = server._lowlevel_server  # the public API has no listChanged switch
    return lowlevel.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )


async def _serve_stdio(server: MCPServer) -> None:
    async with stdio_server() as (read, write):
        await server._lowlevel_server.run(read, write, _options(server))


async def _serve_http(server: MCPServer, port: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="everything")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-prompts", action="store_true")
    parser.add_argument("--no-resources", action="store_true")
    parser.add_argument(
        "--stderr-noise", action="store_true", help="write a line to stderr at start"
    )
    opts = parser.parse_args()
    marker = _marker_dir()
    if marker is not None:
        with (marker / "starts").open("a") as fh:
            fh.write(f"{os.getpid()}\n")
    if opts.stderr_noise:
        print("everything: starting up (stderr noise)", file=sys.stderr, flush=True)
    server = build(opts.name, prompts=not opts.no_prompts, resources=not opts.no_resources)
    if opts.http:
        anyio.run(_serve_http, server, opts.port)
    else:
        anyio.run(_serve_stdio, server)


if __name__ == "__main__":
    main()
