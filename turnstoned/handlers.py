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
        return p.McpServerListResult(servers=[])

    async def mcp_refresh(params: p.McpServerRefreshParams) -> p.McpServerRefreshResult:
        return p.McpServerRefreshResult(changes=[])

    async def health(_: None) -> p.DaemonHealthResult:
        return get_engine().health()

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
        "daemon/health": health,
    }
