"""The merged, immutable view of every server's catalog, with lookup tables.

A new ``CatalogIndex`` is built on every change and swapped in whole, so a
reader always sees one consistent snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from turnstoned.mcp.models import (
    MCPPrompt,
    MCPResource,
    MCPResourceTemplate,
    MCPTool,
    ServerCatalog,
)

log = logging.getLogger(__name__)


class CatalogIndex:
    """Merged tools/resources/templates/prompts; earlier servers win clashes."""

    def __init__(self) -> None:
        self.tools: list[MCPTool] = []
        self.resources: list[MCPResource] = []
        self.templates: list[MCPResourceTemplate] = []
        self.prompts: list[MCPPrompt] = []
        self.tool_by_name: dict[str, MCPTool] = {}
        self.prompt_by_name: dict[str, MCPPrompt] = {}
        self.resource_server: dict[str, str] = {}
        # Every tool name ever offered -> its server, so a call to a tool whose
        # server is away gets "not connected" rather than "unknown".
        self.known_tools: dict[str, str] = {}
        self._warned: set[str] = set()  # clashes already logged (builds repeat them)

    @classmethod
    def build(cls, catalogs: Sequence[ServerCatalog], previous: CatalogIndex) -> CatalogIndex:
        index = cls()
        index.known_tools = dict(previous.known_tools)
        index._warned = previous._warned
        for cat in catalogs:
            index._add_tools(cat.tools)
            index._add_resources(cat.resources)
            index._add_templates(cat.templates)
            index._add_prompts(cat.prompts)
        return index

    def same_as(self, other: CatalogIndex) -> bool:
        return (
            self.tools == other.tools
            and self.resources == other.resources
            and self.templates == other.templates
            and self.prompts == other.prompts
        )

    def server_for_uri(self, uri: str) -> str | None:
        """The server of an exact resource URI, else of the longest matching template prefix."""
        server = self.resource_server.get(uri)
        if server is not None:
            return server
        best: MCPResourceTemplate | None = None
        for template in self.templates:
            prefix = template.prefix
            if (
                prefix
                and uri.startswith(prefix)
                and (best is None or len(prefix) > len(best.prefix))
            ):
                best = template
        return best.server if best is not None else None

    def _add_tools(self, tools: Sequence[MCPTool]) -> None:
        for tool in tools:
            if tool.name in self.tool_by_name:
                self._clash(f"MCP tool {tool.name!r} from {tool.server!r} is a duplicate")
                continue
            self.tools.append(tool)
            self.tool_by_name[tool.name] = tool
            self.known_tools[tool.name] = tool.server

    def _add_resources(self, resources: Sequence[MCPResource]) -> None:
        for res in resources:
            if res.uri in self.resource_server:
                self._clash(f"MCP resource {res.uri!r} from {res.server!r} is a duplicate")
                continue
            self.resources.append(res)
            self.resource_server[res.uri] = res.server

    def _add_templates(self, templates: Sequence[MCPResourceTemplate]) -> None:
        seen = {t.uri_template for t in self.templates}
        for template in templates:
            if template.uri_template in seen:
                uri, server = template.uri_template, template.server
                self._clash(
                    f"MCP resource template {uri!r} from {server!r} is a duplicate; skipped"
                )
                continue
            seen.add(template.uri_template)
            self.templates.append(template)

    def _add_prompts(self, prompts: Sequence[MCPPrompt]) -> None:
        for prompt in prompts:
            if prompt.name in self.prompt_by_name:
                self._clash(f"MCP prompt {prompt.name!r} is a duplicate; using the earlier one")
                continue
            self.prompts.append(prompt)
            self.prompt_by_name[prompt.name] = prompt

    def _clash(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)
