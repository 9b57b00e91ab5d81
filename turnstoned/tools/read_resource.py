"""read_resource: read an MCP resource through the daemon's MCP manager."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import msgspec

from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager


class Args(msgspec.Struct):
    uri: str = ""


def approval_label(uri: str) -> str:
    """``mcp_resource__`` + the URI with its path decoded, ``..`` collapsed and re-quoted."""
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if path:
        lead = path.startswith("/")
        path = posixpath.normpath(path)
        path = ("/" + path.lstrip("/")) if lead else path.lstrip("/")
    return "mcp_resource__" + urlunsplit(parts._replace(path=quote(path)))


def _known(uri: str, manager: MCPManager) -> bool:
    if any(r.uri == uri for r in manager.resources()):
        return True
    return any(t.prefix and uri.startswith(t.prefix) for t in manager.resource_templates())


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    uri = args.uri.strip()
    if not uri:
        return prepare_error("Error: missing uri")
    manager = ctx.env.services.mcp
    if manager is None:
        return prepare_error("Error: no MCP servers are configured")
    if not _known(uri, manager):
        listed = [r.uri for r in manager.resources()][:20]
        return prepare_error(f"Error: no MCP resource or template matches {uri!r}. "
                             f"Known resources: {', '.join(listed) or '(none)'}")
    return PreparedCall(header=f"⚙ read_resource: {uri}", preview=uri, needs_approval=True,
                        approval_label=approval_label(uri), data=uri)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    uri, env = call.data, ctx.env
    watched: set[str] = env.state.setdefault("read_resource", set())  # told once per change

    def changed() -> None:
        """The server says the resource changed since: the model hears it at the next seam."""
        watched.discard(uri)
        env.notice("mcpResource/updated", f"The MCP resource {uri} changed since it was "
                   "read; read it again for its current content.", {"uri": uri})

    result = await env.services.need_mcp().read_resource(
        uri, on_update=None if uri in watched else changed)
    if not result.is_error:
        watched.add(uri)
    return ToolOutput(result.content, is_error=result.is_error, effect_status=result.effect_status)
