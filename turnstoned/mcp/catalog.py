"""System-message catalogs of MCP resources and prompts, and prompts as skills.

``catalog_text`` renders the XML-delimited blocks the model reads::

    <mcp-resources>
      memo://readme  The project readme

    Resource templates (construct a URI and use read_resource):
      memo://notes/{topic}  Notes about a topic
    </mcp-resources>
    Use read_resource(uri='...') to access the resources listed above.

    <mcp-prompts>
      mcp__docs__review(code, language)  Review the given code
    </mcp-prompts>
    Use use_prompt(name='...', arguments={...}) to invoke the prompts listed above.

Up to 50 resources, 20 templates and 30 prompts; descriptions are cut to 100
characters and kept on one line; URIs and descriptions are XML-escaped.
"""

from __future__ import annotations

import html
from typing import Protocol

from turnstoned.mcp.models import MCPPrompt, MCPResource, MCPResourceTemplate

MAX_RESOURCES = 50
MAX_TEMPLATES = 20
MAX_PROMPTS = 30
MAX_DESCRIPTION = 100


class CatalogSource(Protocol):
    def resources(self) -> list[MCPResource]: ...
    def resource_templates(self) -> list[MCPResourceTemplate]: ...
    def prompts(self) -> list[MCPPrompt]: ...


def catalog_text(manager: CatalogSource, *, resources: bool = True, prompts: bool = True) -> str:
    """The resource and prompt blocks (each only when it has entries and is wanted)."""
    blocks = []
    if resources:
        blocks.append(resources_block(manager.resources(), manager.resource_templates()))
    if prompts:
        blocks.append(prompts_block(manager.prompts()))
    return "\n\n".join(b for b in blocks if b)


def resources_block(resources: list[MCPResource], templates: list[MCPResourceTemplate]) -> str:
    if not resources and not templates:
        return ""
    lines = ["<mcp-resources>"]
    lines += [_line(_esc(r.uri), r.description) for r in resources[:MAX_RESOURCES]]
    lines += _more(len(resources), MAX_RESOURCES, "resources")
    if templates:
        if resources:
            lines.append("")
        lines.append("Resource templates (construct a URI and use read_resource):")
        lines += [_line(_esc(t.uri_template), t.description) for t in templates[:MAX_TEMPLATES]]
        lines += _more(len(templates), MAX_TEMPLATES, "templates")
    lines.append("</mcp-resources>")
    lines.append("Use read_resource(uri='...') to access the resources listed above.")
    return "\n".join(lines)


def prompts_block(prompts: list[MCPPrompt]) -> str:
    if not prompts:
        return ""
    lines = ["<mcp-prompts>"]
    for prompt in prompts[:MAX_PROMPTS]:
        args = ", ".join(a.name for a in prompt.arguments)
        lines.append(_line(f"{prompt.name}({args})", prompt.description))
    lines += _more(len(prompts), MAX_PROMPTS, "prompts")
    lines.append("</mcp-prompts>")
    lines.append("Use use_prompt(name='...', arguments={...}) to invoke the prompts listed above.")
    return "\n".join(lines)


def prompt_skill(prompt: MCPPrompt) -> dict[str, object]:
    """A read-only skill made from an MCP prompt (origin ``mcp``).

    Content is the description, then an ``Arguments:`` list; ``variables`` are
    the argument names. A manual skill with the same name should win.
    """
    content = prompt.description
    if prompt.arguments:
        lines = [
            f"  - {a.name}{' (required)' if a.required else ''}: {a.description[:512]}"
            for a in prompt.arguments
        ]
        content = "\n".join([content, "Arguments:", *lines]).lstrip("\n")
    return {
        "name": prompt.name,
        "description": prompt.description,
        "content": content or prompt.name,
        "variables": [a.name for a in prompt.arguments],
        "origin": "mcp",
        "mcp_server": prompt.server,
        "readonly": True,
    }


def _line(label: str, description: str) -> str:
    text = _esc(" ".join(description.split())[:MAX_DESCRIPTION])
    return f"  {label}  {text}" if text else f"  {label}"


def _more(total: int, limit: int, what: str) -> list[str]:
    return [f"  ... and {total - limit} more {what} not listed"] if total > limit else []


def _esc(text: str) -> str:
    return html.escape(text, quote=False)
