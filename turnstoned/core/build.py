"""The engine's services, built from the configuration.

MCP, project trust, policies, the judge, and what the tools get (web access,
previews, a side call to a session's model).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnstoned import paths
from turnstoned import protocol as p
from turnstoned.config import Config, ModelSettings, resolve_entry
from turnstoned.core import wire
from turnstoned.core.approval.judge import Judge, JudgeSettings
from turnstoned.core.approval.policy_files import PolicyBook
from turnstoned.core.events import EventSink
from turnstoned.envscrub import scrub_env
from turnstoned.llm.types import ModelError
from turnstoned.mcp.config import load_servers
from turnstoned.mcp.manager import MCPManager
from turnstoned.mcp.trust import ProjectTrust
from turnstoned.net.services import from_config
from turnstoned.store.previews import PreviewStore
from turnstoned.store.trust import TrustStore
from turnstoned.tools.base import Services

if TYPE_CHECKING:
    from turnstoned.core.sessions import Sessions
    from turnstoned.mcp.trust import Question
    from turnstoned.store import Store
    from turnstoned.store.previews import PreviewRecord


def services(config: Config, store: Store) -> Services:
    """What tools may use, before the engine's own parts join (agents, coordination)."""
    return Services(store=store, data_dir=paths.data_dir(), config_dir=paths.config_dir(),
                    notify=config.notify, web=from_config(config),
                    previews=PreviewStore(paths.data_dir() / "previews"))


def mcp_manager(config: Config) -> MCPManager:
    """A manager for the servers of config.toml and the --mcp-config / [mcp] config_path file."""
    path = Path(config.mcp.config_path).expanduser() if config.mcp.config_path else None
    specs, issues = load_servers(config.mcp.servers, mcp_config_path=path)
    passthrough = tuple(config.tools.env_passthrough)
    return MCPManager(
        specs, issues, call_timeout=config.mcp.call_timeout_seconds,
        health_interval=config.mcp.health_check_seconds,
        env_scrub=lambda environ: scrub_env(environ, passthrough=passthrough),
        auth_dir=paths.data_dir() / "mcp-auth",
    )


def projects(config: Config, store: Store, manager: MCPManager, sink: EventSink) -> ProjectTrust:
    """Project ``.mcp.json`` files, started once the user trusts them (``[mcp] project_config``)."""
    async def ask(question: Question) -> str | None:
        answer = await sink.request_mcp_trust(wire.trust_request(question))
        return answer.decision if answer is not None else None

    return ProjectTrust(manager, TrustStore(store), mode=config.mcp.project_mode, ask=ask)


def policy_book(config: Config, store: Store, sink: EventSink) -> PolicyBook:
    """The tool policies of config.toml, and the user's trust in workspace policy files."""
    async def ask(question: p.PolicyTrustRequestParams) -> str | None:
        answer = await sink.request_policy_trust(question)
        return answer.decision if answer is not None else None

    return PolicyBook(config.policies, str(paths.config_file()), TrustStore(store, "policies"),
                      ask)


def judge(sessions: Sessions) -> Judge | None:
    """The judge ``[judge]`` asks for (None when it is off)."""
    cfg = sessions.config.judge
    if not (cfg.enabled or cfg.smart_approvals):
        return None

    def model_for(session_id: str) -> ModelSettings | str:
        if cfg.model:
            entry = sessions.config.models.get(cfg.model)
            if entry is None:
                return f"[judge] model names {cfg.model!r}, which is not a [models] entry"
            return resolve_entry(entry, cfg.timeout)
        try:
            return sessions.model(session_id)
        except ModelError as exc:
            return exc.message

    settings = JudgeSettings(timeout=cfg.timeout, smart=cfg.smart_approvals,
                             threshold=cfg.confidence_threshold)
    return Judge(settings, model_for, usage_for=sessions.spend)


def side_calls(sessions: Sessions) -> None:
    """Give the tools a side call to a session's model and a way to open previews."""
    tools = sessions.services

    async def ask_model(session_id: str, messages: list[dict[str, Any]]) -> str:
        from turnstoned.llm.openai_chat import complete

        return await complete(sessions.model(session_id), messages, sessions.spend(session_id))

    def preview_opened(session_id: str, call_id: str, record: PreviewRecord, csp: str) -> None:
        sessions.sink.notify(wire.preview_open(session_id, call_id, record, csp))

    tools.ask_model = ask_model
    tools.preview_opened = preview_opened
