"""Request handlers: thin translations from protocol params to engine calls.

Each handler is registered against its row of ``protocol.METHODS`` with
``@handles``; at import the module checks that every client->daemon request
has exactly one handler and that its params and result types are the row's.
The engine is reached through ``get_engine``, which builds it on first use
(after ``initialize`` answered: the daemon's cold start stays close to a bare
pygls server's) and raises the configuration error when it cannot.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

import msgspec

from turnstoned import __version__
from turnstoned import protocol as p
from turnstoned.core.errors import EngineError
from turnstoned.daemon.router import (
    CALLER,
    closed,
    login_opener,
    running_turn,
    subscribe,
    unsubscribe,
)

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine

GetEngine = Callable[[], "Engine"]
Handler = Callable[[GetEngine, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)

HANDLERS: dict[str, Handler] = {}


def handles(name: str) -> Callable[[H], H]:
    """Register the handler of the client->daemon request ``name`` (a row of METHODS)."""
    method = p.METHODS_BY_NAME[name]
    if method.direction != "client->daemon" or method.lsp:
        raise TypeError(f"{name} is not a turnstoned client->daemon request")

    def register(fn: H) -> H:
        if name in HANDLERS:
            raise TypeError(f"{name} has two handlers")
        HANDLERS[name] = fn
        return fn
    return register


def build(get_engine: GetEngine) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """Every handler bound to ``get_engine``: ``handler(params) -> result``."""
    return {name: functools.partial(fn, get_engine) for name, fn in HANDLERS.items()}


# ---------------------------------------------------------------- sessions and turns


MAX_PATH_BYTES = 4096


def directory_param(value: str | None, field: str) -> str | None:
    """An absolute directory from a path or a ``file://`` URI, or -32602 naming ``field``."""
    if value is None:
        return None

    def bad(problem: str) -> EngineError:
        return EngineError(p.ErrorCode.INVALID_PARAMS,
                           f"Invalid params: {problem} - at `params.{field}`")

    if len(value.encode()) > MAX_PATH_BYTES:
        raise bad(f"longer than {MAX_PATH_BYTES} bytes")
    if value.lower().startswith("file:"):
        uri = urlsplit(value)
        if uri.netloc not in ("", "localhost"):
            raise bad(f"a file URI on another host ({uri.netloc})")
        value = unquote(uri.path)
    if "\0" in value:
        raise bad("contains a NUL character")
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        raise bad("must be an absolute path or a file:// URI")
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise bad(f"cannot be resolved ({exc})") from exc


@handles("session/start")
async def session_start(get_engine: GetEngine, params: p.SessionStartParams) -> p.SessionStartResult:
    conn = CALLER.get()
    if params.cwd is None and conn is not None and conn.router.resident:
        # The resident daemon's own directory is wherever it happened to start: a session
        # there would work in a folder the client never named.
        raise EngineError(p.ErrorCode.INVALID_PARAMS, "Invalid params: the resident daemon "
                          "needs `cwd` (it has no directory of the client's) - at `params.cwd`")
    params = msgspec.structs.replace(
        params, cwd=directory_param(params.cwd, "cwd"),
        workspace=directory_param(params.workspace, "workspace"))
    engine = get_engine()
    session = engine.start_session(params)
    subscribe(session.id)
    return p.SessionStartResult(session_id=session.id,
                                instructions=engine.instruction_files(session))


@handles("session/list")
async def session_list(get_engine: GetEngine, params: p.SessionListParams) -> p.SessionListResult:
    return p.SessionListResult(sessions=get_engine().list_sessions(
        directory_param(params.cwd, "cwd")))


@handles("session/delete")
async def session_delete(get_engine: GetEngine, params: p.SessionRef) -> p.Empty:
    await get_engine().delete_session(params.session_id)
    closed(params.session_id)
    return p.Empty()


@handles("session/resume")
async def session_resume(get_engine: GetEngine, params: p.SessionRef) -> p.SessionResumeResult:
    engine = get_engine()
    session = engine.resume(params.session_id)
    running = running_turn(session.id)  # joined mid-turn: that turn so far, then live
    result = p.SessionResumeResult(
        session_id=session.id, session=session.info(),
        items=session.items(before_turn=running.turn_id if running is not None else None),
        instructions=engine.instruction_files(session), plan=session.plan(), running=running)
    subscribe(session.id)  # the live stream from here on, an open approval question included
    return result


@handles("session/unsubscribe")
async def session_unsubscribe(get_engine: GetEngine, params: p.SessionRef) -> p.Empty:
    unsubscribe(params.session_id)
    return p.Empty()


@handles("session/close")
async def session_close(get_engine: GetEngine, params: p.SessionRef) -> p.Empty:
    await get_engine().close_session(params.session_id)
    closed(params.session_id)
    return p.Empty()


@handles("session/setMode")
async def session_set_mode(get_engine: GetEngine,
                           params: p.SessionSetModeParams) -> p.SessionSetModeResult:
    return get_engine().set_mode(params.session_id, params.mode)


@handles("session/compact")
async def session_compact(get_engine: GetEngine, params: p.SessionRef) -> p.SessionCompactResult:
    return await get_engine().compact(params.session_id)


@handles("turn/start")
async def turn_start(get_engine: GetEngine, params: p.TurnStartParams) -> p.TurnStartResult:
    texts = [i.text for i in params.input if isinstance(i, p.TextInput)]
    mentions = [i for i in params.input if isinstance(i, p.MentionInput)]
    images = [i for i in params.input if isinstance(i, p.ImageInput)]
    turn_id, queued = get_engine().start_turn(params.session_id, texts, params.editor, mentions,
                                              images)
    subscribe(params.session_id)  # whoever drives a turn sees it
    return p.TurnStartResult(turn_id=turn_id, queued=queued)


@handles("turn/interrupt")
async def turn_interrupt(get_engine: GetEngine, params: p.TurnInterruptParams) -> p.Empty:
    get_engine().interrupt(params.session_id, params.turn_id)
    return p.Empty()


@handles("session/commands")
async def session_commands(get_engine: GetEngine,
                           params: p.SessionCommandsParams) -> p.SessionCommandsResult:
    return get_engine().session_commands(params)


@handles("workspace/findFiles")
async def find_files(get_engine: GetEngine, params: p.FindFilesParams) -> p.FindFilesResult:
    return await get_engine().find_files(params)


@handles("model/list")
async def model_list(get_engine: GetEngine, params: None) -> p.ModelListResult:
    return await get_engine().list_models()


@handles("model/use")
async def model_use(get_engine: GetEngine, params: p.ModelUseParams) -> p.ModelUseResult:
    return get_engine().use_model(params)


@handles("session/setModel")
async def session_set_model(get_engine: GetEngine,
                            params: p.SessionSetModelParams) -> p.SessionSetModelResult:
    return get_engine().set_session_model(params)


@handles("turn/changes")
async def turn_changes(get_engine: GetEngine, params: p.TurnRef) -> p.TurnChangesResult:
    return await get_engine().turn_changes(params)


@handles("turn/undo")
async def turn_undo(get_engine: GetEngine, params: p.TurnUndoParams) -> p.TurnUndoResult:
    return await get_engine().undo(params)


@handles("turn/redo")
async def turn_redo(get_engine: GetEngine, params: p.TurnRedoParams) -> p.TurnUndoResult:
    return await get_engine().redo(params)


@handles("session/fork")
async def session_fork(get_engine: GetEngine, params: p.SessionForkParams) -> p.SessionForkResult:
    result = await get_engine().fork(params)
    if result.session is not None:
        subscribe(result.session.session_id)
    return result


@handles("fileChange/read")
async def file_change_read(get_engine: GetEngine,
                           params: p.FileChangeReadParams) -> p.FileChangeReadResult:
    return await get_engine().read_file_change(params.session_id, params.call_id)


# ---------------------------------------------------------------- tools and MCP


@handles("tool/list")
async def tool_list(get_engine: GetEngine, params: p.ToolListParams) -> p.ToolListResult:
    return p.ToolListResult(tools=get_engine().tool_list(params.session_id))


@handles("mcpServer/list")
async def mcp_server_list(get_engine: GetEngine, params: None) -> p.McpServerListResult:
    return p.McpServerListResult(servers=get_engine().mcp_servers())


@handles("mcpServer/refresh")
async def mcp_server_refresh(get_engine: GetEngine,
                             params: p.McpServerRefreshParams) -> p.McpServerRefreshResult:
    return p.McpServerRefreshResult(changes=await get_engine().mcp_refresh(params.name))


@handles("mcpServer/trust")
async def mcp_server_trust(get_engine: GetEngine,
                           params: p.McpServerTrustParams) -> p.McpServerTrustResult:
    return await get_engine().mcp_trust(params)


@handles("mcpServer/login")
async def mcp_server_login(get_engine: GetEngine,
                           params: p.McpServerLoginParams) -> p.McpServerLoginResult:
    return p.McpServerLoginResult(
        server=await get_engine().mcp_login(params.name, login_opener()))


@handles("mcpServer/logout")
async def mcp_server_logout(get_engine: GetEngine,
                            params: p.McpServerLoginParams) -> p.McpServerLoginResult:
    return p.McpServerLoginResult(server=await get_engine().mcp_logout(params.name))


@handles("grant/list")
async def grant_list(get_engine: GetEngine, params: p.GrantListParams) -> p.GrantListResult:
    return get_engine().grant_list(params.session_id)


@handles("grant/revoke")
async def grant_revoke(get_engine: GetEngine, params: p.GrantRevokeParams) -> p.GrantRevokeResult:
    return get_engine().grant_revoke(params.session_id, params.rule)


@handles("policy/list")
async def policy_list(get_engine: GetEngine, params: p.PolicyListParams) -> p.PolicyListResult:
    return get_engine().policy_list(params.session_id)


@handles("policy/trust")
async def policy_trust(get_engine: GetEngine, params: p.PolicyTrustParams) -> p.PolicyTrustResult:
    return get_engine().policy_trust(params)


@handles("preview/read")
async def preview_read(get_engine: GetEngine, params: p.PreviewReadParams) -> p.PreviewReadResult:
    return await get_engine().read_preview(params)


# ---------------------------------------------------------------- memories and skills


@handles("memory/list")
async def memory_list(get_engine: GetEngine, params: p.MemoryListParams) -> p.MemoryListResult:
    return p.MemoryListResult(memories=get_engine().memory_list(params.scope, params.session_id))


@handles("memory/delete")
async def memory_delete(get_engine: GetEngine, params: p.MemoryDeleteParams) -> p.MemoryDeleteResult:
    deleted = get_engine().memory_delete(params.name, params.scope, params.session_id)
    return p.MemoryDeleteResult(deleted=deleted)


@handles("skill/list")
async def skill_list(get_engine: GetEngine, params: p.SkillListParams) -> p.SkillListResult:
    return p.SkillListResult(skills=get_engine().skill_list(params.session_id))


# ---------------------------------------------------------------- watches


@handles("watch/list")
async def watch_list(get_engine: GetEngine, params: p.WatchListParams) -> p.WatchListResult:
    return p.WatchListResult(watches=get_engine().watch_list(params.session_id))


@handles("watch/cancel")
async def watch_cancel(get_engine: GetEngine, params: p.WatchCancelParams) -> p.WatchCancelResult:
    return get_engine().watch_cancel(params.session_id, params.name)


# ---------------------------------------------------------------- the daemon


@handles("daemon/health")
async def daemon_health(get_engine: GetEngine, params: p.DaemonHealthParams
                        ) -> p.DaemonHealthResult:
    """Answers even when the engine could not start: then with the configuration error."""
    try:
        health = await get_engine().health(params.probe)
    except EngineError as exc:
        if exc.code != p.ErrorCode.CONFIG_ERROR:
            raise
        health = p.DaemonHealthResult(version=__version__, protocol_version=p.PROTOCOL_VERSION,
                                      sessions=0, config_error=exc.message, mcp=p.McpHealth())
    conn = CALLER.get()
    if conn is None:
        return health
    router = conn.router
    return msgspec.structs.replace(health, clients=len(router.connections),
                                   resident=router.resident)


def _check() -> None:
    """One handler per client->daemon request, typed exactly as its row of METHODS."""
    expected = {m.name for m in p.METHODS if m.direction == "client->daemon" and not m.lsp}
    if set(HANDLERS) != expected:
        raise TypeError(f"requests without a handler: {sorted(expected - set(HANDLERS))}")
    for name, fn in HANDLERS.items():
        method = p.METHODS_BY_NAME[name]
        params, result = (eval(fn.__annotations__[k], globals()) for k in ("params", "return"))
        if params is not method.params or result is not method.result:
            raise TypeError(f"the handler of {name} is not typed as its row of METHODS")


_check()
