"""Catalog entries, statuses and results handed out by ``MCPManager``.

All are immutable msgspec Structs (free to share between sessions and to
encode). Nothing here imports the MCP SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec

ServerState = Literal["connecting", "connected", "failed", "disabled", "untrusted"]


class ConnectError(Exception):
    """A server could not be connected or its catalog listed; the message is for the user."""


class LoginError(ConnectError):
    """A login to a server could not be done or did not finish; the message is for the user."""


LOGIN_TIMEOUT = 300.0  # seconds a person has to finish a login in the browser

# Shows the user the login page ``url`` of ``server``: True the browser opened it, False the
# user was shown the address only, None nobody could be asked.
Opener = Callable[[str, str], Awaitable[bool | None]]


class MCPTool(msgspec.Struct, kw_only=True, frozen=True):
    """A server's tool as the model sees it.

    ``name`` is ``mcp__{server}__{tool}`` made safe for function-calling APIs
    (only ``[A-Za-z0-9_-]``, at most 64 characters, unique); ``tool`` is the
    server's own name, used on the wire. ``parameters`` is ``input_schema``
    converted to function-calling form (see ``schema.to_parameters``).
    """

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    title: str | None = None
    annotations: dict[str, Any] | None = None  # readOnlyHint, destructiveHint, ... as sent

    def openai_schema(self) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters}}``."""
        function = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        return {"type": "function", "function": function}


class MCPResource(msgspec.Struct, kw_only=True, frozen=True):
    """A concrete resource (fixed URI)."""

    uri: str
    server: str
    name: str = ""
    description: str = ""
    mime_type: str | None = None


class MCPResourceTemplate(msgspec.Struct, kw_only=True, frozen=True):
    """A URI template (RFC 6570) the model fills in before ``read_resource``."""

    uri_template: str
    server: str
    name: str = ""
    description: str = ""
    mime_type: str | None = None

    @property
    def prefix(self) -> str:
        """The template up to its first ``{``: what a concrete URI must start with."""
        return self.uri_template.split("{", 1)[0]


class MCPPromptArgument(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    description: str = ""
    required: bool = False


class MCPPrompt(msgspec.Struct, kw_only=True, frozen=True):
    """A prompt; ``name`` is ``mcp__{server}__{prompt}``, ``prompt`` the server's own name."""

    name: str
    server: str
    prompt: str
    description: str = ""
    arguments: list[MCPPromptArgument] = []


class ServerStatus(msgspec.Struct, kw_only=True, frozen=True):
    """One server's state for ``mcpServer/list`` and ``mcpServer/statusChanged``.

    A whole-file configuration problem appears as ``name == ""``, status
    ``disabled``, with the file in ``origin``.
    """

    name: str
    status: ServerState
    origin: str
    transport: Literal["stdio", "http"] | None = None
    tools: int = 0
    resources: int = 0  # concrete resources plus templates
    prompts: int = 0
    error: str | None = None
    server_version: str | None = None  # serverInfo "name version" once connected
    protocol_version: str | None = None
    needs_auth: bool = False  # it asks for a login (``login`` opens the browser)
    logged_in: bool = False  # OAuth tokens for it are stored (``logout`` forgets them)


class MCPCallResult(msgspec.Struct, kw_only=True, frozen=True):
    """What a tool call, resource read or prompt expansion produced, ready for the model.

    ``content`` is text, or OpenAI content parts (``text`` and ``image_url`` with a
    data URI) when images are present. ``effect_status`` is ``"unknown"`` when the
    call may or may not have taken effect (timeout, connection lost mid-call).
    """

    content: str | list[dict[str, Any]]
    is_error: bool = False
    effect_status: Literal["unknown"] | None = None


class CatalogChange(msgspec.Struct, kw_only=True, frozen=True):
    """What one refresh changed for one server (names as the model sees them)."""

    server: str
    status: ServerState
    added: list[str] = []  # tool names
    removed: list[str] = []
    added_resources: list[str] = []  # URIs and URI templates
    removed_resources: list[str] = []
    added_prompts: list[str] = []
    removed_prompts: list[str] = []
    error: str | None = None

    @property
    def changed(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.added_resources
            or self.removed_resources
            or self.added_prompts
            or self.removed_prompts
        )


class ServerCatalog(msgspec.Struct, kw_only=True, frozen=True):
    """Everything one server offers, as of its last successful discovery."""

    tools: tuple[MCPTool, ...] = ()
    resources: tuple[MCPResource, ...] = ()
    templates: tuple[MCPResourceTemplate, ...] = ()
    prompts: tuple[MCPPrompt, ...] = ()


def diff(server: str, status: ServerState, old: ServerCatalog, new: ServerCatalog) -> CatalogChange:
    """The +/- change between two catalogs of one server."""

    def delta(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
        b, a = set(before), set(after)
        return [n for n in after if n not in b], [n for n in before if n not in a]

    tools = delta([t.name for t in old.tools], [t.name for t in new.tools])
    res = delta(_resource_keys(old), _resource_keys(new))
    prompts = delta([p.name for p in old.prompts], [p.name for p in new.prompts])
    return CatalogChange(
        server=server,
        status=status,
        added=tools[0],
        removed=tools[1],
        added_resources=res[0],
        removed_resources=res[1],
        added_prompts=prompts[0],
        removed_prompts=prompts[1],
    )


def _resource_keys(catalog: ServerCatalog) -> list[str]:
    return [r.uri for r in catalog.resources] + [t.uri_template for t in catalog.templates]
