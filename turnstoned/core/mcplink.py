"""The engine's side of MCP: building the manager and project trust, their wire shapes,
and the handle that puts a server's tool into the tool pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import protocol as p
from turnstoned.config import Config
from turnstoned.core.errors import EngineError
from turnstoned.core.events import EventSink
from turnstoned.protocol import ErrorCode
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.mcp.models import CatalogChange, MCPTool, ServerStatus
    from turnstoned.mcp.trust import ProjectTrust, Question
    from turnstoned.store import Store


def make_manager(config: Config) -> MCPManager:
    """A manager for the servers of config.toml and the --mcp-config / [mcp] config_path file."""
    from turnstoned.envscrub import scrub_env
    from turnstoned.mcp.config import load_servers
    from turnstoned.mcp.manager import MCPManager

    path = Path(config.mcp.config_path).expanduser() if config.mcp.config_path else None
    specs, issues = load_servers(config.mcp.servers, mcp_config_path=path)
    passthrough = tuple(config.tools.env_passthrough)
    return MCPManager(
        specs, issues, call_timeout=config.mcp.call_timeout_seconds,
        health_interval=config.mcp.health_check_seconds,
        env_scrub=lambda environ: scrub_env(environ, passthrough=passthrough),
    )


def make_projects(config: Config, store: Store, manager: MCPManager,
                  sink: EventSink) -> ProjectTrust:
    """Project ``.mcp.json`` files, started once the user trusts them (``[mcp] project_config``)."""
    from turnstoned.mcp.trust import ProjectTrust
    from turnstoned.store.trust import TrustStore

    async def ask(question: Question) -> str | None:
        answer = await sink.request_mcp_trust(trust_request(question))
        return answer.decision if answer is not None else None

    return ProjectTrust(manager, TrustStore(store), mode=config.mcp.project_mode, ask=ask)


def trust_request(question: Question) -> p.McpTrustRequestParams:
    return p.McpTrustRequestParams(
        workspace=str(question.workspace), config_path=str(question.config_path),
        hash=question.hash, previously_trusted=question.previously_trusted,
        servers=[p.McpServerPreview(**msgspec.structs.asdict(s)) for s in question.servers])


async def set_trust(projects: ProjectTrust,
                    params: p.McpServerTrustParams) -> p.McpServerTrustResult:
    """``mcpServer/trust``: trust or revoke the config of a workspace (or of a .mcp.json path)."""
    from turnstoned.mcp.trust import TrustError

    workspace = _trust_target(params)
    try:
        outcome = await projects.set_trusted(workspace, params.trusted, params.hash)
    except TrustError as exc:
        raise EngineError(ErrorCode.INVALID_PARAMS, str(exc)) from exc
    return p.McpServerTrustResult(
        workspace=str(outcome.project.workspace), config_path=str(outcome.project.path),
        hash=outcome.project.hash, trusted=outcome.trusted,
        servers=[server_info(s) for s in outcome.servers])


def _trust_target(params: p.McpServerTrustParams) -> Path:
    from turnstoned.mcp.project import PROJECT_FILE

    if params.config_path is not None:
        path = Path(params.config_path)
        if not path.is_absolute() or path.name != PROJECT_FILE:
            raise EngineError(ErrorCode.INVALID_PARAMS,
                              f"configPath must be an absolute path to a {PROJECT_FILE} file")
        return path.parent
    if params.workspace is None or not Path(params.workspace).is_absolute():
        raise EngineError(ErrorCode.INVALID_PARAMS,
                          "workspace (an absolute folder) or configPath is required")
    return Path(params.workspace)


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
