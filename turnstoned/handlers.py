"""Request handlers: thin translations from protocol params to engine calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from turnstoned import protocol as p

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine

Handler = Callable[[Any], Awaitable[Any]]


def build(get_engine: Callable[[], Engine]) -> dict[str, Handler]:
    """One coroutine per client->daemon request of protocol.METHODS.

    The engine is built on first use (after ``initialize`` answered), which
    keeps the daemon's cold start close to a bare pygls server's.
    """

    async def session_start(params: p.SessionStartParams) -> p.SessionStartResult:
        return p.SessionStartResult(session_id=get_engine().start_session(params).id)

    async def session_list(_: None) -> p.SessionListResult:
        return p.SessionListResult(sessions=get_engine().list_sessions())

    async def session_resume(params: p.SessionRef) -> p.SessionResumeResult:
        from turnstoned.core import messages

        session = get_engine().resume(params.session_id)
        return p.SessionResumeResult(session_id=session.id, session=session.info(),
                                     items=messages.to_items(session.history))

    async def session_close(params: p.SessionRef) -> p.Empty:
        await get_engine().close_session(params.session_id)
        return p.Empty()

    async def turn_start(params: p.TurnStartParams) -> p.TurnStartResult:
        turn_id, queued = get_engine().start_turn(params.session_id, [i.text for i in params.input])
        return p.TurnStartResult(turn_id=turn_id, queued=queued)

    async def turn_interrupt(params: p.TurnInterruptParams) -> p.Empty:
        get_engine().interrupt(params.session_id, params.turn_id)
        return p.Empty()

    async def tool_list(params: p.ToolListParams) -> p.ToolListResult:
        return p.ToolListResult(tools=get_engine().tool_list(params.session_id))

    async def mcp_list(_: None) -> p.McpServerListResult:
        return p.McpServerListResult(servers=get_engine().mcp_servers())

    async def mcp_refresh(params: p.McpServerRefreshParams) -> p.McpServerRefreshResult:
        return p.McpServerRefreshResult(changes=await get_engine().mcp_refresh(params.name))

    async def mcp_trust(params: p.McpServerTrustParams) -> p.McpServerTrustResult:
        return await get_engine().mcp_trust(params)

    async def health(_: None) -> p.DaemonHealthResult:
        return get_engine().health()

    async def file_change_read(params: p.FileChangeReadParams) -> p.FileChangeReadResult:
        return await get_engine().read_file_change(params.session_id, params.call_id)

    async def preview_read(params: p.PreviewReadParams) -> p.PreviewReadResult:
        from turnstoned.core import weblink

        return await weblink.read_preview(get_engine(), params)

    return {
        "session/start": session_start,
        "session/list": session_list,
        "session/resume": session_resume,
        "session/close": session_close,
        "turn/start": turn_start,
        "turn/interrupt": turn_interrupt,
        "tool/list": tool_list,
        "mcpServer/list": mcp_list,
        "mcpServer/refresh": mcp_refresh,
        "mcpServer/trust": mcp_trust,
        "daemon/health": health,
        "fileChange/read": file_change_read,
        "preview/read": preview_read,
        **_knowledge_handlers(get_engine),
    }


def _knowledge_handlers(get_engine: Callable[[], Engine]) -> dict[str, Handler]:
    """memory/list, memory/delete and skill/list: what editors show of memories and skills."""
    from pathlib import Path

    def session_dirs(session_id: str) -> tuple[Any, Path, Path | None]:
        from turnstoned.core.errors import EngineError

        row = get_engine().store.get_session(session_id)
        if row is None:
            raise EngineError(p.ErrorCode.SESSION_NOT_FOUND, f"no session {session_id!r}")
        return row, Path(row.cwd), Path(row.workspace) if row.workspace else None

    def places(scope: str | None, session_id: str | None) -> list[Any]:
        from turnstoned.core.errors import EngineError
        from turnstoned.store.memory import ScopeRef, Scopes, sessionless_refs

        if session_id is None:
            if scope in ("workstream", "project"):
                raise EngineError(p.ErrorCode.INVALID_PARAMS,
                                  f"scope {scope!r} belongs to a session: pass sessionId")
            refs = sessionless_refs()
        else:
            row, cwd, workspace = session_dirs(session_id)
            scopes = Scopes.for_session(row.id, row.kind, cwd, workspace)
            refs = scopes.visible()
            if scope is not None and scope not in scopes.allowed() and scope != "project":
                refs.append(ScopeRef(scope, scopes.key(scope)))
        return [r for r in refs if scope is None or r.scope == scope]

    async def memory_list(params: p.MemoryListParams) -> p.MemoryListResult:
        from turnstoned.core.session import iso
        from turnstoned.store.memory import MemoryStore

        found = MemoryStore(get_engine().store).all_in(places(params.scope, params.session_id))
        return p.MemoryListResult(memories=[p.MemoryInfo(
            name=m.name, scope=m.scope, type=m.type,  # type: ignore[arg-type]
            description=m.description, content=m.content, updated_at=iso(m.updated_at))
            for m in found])

    async def memory_delete(params: p.MemoryDeleteParams) -> p.MemoryDeleteResult:
        from turnstoned.core.errors import EngineError
        from turnstoned.store.memory import MemoryStore

        refs = places(params.scope, params.session_id)
        if not refs:
            raise EngineError(p.ErrorCode.INVALID_PARAMS, "that session has no project scope "
                              "(no workspace folder, not inside a git repository)")
        return p.MemoryDeleteResult(deleted=MemoryStore(get_engine().store).delete(refs[0],
                                                                                   params.name))

    async def skill_list(params: p.SkillListParams) -> p.SkillListResult:
        from turnstoned import skills

        engine, root, active = get_engine(), None, None
        if params.session_id is not None:
            row, cwd, workspace = session_dirs(params.session_id)
            root = skills.skills_root(cwd, workspace)
            record = row.state.get(skills.ACTIVE_KEY)
            active = record.get("name") if isinstance(record, dict) else None
        catalog = skills.build_catalog(engine.services.config_dir, root, engine.services.mcp)
        return p.SkillListResult(skills=[p.SkillInfo(
            name=s.name, description=s.description, category=s.category,
            risk=s.risk, origin=s.origin, active=s.name == active)  # type: ignore[arg-type]
            for s in catalog.skills])

    return {"memory/list": memory_list, "memory/delete": memory_delete, "skill/list": skill_list}
