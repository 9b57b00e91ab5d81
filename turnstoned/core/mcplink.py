"""The engine's side of MCP: building the manager from config, its wire shapes, and the
handle that puts a server's tool into the tool pipeline."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import protocol as p
from turnstoned.config import Config
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.mcp.models import CatalogChange, MCPTool, ServerStatus

log = logging.getLogger(__name__)


def make_manager(config: Config) -> MCPManager:
    """A manager for the servers of config.toml and the --mcp-config / [mcp] config_path file."""
    from turnstoned.envscrub import scrub_env
    from turnstoned.mcp.config import load_servers
    from turnstoned.mcp.manager import MCPManager

    path = Path(config.mcp.config_path).expanduser() if config.mcp.config_path else None
    specs, issues = load_servers(config.mcp.servers, mcp_config_path=path, project_dir=None)
    passthrough = tuple(config.tools.env_passthrough)
    return MCPManager(
        specs, issues, call_timeout=config.mcp.call_timeout_seconds,
        health_interval=config.mcp.health_check_seconds,
        env_scrub=lambda environ: scrub_env(environ, passthrough=passthrough),
    )


def add_project_servers(manager: MCPManager, project_dir: Path) -> list[str]:
    """Servers of ``project_dir/.mcp.json`` join the daemon's (configured names win)."""
    from turnstoned.mcp.config import load_servers

    if not (project_dir / ".mcp.json").is_file():
        return []
    specs, issues = load_servers(None, mcp_config_path=None, project_dir=project_dir)
    added = manager.add_servers(specs, issues)
    if added:
        log.info("project %s adds MCP servers %s", project_dir, added)
    return added


def server_info(status: ServerStatus) -> p.McpServerInfo:
    return p.McpServerInfo(
        name=status.name, status=status.status, tools=status.tools,
        resources=status.resources, prompts=status.prompts, error=status.error,
        origin=status.origin)


def status_changed(status: ServerStatus) -> p.McpServerStatusChanged:
    return p.McpServerStatusChanged(**msgspec.structs.asdict(server_info(status)))


def change_info(change: CatalogChange) -> p.McpChange:
    return p.McpChange(server=change.server, added=list(change.added),
                       removed=list(change.removed), error=change.error)


def health(manager: MCPManager | None) -> p.McpHealth:
    if manager is None:
        return p.McpHealth()
    servers = [s for s in manager.status() if s.name]
    return p.McpHealth(
        servers=len(servers), connected=sum(1 for s in servers if s.status == "connected"),
        tools=len(manager.tools()),
        resources=len(manager.resources()) + len(manager.resource_templates()),
        prompts=len(manager.prompts()))


class McpToolHandle:
    """An MCP server's tool in the pipeline: always asks unless granted, per tool."""

    primary_key: str | None = None

    def __init__(self, tool: MCPTool, manager: MCPManager) -> None:
        self.name = tool.name
        self.tool = tool
        self.manager = manager

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        shown = json.dumps(args, ensure_ascii=False, indent=2)
        preview = shown if len(shown) <= 4000 else shown[:4000] + "\n…"
        return PreparedCall(header=f"⚙ {self.name} [MCP: {self.tool.server}]", preview=preview,
                            needs_approval=True, approval_label=self.name, data=args)

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        result = await self.manager.call_tool(self.name, call.data)
        return ToolOutput(result.content, is_error=result.is_error,
                          effect_status=result.effect_status)
