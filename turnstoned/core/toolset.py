"""What a session's model is shown, and what it may call: built-ins, MCP tools, tool search.

Visibility and dispatch are one thing here (beyond the original, which let a
session call tools it was never shown): ``Toolset.handles`` holds exactly the
callable tools. With dynamic tool search active, MCP tools are deferred behind
the synthetic ``tool_search`` until a search expands them; expanded tools stay
for the rest of the session (persisted, so they survive a refresh and a resume).

A small context window (``COMPACT_WINDOW`` tokens or less) gets the compact set: the
core tools (``CORE_TOOLS``) with their descriptions cut to the first sentence, every
other tool (built-in or MCP) behind ``tool_search``, so the first request fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnstoned import tools as registry
from turnstoned.core.handles import (
    EXPANDED_KEY,
    TOOL_SEARCH,
    BuiltinTool,
    McpToolHandle,
    Searchable,
    ToolSearchHandle,
    compact_schema,
    tool_search_schema,
)
from turnstoned.tools.base import (
    AgentKind,
    SessionEnv,
    ToolHandle,
)

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager

COMPACT_WINDOW = 8_192  # tokens: at or below, the compact tool set (and system prompt)
CORE_TOOLS = frozenset({"read_file", "edit_file", "write_file", "bash", "search"})


def compact(env: SessionEnv) -> bool:
    """The session's model has a small window: show it the compact prompt and tools."""
    return env.settings.context_window <= COMPACT_WINDOW


@dataclass(frozen=True, slots=True)
class SearchSettings:
    mode: str = "auto"  # auto | on | off
    threshold: int = 20
    max_results: int = 5
    native: bool = False  # the provider defers tools itself (defer_loading)


@dataclass(slots=True)
class Toolset:
    schemas: list[dict[str, Any]] = field(default_factory=list)
    handles: dict[str, ToolHandle] = field(default_factory=dict)
    deferred: list[str] = field(default_factory=list)


def _builtin(kind: AgentKind, env: SessionEnv,
             manager: MCPManager | None) -> tuple[list[dict[str, Any]], dict[str, ToolHandle]]:
    specs = registry.registry()
    ws = str(env.workspace) if env.workspace else None
    hidden = set()
    if manager is None or not (manager.resources() or manager.resource_templates()):
        hidden.add("read_resource")
    if manager is None or not manager.prompts():
        hidden.add("use_prompt")
    # A tool may say it cannot work in this session right now (web_search without a backend).
    hidden |= {name for name, spec in specs.items()
               if not getattr(spec.module, "available", lambda env: True)(env)}
    schemas = [s for s in registry.tools_for(kind, str(env.cwd), ws)
               if s["function"]["name"] not in hidden]
    handles: dict[str, ToolHandle] = {
        s["function"]["name"]: specs[s["function"]["name"]].handle() for s in schemas}
    return schemas, handles


def build(kind: AgentKind, env: SessionEnv, search: SearchSettings) -> Toolset:
    """The session's tools for its next model call."""
    manager = env.services.mcp
    schemas, handles = _builtin(kind, env, manager)
    mcp_tools = list(manager.tools()) if manager is not None else []
    out = Toolset(schemas=schemas, handles=handles)
    if manager is not None:
        out.handles.update({t.name: McpToolHandle(t, manager) for t in mcp_tools})
    expanded = set(env.persisted.get(EXPANDED_KEY, []))
    small = compact(env)
    builtin_later: list[Searchable] = []
    if small:
        shown = [s for s in schemas if kind == "coordinator"
                 or s["function"]["name"] in CORE_TOOLS | expanded]
        builtin_later = [BuiltinTool.of(s) for s in schemas if s not in shown]
        schemas = [compact_schema(s) for s in shown]
    total = len(schemas) + len(mcp_tools)
    active = kind != "task" and mcp_tools and (
        small or search.mode == "on" or (search.mode == "auto" and total > search.threshold))
    if not active and not builtin_later:
        out.schemas = schemas + [t.openai_schema() for t in mcp_tools]
        return out
    visible = [t for t in mcp_tools if not active or t.name in expanded]
    deferred: list[Searchable] = [*builtin_later, *(t for t in mcp_tools if t not in visible)]
    out.deferred = [t.name for t in deferred]
    if search.native and not small:
        marked = [{**t.openai_schema(), "defer_loading": True} for t in deferred]
        out.schemas = schemas + [t.openai_schema() for t in visible] + marked
        return out
    for t in deferred:
        del out.handles[t.name]  # callable once a search expands it
    out.schemas = schemas + [compact_schema(t.openai_schema()) if small else t.openai_schema()
                             for t in visible]
    if deferred:
        servers = sorted({t.server for t in deferred})
        out.schemas.append(tool_search_schema(len(deferred), servers, search.max_results))
        out.handles[TOOL_SEARCH] = ToolSearchHandle(deferred, search.max_results)
    return out
