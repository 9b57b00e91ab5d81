"""The agent's side of ACP: each request the client may send, as engine calls.

| ACP | engine |
|---|---|
| ``initialize`` | what this front offers (answered before the engine is built) |
| ``authenticate`` | nothing to do: the model key is the daemon's (config or environment) |
| ``session/new`` | ``start_session`` (cwd; ``_meta.turnstoned``: kind, model, mode, title), the client's MCP servers merged (``servers``) |
| ``session/load`` | ``resume``, then its history replayed as ``session/update``s |
| ``session/resume`` | ``resume``, no replay |
| ``session/list`` | the sessions with no parent and not closed, newest first (``cwd`` filters) |
| ``session/close`` | ``close_session`` |
| ``session/prompt`` | a slash command (``commands``), or ``start_turn`` and the turn's end as a ``stopReason`` |
| ``session/cancel`` | ``interrupt``: the turn stops at once, a question asked is withdrawn |
| ``session/set_mode``, ``session/set_config_option`` (``mode``) | ``set_mode`` |
| ``_turnstoned/<method>`` | the turnstoned protocol v1 request of that name (``EXTENSIONS``) |

Engine errors keep their code (``-32002`` for a session that is not there, ACP's
"resource not found") and their ``data.kind``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import __version__
from turnstoned import protocol as p
from turnstoned.acp import commands, prompt, servers, updates
from turnstoned.acp.engines import Engines
from turnstoned.acp.permission import Permissions
from turnstoned.acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    AcpError,
    Peer,
    decode,
)
from turnstoned.acp.sink import AcpSink, View
from turnstoned.acp.wire import (
    MODES,
    PROTOCOL_VERSION,
    AuthenticateParams,
    InitializeParams,
    ListSessionsParams,
    LoadSessionParams,
    NewSessionParams,
    PromptParams,
    SessionOptions,
    SessionRef,
    SetConfigOptionParams,
    SetModeParams,
)
from turnstoned.core.errors import EngineError
from turnstoned.mcp.config import ServerSpec

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MCP_WAIT = 5.0  # seconds session/new waits for the client's new MCP servers to connect
EXTENSION = "_turnstoned/"

MODE_NAMES: dict[str, tuple[str, str]] = {
    "read-only": ("Read-only", "Reads run; edits, commands and everything else ask."),
    "auto": ("Auto", ("Reads and workspace edits run; commands run in the sandbox; "
                      "destructive, credential, outside-the-workspace and network calls ask.")),
    "full-access": ("Full access", ("No sandbox; only destructive, credential and "
                                    "outside-the-workspace calls ask.")),
    "plan": ("Plan", "Read-only while the model writes a plan; approving it switches to Auto."),
}

# The turnstoned requests an ACP client may send as ``_turnstoned/<name>``: their params
# and results are protocol v1's (docs/protocol.md).
EXTENSIONS: dict[str, Callable[[Engine, Any], Any]] = {
    "session/compact": lambda e, x: e.compact(x.session_id),
    "session/fork": lambda e, x: e.fork(x),
    "turn/changes": lambda e, x: e.turn_changes(x),
    "turn/undo": lambda e, x: e.undo(x),
    "turn/redo": lambda e, x: e.redo(x),
    "fileChange/read": lambda e, x: e.read_file_change(x.session_id, x.call_id),
    "tool/list": lambda e, x: p.ToolListResult(tools=e.tool_list(x.session_id)),
    "mcpServer/list": lambda e, x: p.McpServerListResult(servers=e.mcp_servers()),
    "mcpServer/refresh": lambda e, x: _refresh(e, x),
    "mcpServer/trust": lambda e, x: e.mcp_trust(x),
    "grant/list": lambda e, x: e.grant_list(x.session_id),
    "grant/revoke": lambda e, x: e.grant_revoke(x.session_id, x.rule),
    "policy/list": lambda e, x: e.policy_list(x.session_id),
    "policy/trust": lambda e, x: e.policy_trust(x),
    "preview/read": lambda e, x: e.read_preview(x),
    "memory/list": lambda e, x: p.MemoryListResult(memories=e.memory_list(x.scope, x.session_id)),
    "memory/delete": lambda e, x: p.MemoryDeleteResult(
        deleted=e.memory_delete(x.name, x.scope, x.session_id)),
    "skill/list": lambda e, x: p.SkillListResult(skills=e.skill_list(x.session_id)),
    "watch/list": lambda e, x: p.WatchListResult(watches=e.watch_list(x.session_id)),
    "watch/cancel": lambda e, x: e.watch_cancel(x.session_id, x.name),
    "daemon/health": lambda e, x: e.health(x.probe),
}


async def _refresh(engine: Engine, params: p.McpServerRefreshParams) -> p.McpServerRefreshResult:
    return p.McpServerRefreshResult(changes=await engine.mcp_refresh(params.name))


def engine_error(exc: EngineError) -> AcpError:
    code = RESOURCE_NOT_FOUND if exc.code == p.ErrorCode.SESSION_NOT_FOUND else int(exc.code)
    return AcpError(code, exc.message, exc.kind)


def directory(value: str, field: str) -> Path:
    """An absolute directory (ACP's ``cwd`` is an absolute path), or ``-32602``."""
    if "\0" in value or not os.path.isabs(value):
        raise AcpError(INVALID_PARAMS, f"Invalid params: `params.{field}` must be an absolute "
                       "path", "invalidParams")
    path = Path(value).resolve()
    if not path.is_dir():
        raise AcpError(INVALID_PARAMS, f"Invalid params: `params.{field}` is not a directory: "
                       f"{path}", "invalidParams")
    return path


def stop_reason(done: p.TurnCompleted, finish: str | None) -> str:
    """How a turn ended, as ACP's ``stopReason``; a failure is a JSON-RPC error."""
    if done.status == "interrupted" or (done.error is not None
                                        and done.error.kind == "interrupted"):
        return "cancelled"
    if done.status == "failed":
        error = done.error or p.TurnError(kind="internal", message="the turn failed")
        if error.kind == "turnLimit":
            return "max_turn_requests"
        raise AcpError(INTERNAL_ERROR, error.message, error.kind)
    if finish == "length":
        return "max_tokens"
    if finish == "content_filter":
        return "refusal"
    return "end_turn"


class Agent:
    """One ACP connection's agent: the requests, the sink, the permission questions."""

    def __init__(self, peer: Peer, overrides: dict[str, dict[str, Any]]) -> None:
        self.peer = peer
        self.sink = AcpSink(peer)
        self.engines = Engines(self.sink, overrides)
        self.engines.on_engine = self._engine_built
        self.sink.permissions = Permissions(peer, self._read_change)
        self.sink.config_options = self._config_options
        self.client_servers: dict[str, ServerSpec] = {}
        self._warm: asyncio.Task[None] | None = None
        self._register()

    # ----------------------------------------------------------- plumbing

    def _engine_built(self, engine: Engine) -> None:
        self.sink.parent_of = engine.parent_of
        self.sink.tasks_of = lambda session_id: _tasks(engine, session_id)
        self.sink.finish_of = lambda session_id: _finish(engine, session_id)

    async def _read_change(self, session_id: str, call_id: str) -> p.FileChangeReadResult:
        return await (await self.engines.get()).read_file_change(session_id, call_id)

    def _register(self) -> None:
        table: dict[str, tuple[type | None, Callable[[Any], Awaitable[Any]]]] = {
            "initialize": (InitializeParams, self.initialize),
            "authenticate": (AuthenticateParams, self.authenticate),
            "session/new": (NewSessionParams, self.new_session),
            "session/load": (LoadSessionParams, self.load_session),
            "session/resume": (LoadSessionParams, self.resume_session),
            "session/list": (ListSessionsParams, self.list_sessions),
            "session/close": (SessionRef, self.close_session),
            "session/prompt": (PromptParams, self.prompt),
            "session/set_mode": (SetModeParams, self.set_mode),
            "session/set_config_option": (SetConfigOptionParams, self.set_config_option),
        }
        for method, (params, fn) in table.items():
            self.peer.request(method, params)(self._guarded(fn))
        self.peer.notification("session/cancel", SessionRef)(self.cancel)
        self.peer.fallback = self._guarded_extension

    @staticmethod
    def _guarded(fn: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def call(params: Any) -> Any:
            try:
                return await fn(params)
            except EngineError as exc:
                raise engine_error(exc) from exc
        return call

    async def _guarded_extension(self, method: str, raw: Any) -> Any:
        try:
            return await self.extension(method, raw)
        except EngineError as exc:
            raise engine_error(exc) from exc

    def view(self, session_id: str) -> View:
        found = self.sink.views.get(session_id)
        if found is None:
            raise AcpError(RESOURCE_NOT_FOUND, f"session {session_id!r} is not open on this "
                           "connection (session/new, session/load or session/resume opens "
                           "it)", "sessionNotFound")
        return found

    def after_reply(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the answer to the request being handled has been sent (that
        answer is written in the same step of its task, right after the handler returns)."""
        asyncio.get_running_loop().call_soon(fn)

    # ----------------------------------------------------------- initialize

    async def initialize(self, params: InitializeParams) -> JSON:
        self.sink.client = params.client_capabilities
        self.after_reply(self._start)
        extensions = sorted(EXTENSION + name for name in EXTENSIONS)
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "turnstoned", "title": "turnstoned", "version": __version__},
            "_meta": {"turnstoned": {"protocolVersion": p.PROTOCOL_VERSION,
                                     "protocolRevision": p.PROTOCOL_REVISION,
                                     "methods": extensions}},
        }

    def _start(self) -> None:
        """After ``initialize``: build the engine and warm the model connection."""
        self.engines.build()
        if self._warm is None:
            self._warm = asyncio.get_running_loop().create_task(self.engines.warm(), name="warm")

    async def authenticate(self, params: AuthenticateParams) -> JSON:
        return {}  # no method is offered: the model key is the daemon's own

    # ----------------------------------------------------------- sessions

    def _modes(self, mode: str) -> JSON:
        return {"currentModeId": mode, "availableModes": [
            {"id": m, "name": MODE_NAMES[m][0], "description": MODE_NAMES[m][1]} for m in MODES]}

    def _config_options(self, mode: str) -> list[JSON]:
        return [{"id": "mode", "name": "Approval mode", "category": "mode", "type": "select",
                 "description": "What runs without asking",
                 "currentValue": mode,
                 "options": [{"value": m, "name": MODE_NAMES[m][0],
                              "description": MODE_NAMES[m][1]} for m in MODES]}]

    def _session_state(self, mode: str) -> JSON:
        return {"modes": self._modes(mode), "configOptions": self._config_options(mode)}

    async def _merge_servers(self, engine: Engine, raw: list[dict[str, Any]] | None) -> None:
        """The client's MCP servers join the engine's (see ``servers``)."""
        if not raw:
            return
        wanted = {spec.name: spec for spec in servers.specs(raw)}
        merged = {**self.client_servers, **wanted}
        if merged == self.client_servers:
            return
        fresh = [name for name, spec in wanted.items() if self.client_servers.get(name) != spec]
        self.client_servers = merged
        engine.mcp.replace_servers(servers.ORIGIN, list(merged.values()))
        try:
            await engine.mcp.wait_ready(MCP_WAIT, fresh)
        except TimeoutError:
            log.info("MCP servers %s still connecting after %g s", fresh, MCP_WAIT)

    def _open(self, session_id: str, cwd: Path) -> View:
        view = self.sink.open(session_id, cwd)
        self.after_reply(lambda: self.sink.announce(view, commands.available()))
        return view

    async def new_session(self, params: NewSessionParams) -> JSON:
        engine = await self.engines.get()
        cwd = directory(params.cwd, "cwd")
        options = params.meta.turnstoned if params.meta is not None else SessionOptions()
        await self._merge_servers(engine, params.mcp_servers)
        session = engine.start_session(p.SessionStartParams(
            cwd=str(cwd), kind=options.kind, model=options.model, title=options.title,
            approval_mode=options.approval_mode))
        self._open(session.id, cwd)
        return {"sessionId": session.id, **self._session_state(session.policy.mode)}

    async def _resume(self, params: LoadSessionParams) -> Any:
        engine = await self.engines.get()
        if params.cwd is not None:
            directory(params.cwd, "cwd")
        session = engine.resume(params.session_id)
        await self._merge_servers(engine, params.mcp_servers)
        return session

    async def load_session(self, params: LoadSessionParams) -> JSON:
        session = await self._resume(params)
        cwd = Path(session.env.cwd)
        view = self._open(session.id, cwd)
        notices = self.sink.has("notices")
        for update in updates.replay(session.items(), cwd, notices):
            self.sink.update(view.session_id, update)
        return self._session_state(session.policy.mode)

    async def resume_session(self, params: LoadSessionParams) -> JSON:
        session = await self._resume(params)
        self._open(session.id, Path(session.env.cwd))
        return self._session_state(session.policy.mode)

    async def list_sessions(self, params: ListSessionsParams) -> JSON:
        engine = await self.engines.get()
        where = str(Path(params.cwd).resolve()) if params.cwd else None
        found = [{"sessionId": s.session_id, "cwd": s.cwd, "title": s.title,
                  "updatedAt": s.updated_at,
                  "_meta": {"turnstoned": {"kind": s.kind, "model": s.model,
                                           "approvalMode": s.approval_mode,
                                           "status": s.status}}}
                 for s in engine.list_sessions()
                 if s.status != "closed" and s.parent_session_id is None
                 and (where is None or s.cwd == where)]
        return {"sessions": found}

    async def close_session(self, params: SessionRef) -> JSON:
        engine = await self.engines.get()
        await engine.close_session(params.session_id)
        self.sink.close(params.session_id)
        return {}

    # ----------------------------------------------------------- prompts

    async def prompt(self, params: PromptParams) -> JSON:
        view = self.view(params.session_id)
        engine = await self.engines.get()
        text = prompt.to_text(params.prompt)
        command = commands.parse(text)
        if command is not None:
            return await self._command(engine, view, *command)
        turn_id, _ = engine.start_turn(view.session_id, [text])
        waiter = view.waiter(turn_id)
        try:
            done = await asyncio.shield(waiter)
        except asyncio.CancelledError:  # the client withdrew the request: stop the turn
            try:
                engine.interrupt(view.session_id, None)
            except EngineError as exc:  # the session closed meanwhile
                log.info("interrupting %s: %s", view.session_id, exc.message)
            raise
        reason = stop_reason(done, view.finish_reasons.pop(turn_id, None))
        result: JSON = {"stopReason": reason}
        if done.usage is not None:
            result["_meta"] = {"turnstoned": {"usage": msgspec.to_builtins(done.usage),
                                              "turnId": turn_id}}
        return result

    async def _command(self, engine: Engine, view: View, command: commands.Command,
                       arg: str) -> JSON:
        workspace = self.sink.questions_for(view.cwd)
        ctx = commands.Context(engine=engine, session_id=view.session_id, cwd=view.cwd,
                               turns=view.changed_turns,
                               mcp_question=workspace[0], policy_question=workspace[1])
        try:
            await command.run(ctx, arg)
        except EngineError as exc:
            ctx.say(f"/{command.name}: {exc.message}")
        if ctx.mcp_question is None and workspace[0] is not None:
            self.sink.answered(workspace[0])
        if ctx.policy_question is None and workspace[1] is not None:
            self.sink.answered(workspace[1])
        for said in ctx.said:
            self.sink.update(view.session_id, updates.chunk("agent_message_chunk", said))
        return {"stopReason": "end_turn"}

    async def cancel(self, params: SessionRef) -> None:
        if params.session_id not in self.sink.views:
            return
        try:
            self.engines.now().interrupt(params.session_id, None)
        except (EngineError, AcpError) as exc:
            log.info("session/cancel: %s", exc)

    async def set_mode(self, params: SetModeParams) -> JSON:
        self._set_mode(params.session_id, params.mode_id, "modeId")
        return {}

    def _set_mode(self, session_id: str, mode: str, field: str) -> None:
        self.view(session_id)
        if mode not in MODES:
            raise AcpError(INVALID_PARAMS, f"Invalid params: `params.{field}` must be one of "
                           f"{', '.join(MODES)}", "invalidParams")
        self.engines.now().set_mode(session_id, mode)  # type: ignore[arg-type]

    async def set_config_option(self, params: SetConfigOptionParams) -> JSON:
        if params.config_id != "mode" or not isinstance(params.value, str):
            raise AcpError(INVALID_PARAMS, f"Invalid params: no config option "
                           f"{params.config_id!r} takes {params.value!r} (options: mode)",
                           "invalidParams")
        self._set_mode(params.session_id, params.value, "value")
        mode = self.engines.now().get(params.session_id).policy.mode
        return {"configOptions": self._config_options(mode)}

    # ----------------------------------------------------------- extensions

    async def extension(self, method: str, raw: Any) -> Any:
        """``_turnstoned/<method>``: a turnstoned protocol v1 request."""
        name = method[len(EXTENSION):] if method.startswith(EXTENSION) else None
        call = EXTENSIONS.get(name) if name is not None else None
        if name is None or call is None:
            raise AcpError(-32601, f"Method not found: {method}", "methodNotFound")
        params_type = p.METHODS_BY_NAME[name].params
        params = decode(params_type, raw) if params_type is not None else None
        engine = await self.engines.get()
        result = call(engine, params)
        if inspect.isawaitable(result):
            result = await result
        return msgspec.to_builtins(result)


def _finish(engine: Engine, session_id: str) -> str | None:
    live = engine.sessions.live.get(session_id)
    return live.last_finish if live is not None else None


def _tasks(engine: Engine, session_id: str) -> list[Any]:
    from turnstoned.store.tasks import TaskStore

    return list(TaskStore(engine.store).of(session_id))
