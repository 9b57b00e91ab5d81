"""The engine: every session of the daemon, behind a transport-free API.

Front ends (the stdio server, ``turnstoned chat``) call these methods and
receive events through the ``EventSink`` they pass in.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from pathlib import Path

from turnstoned import __version__, paths, skills
from turnstoned import protocol as p
from turnstoned.config import Config, resolve_model
from turnstoned.core import approvallink, mcplink, weblink
from turnstoned.core import messages as m
from turnstoned.core.agent import AgentHost
from turnstoned.core.approval import ApprovalPolicy, grants
from turnstoned.core.compaction import compactor
from turnstoned.core.coordinator import Coordinator
from turnstoned.core.errors import EngineError
from turnstoned.core.events import EventSink
from turnstoned.core.session import Session, TurnState, iso, resolve_dir, session_info
from turnstoned.core.toolset import SearchSettings
from turnstoned.core.turn import TurnRunner
from turnstoned.core.watches import WatchDesk
from turnstoned.protocol import ErrorCode
from turnstoned.scopes import ScopeError, ScopeRef, Scopes, sessionless_refs
from turnstoned.store import SessionRow, Store
from turnstoned.tools.base import Services, SessionEnv, ToolSettings

log = logging.getLogger(__name__)

# Turns a session may start on its own (a watch fired) before the user speaks again.
MAX_WAKES = 5


class Engine:
    def __init__(self, config: Config, store: Store, sink: EventSink) -> None:
        self.config = config
        self.store = store
        self.sink = sink
        self.sessions: dict[str, Session] = {}
        self.services = Services(store=store, data_dir=paths.data_dir(),
                                 config_dir=paths.config_dir())
        self.services.prompt_sections.append(self._skill_section)
        self.mcp = mcplink.make_manager(config)
        self.services.mcp = self.mcp
        self.services.notify = config.notify
        self.services.agents = AgentHost(self)
        self.coordinator = Coordinator(self)
        self.services.coordinator = self.coordinator
        self.services.prompt_sections.append(self._mcp_section)
        self.mcp.add_status_listener(lambda status: sink.notify(mcplink.status_changed(status)))
        self.projects = mcplink.make_projects(config, store, self.mcp, sink)
        weblink.attach(self, config)
        self.watches = WatchDesk(self)
        self.services.watches_changed = self.watches.runner.poke
        self.policies = approvallink.make_book(config, store, sink)
        self.judge = approvallink.make_judge(self)
        self._closed = False

    def start(self) -> None:
        """Begin background work (MCP connections, watches); call on the running event loop."""
        asyncio.get_running_loop().create_task(self.mcp.start(), name="mcp-start")
        self.watches.runner.start()
        weblink.sweep_previews(self)

    def _mcp_section(self, env: SessionEnv) -> str:
        from turnstoned.mcp.catalog import catalog_text

        return catalog_text(self.mcp)

    def _skill_section(self, env: SessionEnv) -> str:
        """The session's loaded skill for its system message, ``{{model}}`` naming its model."""
        live = self.sessions.get(env.session_id)
        model = resolve_model(self.config.model, live.model if live else None)
        return skills.prompt_section(env, "" if isinstance(model, str) else model.name)

    # ----------------------------------------------------------- sessions

    def _settings(self) -> ToolSettings:
        t, mdl = self.config.tools, self.config.model
        return ToolSettings(
            timeout=t.timeout, truncation=t.truncation, context_window=mdl.context_window,
            supports_vision=mdl.supports_vision, env_passthrough=tuple(t.env_passthrough),
            max_background_shells=t.max_background_shells,
        )

    def _open(self, row: SessionRow) -> Session:
        store = self.store
        env = SessionEnv(
            session_id=row.id, kind=row.kind, cwd=Path(row.cwd), workspace=_workspace(row),
            settings=self._settings(),
            persisted=dict(row.state), services=self.services,
            save_persisted=lambda state: store.update_session(row.id, state=state),
        )
        workspace = (env.workspace or env.cwd).resolve()
        policy = ApprovalPolicy(
            skip_permissions=row.skip_permissions or self.config.tools.skip_permissions,
            grants=grants.load(row.grants),
            configured=frozenset(self.config.tools.auto_approve_tools),
            timeout=self.config.tools.approval_timeout_seconds,
            on_grant=lambda saved: store.update_session(row.id, grants=sorted(saved)),
            policies=lambda: self.policies.policies(workspace)[0], judge=self.judge,
        )
        session = Session(row, store, env, policy)
        self.projects.open(env.workspace or env.cwd)
        self.policies.open(workspace)
        t = self.config.tools
        session.search = SearchSettings(mode=t.search, threshold=t.search_threshold,
                                        max_results=t.search_max_results,
                                        native=self.config.model.native_tool_search)
        env.notice = lambda kind, text, data: self.notice(session, kind, text, data)
        env.announce = lambda kind, text, data: self.sink.notify(
            p.SessionNotice(session_id=session.id, kind=kind, text=text, data=dict(data)))
        self.sessions[row.id] = session
        return session

    def notice(self, session: Session, kind: str, text: str, data: dict[str, object],
               keep: bool = False) -> None:
        """A session-level event: tell the editor now, the model at the next seam (``keep``:
        the model's copy is stored, so it survives a daemon restart until a turn folds it)."""
        msg = m.Message(role="user", content=text, id=m.new_id("notice"), notice=kind)
        if keep:
            self.store.queue_input(session.id, msg.id, m.encode(msg))
        session.queued.append(msg)
        self.sink.notify(p.SessionNotice(session_id=session.id, kind=kind, text=text,
                                         data=dict(data)))

    def start_session(self, params: p.SessionStartParams, parent_id: str | None = None) -> Session:
        cwd = resolve_dir(params.cwd, Path(os.getcwd()))
        if not cwd.is_dir():
            raise EngineError(ErrorCode.INVALID_PARAMS, f"cwd is not a directory: {cwd}")
        workspace = resolve_dir(params.workspace, cwd) if params.workspace else None
        now = time.time()
        row = SessionRow(
            id=secrets.token_hex(16), kind=params.kind, cwd=str(cwd),
            workspace=str(workspace) if workspace else None, model=params.model,
            title=params.title, skip_permissions=params.skip_permissions, grants=(), state={},
            closed=False, created_at=now, updated_at=now, parent_id=parent_id,
        )
        self.store.create_session(row)
        return self._open(row)

    def row(self, session_id: str) -> SessionRow:
        row = self.store.get_session(session_id)
        if row is None:
            raise EngineError(ErrorCode.SESSION_NOT_FOUND, f"no session {session_id!r}")
        return row

    def get(self, session_id: str) -> Session:
        """A live session; one persisted by an earlier daemon is loaded, a closed one refused."""
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        if self.row(session_id).closed:
            raise EngineError(ErrorCode.SESSION_CLOSED,
                              f"session {session_id!r} is closed; session/resume reopens it")
        return self.resume(session_id)

    def resume(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        row = self.row(session_id)
        if row.closed:
            self.store.update_session(session_id, closed=False)
            row = self.store.get_session(session_id) or row
        session = self._open(row)
        summary, bodies = self.store.load_view(session_id)  # what the model read last
        history = [m.decode(body) for body in bodies]
        repaired = m.repair(history)
        if len(repaired) != len(history):
            fresh = [x for x in repaired if x not in history]
            self.store.append_messages(session_id, [(x.role, x.turn_id, m.encode(x)) for x in fresh])
        session.history = ([m.decode(summary)] if summary else []) + repaired
        session.queued = [m.decode(body) for body in self.store.load_queued(session_id)]
        return session

    def list_sessions(self) -> list[p.SessionInfo]:
        out = []
        for row in self.store.list_sessions():
            live = self.sessions.get(row.id)
            out.append(live.info() if live else session_info(row, row.title, row.updated_at, "idle"))
        return out

    async def close_session(self, session_id: str) -> None:
        session = self.get(session_id)
        await self._stop_turn(session)
        await session.env.close()
        self.store.update_session(session_id, closed=True)
        self.sessions.pop(session_id, None)
        weblink.remove_previews(self, session_id)
        self.watches.session_closed(session_id)
        self.coordinator.session_changed()

    async def compact(self, session_id: str) -> p.SessionCompactResult:
        """Compact a session's context now, or at its running turn's next seam."""
        session = self.get(session_id)
        if session.turn is not None:
            session.compact_requested = True
            return p.SessionCompactResult(
                status="scheduled", text="The running turn compacts the context at its next step.")
        model = resolve_model(self.config.model, session.model)
        if isinstance(model, str):
            raise EngineError(ErrorCode.CONFIG_ERROR, model)
        event = await compactor(session, self.config, model, self.sink).run(
            "manual", None, session.toolset().schemas)
        if event is None:
            return p.SessionCompactResult(
                status="unchanged", text="Nothing to compact: the context holds only recent turns.")
        return p.SessionCompactResult(status="compacted", text=event.text)

    # ----------------------------------------------------------- turns

    def start_turn(self, session_id: str, texts: list[str]) -> tuple[str, bool]:
        session = self.get(session_id)
        text = "\n\n".join(t for t in texts if t)
        if not text.strip():
            raise EngineError(ErrorCode.INVALID_PARAMS, "input: at least one non-empty text item")
        if session.turn is not None:
            session.queue_input(text)
            return session.turn.id, True
        session.wakes = 0
        # Input queued for a turn that ended first (or that a crash ended), and notices
        # that arrived while idle, lead this turn's message (one user message: strict
        # chat templates refuse two in a row).
        earlier = session.take_queued()
        content = "\n\n".join([*(q.text() for q in earlier), text])
        message = m.Message(role="user", content=content, id=m.new_id("user"))
        return self._launch(session, message, earlier), False

    def _launch(self, session: Session, message: m.Message, folded: list[m.Message]) -> str:
        """Commit the turn's leading message (folding ``folded`` queued ones) and start it."""
        turn = TurnState(id=m.new_id("turn"), generation=session.generation)
        message.turn_id = turn.id
        session.commit([message], folded=folded)
        session.turn = turn
        runner = TurnRunner(session, turn, self.config, self.sink)
        turn.task = asyncio.get_running_loop().create_task(runner.run(), name=f"turn-{turn.id}")
        turn.task.add_done_callback(lambda _: self._turn_ended(session, turn))
        return turn.id

    def _turn_ended(self, session: Session, turn: TurnState) -> None:
        """Coordinators waiting for this session hear of it; a watch report that arrived as
        the turn was ending starts the next one (unless the user stopped this one: then it
        waits for them)."""
        self.coordinator.session_changed()
        if not self._closed and not turn.cancel.is_set() and self.sessions.get(session.id) is session:
            self.wake(session)

    def wake(self, session: Session) -> None:
        """Start a turn for the watch reports queued in an idle session."""
        queued = session.queued
        if session.turn is not None or not any(q.notice == "watch" for q in queued):
            return
        if session.wakes >= MAX_WAKES:
            log.info("session %s: %d turns started by watches in a row; waiting for the user",
                     session.id, session.wakes)
            return
        session.wakes += 1
        taken = session.take_queued()
        notice = None if any(not q.notice for q in taken) else taken[0].notice
        message = m.Message(role="user", content="\n\n".join(q.text() for q in taken),
                            id=m.new_id("user"), notice=notice)
        self._launch(session, message, taken)

    def interrupt(self, session_id: str, turn_id: str | None) -> None:
        session = self.get(session_id)
        turn = session.turn
        if turn is None:
            return
        if turn_id is not None and turn_id != turn.id:
            raise EngineError(ErrorCode.TURN_NOT_FOUND, f"turn {turn_id!r} is not running")
        session.generation += 1
        turn.cancel.set()
        if turn.task is not None:
            turn.task.cancel()

    async def _stop_turn(self, session: Session) -> None:
        turn = session.turn
        if turn is None or turn.task is None:
            return
        self.interrupt(session.id, None)
        await asyncio.wait([turn.task], timeout=5)

    # ----------------------------------------------------------- queries

    def tool_list(self, session_id: str | None) -> list[p.ToolInfo]:
        from turnstoned import tools as registry

        specs = registry.registry()
        mcp_tools = self.mcp.tools()
        if session_id is None:
            schemas = registry.TOOLS + [t.openai_schema() for t in mcp_tools]
        else:
            schemas = self.get(session_id).toolset().schemas
        servers = {t.name: t.server for t in mcp_tools}
        out = []
        for schema in schemas:
            fn = schema["function"]
            name = fn["name"]
            out.append(p.ToolInfo(
                name=name, description=fn["description"],
                source="mcp" if name in servers else "builtin", server=servers.get(name),
                auto_approve=bool(specs[name].auto_approve) if name in specs else name == "tool_search",
            ))
        return out

    async def read_file_change(self, session_id: str, call_id: str) -> p.FileChangeReadResult:
        """The whole old and new text of a file change whose approval is being asked."""
        session = self.get(session_id)
        call = session.policy.awaiting.get(call_id)
        if call is None:
            raise EngineError(ErrorCode.FILE_CHANGE_NOT_PENDING,
                              f"call {call_id!r} is not awaiting approval in this session")
        proposal = call.file_change
        if proposal is None:
            raise EngineError(ErrorCode.FILE_CHANGE_NOT_PENDING,
                              f"call {call_id!r} ({call.tool}) proposes no file change")
        old, new = await asyncio.to_thread(proposal.texts)
        return p.FileChangeReadResult(path=proposal.path, old_text=old, new_text=new)

    # ----------------------------------------------------------- memories and skills

    def _memory_places(self, scope: p.MemoryScope | None, session_id: str | None) -> list[ScopeRef]:
        """Where an editor's ``memory/list`` or ``memory/delete`` looks (see ``scopes``)."""
        try:
            if session_id is None:
                return sessionless_refs(scope)
            row = self.row(session_id)
            found = Scopes.for_session(row.id, row.kind, Path(row.cwd), _workspace(row))
            return found.for_editor(scope)
        except ScopeError as exc:
            raise EngineError(ErrorCode.INVALID_PARAMS, str(exc)) from exc

    def memory_list(self, scope: p.MemoryScope | None, session_id: str | None) -> list[p.MemoryInfo]:
        from turnstoned.store.memory import MemoryStore

        found = MemoryStore(self.store).all_in(self._memory_places(scope, session_id))
        return [p.MemoryInfo(name=x.name, scope=x.scope, type=x.type, description=x.description,
                             content=x.content, updated_at=iso(x.updated_at)) for x in found]

    def memory_delete(self, name: str, scope: p.MemoryScope, session_id: str | None) -> bool:
        from turnstoned.store.memory import MemoryStore

        refs = self._memory_places(scope, session_id)
        if not refs:
            raise EngineError(ErrorCode.INVALID_PARAMS, "that session has no project scope "
                              "(no workspace folder, not inside a git repository)")
        return MemoryStore(self.store).delete(refs[0], name)

    def skill_list(self, session_id: str | None) -> list[p.SkillInfo]:
        """The skills a session (or, without one, the user) can load, and its active one."""
        root, active = None, None
        if session_id is not None:
            row = self.row(session_id)
            root = skills.skills_root(Path(row.cwd), _workspace(row))
            record = row.state.get(skills.ACTIVE_KEY)
            active = record.get("name") if isinstance(record, dict) else None
        catalog = skills.build_catalog(self.services.config_dir, root, self.services.mcp)
        return [p.SkillInfo(name=x.name, description=x.description, category=x.category,
                            risk=x.risk, origin=x.origin, active=x.name == active)
                for x in catalog.skills]

    # ----------------------------------------------------------- the daemon

    async def health(self, probe: bool = False) -> p.DaemonHealthResult:
        """Version, load and model; with ``probe``, whether the model server answers."""
        model = resolve_model(self.config.model)
        result = p.DaemonHealthResult(
            version=__version__, protocol_version=p.PROTOCOL_VERSION, sessions=len(self.sessions),
            running_turns=sum(1 for s in self.sessions.values() if s.running),
            model=None if isinstance(model, str) else model.name, mcp=mcplink.health(self.mcp),
        )
        if probe and not isinstance(model, str):
            from turnstoned.llm.discovery import list_models  # imports openai: not on startup

            listing = await asyncio.to_thread(list_models, model.base_url, model.api_key)
            result.model_url, result.model_reachable = listing.base_url, listing.reached
            result.model_error = listing.problem()
        return result

    def terminate(self) -> None:
        """Last resort at process exit, outside any event loop: kill what sessions spawned."""
        self.watches.runner.kill_now()
        for session in self.sessions.values():
            session.env.kill_now()
        self.store.close()

    def mcp_servers(self) -> list[p.McpServerInfo]:
        return [mcplink.server_info(s) for s in self.mcp.status()]

    async def mcp_trust(self, params: p.McpServerTrustParams) -> p.McpServerTrustResult:
        return await mcplink.set_trust(self.projects, params)

    def grant_list(self, session_id: str) -> p.GrantListResult:
        return approvallink.grant_list(self.get(session_id))

    def grant_revoke(self, session_id: str, rule: str) -> p.GrantRevokeResult:
        return approvallink.grant_revoke(self.get(session_id), rule)

    def policy_list(self, session_id: str) -> p.PolicyListResult:
        return self.policies.listing(approvallink.workspace_of(self.get(session_id)))

    def policy_trust(self, params: p.PolicyTrustParams) -> p.PolicyTrustResult:
        return approvallink.policy_trust(self.policies, params)

    async def mcp_refresh(self, name: str | None) -> list[p.McpChange]:
        try:
            changes = await self.mcp.refresh(name)
        except KeyError as exc:
            raise EngineError(ErrorCode.MCP_SERVER_NOT_FOUND, str(exc.args[0])) from exc
        return [mcplink.change_info(c) for c in changes]

    async def shutdown(self) -> None:
        """Stop watches, turns, shells and MCP servers (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self.watches.runner.close()
        await self.projects.close()
        await self.policies.close()
        await self.mcp.close()
        await weblink.close(self)
        for session in list(self.sessions.values()):
            try:
                await self.close_session_runtime(session)
            except Exception:  # shutting down: log and keep closing the others
                log.exception("closing session %s", session.id)

    async def close_session_runtime(self, session: Session) -> None:
        """Stop a session's turn and shells without marking it closed (daemon exit)."""
        await self._stop_turn(session)
        await session.env.close()


def _workspace(row: SessionRow) -> Path | None:
    return Path(row.workspace) if row.workspace else None
