"""Catalog discovery on a connected session (imports the SDK; loaded lazily).

Only the kinds the server declares are listed. Pagination cursors are
followed up to ``MAX_ITEMS`` entries per list. A -32601 (method not found)
answer to one of the two resource lists leaves that half empty and keeps the
other; any other error fails the whole discovery.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from turnstoned.mcp.models import (
    MCPPrompt,
    MCPPromptArgument,
    MCPResource,
    MCPResourceTemplate,
    MCPTool,
)
from turnstoned.mcp.schema import to_parameters, tool_name

log = logging.getLogger(__name__)

MAX_ITEMS = 1000
MAX_PAGES = 100
KINDS = frozenset({"tools", "resources", "prompts"})


async def discover(
    session: ClientSession, server: str, kinds: frozenset[str], timeout: float
) -> dict[str, Any]:
    """Fields of a ``ServerCatalog`` for ``kinds`` (resources covers templates too)."""
    caps = session.server_capabilities or types.ServerCapabilities()
    out: dict[str, Any] = {}
    with anyio.fail_after(timeout):
        if "tools" in kinds:
            out["tools"] = await _tools(session, server) if caps.tools is not None else ()
        if "resources" in kinds:
            declared = caps.resources is not None
            out["resources"] = await _resources(session, server) if declared else ()
            out["templates"] = await _templates(session, server) if declared else ()
        if "prompts" in kinds:
            out["prompts"] = await _prompts(session, server) if caps.prompts is not None else ()
    return out


async def _pages(
    server: str, what: str, fetch: Callable[[str | None], Awaitable[Any]], attr: str
) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor or len(items) >= MAX_ITEMS:
            break
    if len(items) > MAX_ITEMS or cursor:
        log.warning(
            "MCP server %r lists more than %d %s; keeping the first %d",
            server,
            MAX_ITEMS,
            what,
            MAX_ITEMS,
        )
    return items[:MAX_ITEMS]


def _params(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


async def _tools(session: ClientSession, server: str) -> tuple[MCPTool, ...]:
    raw = await _pages(server, "tools", lambda c: session.list_tools(params=_params(c)), "tools")
    taken: set[str] = set()
    return tuple(_tool(server, t, taken) for t in raw)


def _tool(server: str, tool: types.Tool, taken: set[str]) -> MCPTool:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    )
    return MCPTool(
        name=tool_name(server, tool.name, taken),
        server=server,
        tool=tool.name,
        description=tool.description or tool.title or "",
        input_schema=schema,
        parameters=to_parameters(schema),
        title=tool.title,
        annotations=annotations or None,
    )


async def _resources(session: ClientSession, server: str) -> tuple[MCPResource, ...]:
    raw = await _optional_half(
        server, "resources", lambda c: session.list_resources(params=_params(c)), "resources"
    )
    return tuple(
        MCPResource(
            uri=str(r.uri),
            server=server,
            name=r.name,
            description=r.description or "",
            mime_type=r.mime_type,
        )
        for r in raw
    )


async def _templates(session: ClientSession, server: str) -> tuple[MCPResourceTemplate, ...]:
    raw = await _optional_half(
        server,
        "resource templates",
        lambda c: session.list_resource_templates(params=_params(c)),
        "resource_templates",
    )
    return tuple(
        MCPResourceTemplate(
            uri_template=t.uri_template,
            server=server,
            name=t.name,
            description=t.description or "",
            mime_type=t.mime_type,
        )
        for t in raw
    )


async def _optional_half(
    server: str, what: str, fetch: Callable[[str | None], Awaitable[Any]], attr: str
) -> list[Any]:
    """One of the two resource lists; "method not found" means the server has none."""
    try:
        return await _pages(server, what, fetch, attr)
    except MCPError as exc:
        if exc.code != types.METHOD_NOT_FOUND:
            raise
        log.info("MCP server %r does not implement %s/list; treating it as empty", server, what)
        return []


async def _prompts(session: ClientSession, server: str) -> tuple[MCPPrompt, ...]:
    raw = await _pages(
        server, "prompts", lambda c: session.list_prompts(params=_params(c)), "prompts"
    )
    return tuple(
        MCPPrompt(
            name=f"mcp__{server}__{p.name}",
            server=server,
            prompt=p.name,
            description=p.description or p.title or "",
            arguments=[
                MCPPromptArgument(
                    name=a.name, description=a.description or "", required=bool(a.required)
                )
                for a in p.arguments or ()
            ],
        )
        for p in raw
    )
