"""The engine: the facade front ends call, behind a transport-free API.

Front ends (the stdio and resident daemon's handlers, ``turnstoned chat``
through them) call these methods and receive events through the
``EventSink`` they pass in. The engine builds the daemon's parts
(``build``), hands the ``Sessions`` service to the helpers that act on
sessions (task agents, coordinators, watches, previews) and answers the
editor's requests, converting results to their protocol shapes (``wire``).
No other module of core holds the engine.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnstoned import __version__, paths, sandbox, skills
from turnstoned import protocol as p
from turnstoned import tools as registry
from turnstoned.config import Config, ConfigError, resolve_model, save_model, with_overrides
from turnstoned.core import build, commands, wire
from turnstoned.core.agent import AgentHost
from turnstoned.core.approval.policy_files import POLICY_FILE, PolicyTrustError
from turnstoned.core.compaction import compactor
from turnstoned.core.coordinator import Coordinator
from turnstoned.core.errors import EngineError
from turnstoned.core.events import EventSink
from turnstoned.core.finder import Finder
from turnstoned.core.instructions import InstructionCache
from turnstoned.core.previews import Previews
from turnstoned.core.rewind import Rewinds
from turnstoned.core.session import Session
from turnstoned.core.sessions import Sessions
from turnstoned.core.undo import Checkpoints
from turnstoned.core.watches import WatchDesk
from turnstoned.llm.types import ModelError
from turnstoned.mcp.catalog import catalog_text
from turnstoned.mcp.models import LoginError, Opener
from turnstoned.mcp.project import PROJECT_FILE
from turnstoned.mcp.trust import TrustError
from turnstoned.places import within
from turnstoned.protocol import ErrorCode
from turnstoned.scopes import ScopeError, ScopeRef, Scopes, sessionless_refs
from turnstoned.store import SessionRow, Store
from turnstoned.store.memory import MemoryStore
from turnstoned.tools.base import SessionEnv

log = logging.getLogger(__name__)


class Engine:
    def __init__(self, config: Config, store: Store, sink: EventSink) -> None:
        self.store = store
        self.sink = sink
        self.services = services = build.services(config, store)
        self.mcp = services.mcp = build.mcp_manager(config)
        self.mcp.add_status_listener(lambda status: sink.notify(wire.status_changed(status)))
        self.projects = build.projects(config, store, self.mcp, sink)
        self.policies = build.policy_book(config, store, sink)
        self.sessions = sessions = Sessions(config, store, sink, services, self.policies)
        sessions.judge = self.judge = build.judge(sessions)
        sessions.checkpoints = checkpoints = Checkpoints(store, paths.data_dir() / "checkpoints")
        checkpoints.on_off = lambda session_id, why: sink.notify(p.SessionNotice(
            session_id=session_id, kind="checkpointsOff",
            text=f"Turns in this workspace cannot be undone: {why}", data={"reason": why}))
        self.rewinds = Rewinds(sessions, checkpoints)
        sessions.on_opened.append(self.projects.open)
        self.mcp.set_roots(lambda: sorted({str(s.env.workspace_root())
                                           for s in sessions.live.values()}))
        sessions.on_opened.append(lambda _: self.mcp.roots_changed())
        build.side_calls(sessions)
        services.set_mode = sessions.set_mode
        services.agents = AgentHost(sessions)
        self.coordinator = services.coordinator = Coordinator(sessions)
        self.watches = WatchDesk(sessions)
        services.watches_changed = self.watches.runner.poke
        assert services.previews is not None
        self.previews = Previews(services.previews, sessions)
        self.instructions = InstructionCache()
        self.finder = Finder()
        services.prompt_sections += [self._instruction_section, self._skill_section,
                                     self._mcp_section]
        sessions.on_closed += [lambda _: self.mcp.roots_changed(),
                               self.previews.session_closed, self.watches.session_closed,
                               lambda _: self.coordinator.session_changed()]
        sessions.on_turn_ended.append(lambda _: self.coordinator.session_changed())

    @property
    def config(self) -> Config:
        return self.sessions.config

    @config.setter
    def config(self, config: Config) -> None:  # e.g. the model a first run discovered
        self.sessions.config = config

    def start(self) -> None:
        """Begin background work (MCP connections, watches); call on the running event loop."""
        loop = asyncio.get_running_loop()
        loop.create_task(self.mcp.start(), name="mcp-start")
        loop.run_in_executor(None, sandbox.status)  # its probe runs a child: not on the loop
        self.watches.runner.start()
        self.previews.sweep()

    def _instruction_section(self, env: SessionEnv) -> str:
        return self.instructions.get(env.cwd).text

    def instruction_files(self, session: Session) -> list[p.InstructionFile]:
        """The project instructions ``session``'s model reads, for the editor to show."""
        return [p.InstructionFile(path=f.path, chars=f.chars, truncated=f.truncated)
                for f in self.instructions.get(session.env.cwd).files]

    def _mcp_section(self, env: SessionEnv) -> str:
        return catalog_text(self.mcp)

    def _skill_section(self, env: SessionEnv) -> str:
        """The session's loaded skill for its system message, ``{{model}}`` naming its model."""
        try:
            name = self.sessions.model(env.session_id).name
        except ModelError:
            name = ""
        return skills.prompt_section(env, name)

    # ----------------------------------------------------------- sessions

    def start_session(self, params: p.SessionStartParams) -> Session:
        return self.sessions.start(params)

    def row(self, session_id: str) -> SessionRow:
        return self.sessions.row(session_id)

    def get(self, session_id: str) -> Session:
        """A live session; one persisted by an earlier daemon is loaded, a closed one refused."""
        return self.sessions.get(session_id)

    def resume(self, session_id: str) -> Session:
        return self.sessions.resume(session_id)

    def parent_of(self, session_id: str) -> str | None:
        """The session that spawned a live session (a coordinator's child), if any."""
        live = self.sessions.live.get(session_id)
        return live.row.parent_id if live is not None else None

    @property
    def busy(self) -> bool:
        """A turn is running in some session."""
        return any(s.running for s in self.sessions.live.values())

    def list_sessions(self, cwd: str | None = None) -> list[p.SessionInfo]:
        """Every session, or those working in ``cwd`` or below it."""
        rows = self.store.list_sessions()
        if cwd is not None:
            root = os.path.realpath(cwd)
            rows = [r for r in rows if within(os.path.realpath(r.cwd), root)]
        return [self.sessions.info(row) for row in rows]

    async def delete_session(self, session_id: str) -> None:
        """Stop the session if it is live, then forget it."""
        if self.store.get_session(session_id) is None:
            raise EngineError(ErrorCode.SESSION_NOT_FOUND, f"no session {session_id!r}")
        if session_id in self.sessions.live:
            await self.sessions.close(session_id)
        self.store.delete_session(session_id)

    def set_mode(self, session_id: str, mode: p.ApprovalMode) -> p.SessionSetModeResult:
        return p.SessionSetModeResult(mode=mode, previous=self.sessions.set_mode(session_id, mode))

    async def close_session(self, session_id: str) -> None:
        await self.sessions.close(session_id)

    async def compact(self, session_id: str) -> p.SessionCompactResult:
        """Compact a session's context now, or at its running turn's next seam."""
        session = self.get(session_id)
        if session.turn is not None:
            session.compact_requested = True
            return p.SessionCompactResult(
                status="scheduled", text="The running turn compacts the context at its next step.")
        try:
            model = self.sessions.model(session_id)
        except ModelError as exc:
            raise EngineError(ErrorCode.CONFIG_ERROR, exc.message) from exc
        event = await compactor(session, self.config, model, self.sink).run(
            "manual", None, session.toolset().schemas)
        if event is None:
            return p.SessionCompactResult(
                status="unchanged", text="Nothing to compact: the context holds only recent turns.")
        return p.SessionCompactResult(status="compacted", text=event.text)

    # ----------------------------------------------------------- turns

    def start_turn(self, session_id: str, texts: list[str],
                   shown: p.EditorState | None = None,
                   mentions: Sequence[p.MentionInput] = (),
                   images: Sequence[p.ImageInput] = ()) -> tuple[str, bool]:
        if shown is not None or mentions:
            root = Path(self.get(session_id).env.cwd)
            for path in [*([shown.active_file] if shown and shown.active_file else []),
                         *(m.path for m in mentions)]:
                self.finder.used(root, path)
        return self.sessions.start_turn(session_id, texts, shown, mentions, images)

    def session_commands(self, params: p.SessionCommandsParams) -> p.SessionCommandsResult:
        if params.session_id is not None:
            catalog = skills.catalog_for(self.get(params.session_id).env)
        elif params.root is not None and os.path.isabs(params.root):
            catalog = skills.build_catalog(self.services.config_dir,
                                           skills.skills_root(Path(params.root), None), self.mcp)
        else:
            raise EngineError(ErrorCode.INVALID_PARAMS, "give sessionId, or an absolute root")
        return p.SessionCommandsResult(commands=commands.listed(catalog))

    async def find_files(self, params: p.FindFilesParams) -> p.FindFilesResult:
        if params.session_id is not None:
            root = Path(self.get(params.session_id).env.cwd)
        elif params.root is not None and os.path.isabs(params.root):
            root = Path(os.path.realpath(params.root))
        else:
            raise EngineError(ErrorCode.INVALID_PARAMS, "give sessionId, or an absolute root")
        if not root.is_dir():
            raise EngineError(ErrorCode.INVALID_PARAMS, f"{root} is not a folder")
        return await self.finder.find(root, params.query, max(1, min(params.limit, 500)))

    def interrupt(self, session_id: str, turn_id: str | None) -> None:
        self.sessions.interrupt(session_id, turn_id)

    # ----------------------------------------------------------- models

    async def list_models(self) -> p.ModelListResult:
        """What the configured server lists; with no model configured, what the local
        servers on this machine serve (for the editor to offer)."""
        from turnstoned.llm import discovery

        cfg = self.config.model
        found = resolve_model(cfg)
        if isinstance(found, str):
            local = await asyncio.to_thread(discovery.find_local)
            return p.ModelListResult(configured=False, models=[
                p.ModelOption(name=m, base_url=s.base_url, server=s.name)
                for s in local for m in s.models])
        listing = await asyncio.to_thread(discovery.list_models, found.base_url, found.api_key)
        names = listing.ids if found.name in listing.ids else [found.name, *listing.ids]
        return p.ModelListResult(
            configured=True, current=found.name, error=listing.problem(),
            models=[p.ModelOption(name=n, base_url=listing.base_url, server="configured",
                                  current=n == found.name,
                                  context_window=found.context_window if n == found.name
                                  else None) for n in names])

    def use_model(self, params: p.ModelUseParams) -> p.ModelUseResult:
        """The model new sessions (and sessions without their own) use; saved to the
        user's config.toml unless ``save`` is false."""
        saved = None
        if params.save:
            try:
                saved = str(save_model(params.name, params.base_url))
            except ConfigError as exc:
                raise EngineError(ErrorCode.CONFIG_ERROR, str(exc)) from exc
        values: dict[str, Any] = {"name": params.name}
        if params.base_url:
            values["base_url"] = params.base_url
        self.config = with_overrides(self.config, {"model": values})
        return p.ModelUseResult(model=params.name, base_url=self.config.model.base_url,
                                saved_to=saved)

    def set_session_model(self, params: p.SessionSetModelParams) -> p.SessionSetModelResult:
        previous = self.sessions.set_model(params.session_id, params.model)
        return p.SessionSetModelResult(model=params.model, previous=previous)

    # ----------------------------------------------------------- undo

    async def turn_changes(self, params: p.TurnRef) -> p.TurnChangesResult:
        return await self.rewinds.changes(params)

    async def undo(self, params: p.TurnUndoParams) -> p.TurnUndoResult:
        return await self.rewinds.undo(params)

    async def redo(self, params: p.TurnRedoParams) -> p.TurnUndoResult:
        return await self.rewinds.redo(params)

    async def fork(self, params: p.SessionForkParams) -> p.SessionForkResult:
        return await self.rewinds.fork(params)

    # ----------------------------------------------------------- queries

    def tool_list(self, session_id: str | None) -> list[p.ToolInfo]:
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

    async def read_preview(self, params: p.PreviewReadParams) -> p.PreviewReadResult:
        return await self.previews.read(params)

    def watch_list(self, session_id: str | None) -> list[p.WatchInfo]:
        return self.watches.list(session_id)

    def watch_cancel(self, session_id: str, name: str) -> p.WatchCancelResult:
        return self.watches.cancel(session_id, name)

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
        found = MemoryStore(self.store).all_in(self._memory_places(scope, session_id))
        return [p.MemoryInfo(name=x.name, scope=x.scope, type=x.type, description=x.description,
                             content=x.content, updated_at=wire.iso(x.updated_at)) for x in found]

    def memory_delete(self, name: str, scope: p.MemoryScope, session_id: str | None) -> bool:
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

    # ----------------------------------------------------------- approvals

    def grant_list(self, session_id: str) -> p.GrantListResult:
        return wire.grant_list(self.get(session_id).policy)

    def grant_revoke(self, session_id: str, rule: str) -> p.GrantRevokeResult:
        policy = self.get(session_id).policy
        if rule not in policy.grants:
            if rule in policy.configured:
                raise EngineError(ErrorCode.INVALID_PARAMS,
                                  f"{rule!r} is set in config.toml ([tools] auto_approve_tools)")
            raise EngineError(ErrorCode.GRANT_NOT_FOUND, f"session has no grant {rule!r}")
        policy.grants.discard(rule)
        policy.on_grant(policy.grants)
        return p.GrantRevokeResult(revoked=True)

    def policy_list(self, session_id: str) -> p.PolicyListResult:
        env = self.get(session_id).env
        return self.policies.listing(Path(env.workspace or env.cwd).resolve())

    def policy_trust(self, params: p.PolicyTrustParams) -> p.PolicyTrustResult:
        """``policy/trust``: trust or revoke a workspace's policies file."""
        if params.config_path is not None:
            path = Path(params.config_path)
            if not path.is_absolute() or not str(path).endswith(str(POLICY_FILE)):
                raise EngineError(ErrorCode.INVALID_PARAMS,
                                  f"configPath must be an absolute path to a {POLICY_FILE} file")
            workspace = path.parent.parent
        elif params.workspace is not None and Path(params.workspace).is_absolute():
            workspace = Path(params.workspace)
        else:
            raise EngineError(ErrorCode.INVALID_PARAMS,
                              "workspace (an absolute folder) or configPath is required")
        try:
            found = self.policies.set_trusted(workspace, params.trusted, params.hash)
        except PolicyTrustError as exc:
            raise EngineError(ErrorCode.INVALID_PARAMS, str(exc)) from exc
        listed = self.policies.listing(found.workspace).policies
        return p.PolicyTrustResult(workspace=str(found.workspace), config_path=str(found.path),
                                   hash=found.hash, trusted=params.trusted,
                                   policies=[x for x in listed if x.source == "workspace"])

    # ----------------------------------------------------------- MCP

    def mcp_servers(self) -> list[p.McpServerInfo]:
        return [wire.server_info(s) for s in self.mcp.status()]

    async def mcp_trust(self, params: p.McpServerTrustParams) -> p.McpServerTrustResult:
        """``mcpServer/trust``: trust or revoke the config of a workspace (or a .mcp.json)."""
        if params.config_path is not None:
            path = Path(params.config_path)
            if not path.is_absolute() or path.name != PROJECT_FILE:
                raise EngineError(ErrorCode.INVALID_PARAMS,
                                  f"configPath must be an absolute path to a {PROJECT_FILE} file")
            workspace = path.parent
        elif params.workspace is not None and Path(params.workspace).is_absolute():
            workspace = Path(params.workspace)
        else:
            raise EngineError(ErrorCode.INVALID_PARAMS,
                              "workspace (an absolute folder) or configPath is required")
        try:
            outcome = await self.projects.set_trusted(workspace, params.trusted, params.hash)
        except TrustError as exc:
            raise EngineError(ErrorCode.INVALID_PARAMS, str(exc)) from exc
        return p.McpServerTrustResult(
            workspace=str(outcome.project.workspace), config_path=str(outcome.project.path),
            hash=outcome.project.hash, trusted=outcome.trusted,
            servers=[wire.server_info(s) for s in outcome.servers])

    async def mcp_login(self, name: str, opener: Opener) -> p.McpServerInfo:
        """``mcpServer/login``: the server's OAuth login (``opener`` shows the page)."""
        try:
            return wire.server_info(await self.mcp.login(name, opener))
        except KeyError as exc:
            raise EngineError(ErrorCode.MCP_SERVER_NOT_FOUND, str(exc.args[0])) from exc
        except LoginError as exc:
            raise EngineError(ErrorCode.MCP_LOGIN_FAILED, f"login to {name!r} failed: {exc}"
                              ) from None

    async def mcp_logout(self, name: str) -> p.McpServerInfo:
        try:
            return wire.server_info(await self.mcp.logout(name))
        except KeyError as exc:
            raise EngineError(ErrorCode.MCP_SERVER_NOT_FOUND, str(exc.args[0])) from exc

    async def mcp_refresh(self, name: str | None) -> list[p.McpChange]:
        try:
            changes = await self.mcp.refresh(name)
        except KeyError as exc:
            raise EngineError(ErrorCode.MCP_SERVER_NOT_FOUND, str(exc.args[0])) from exc
        return [wire.change_info(c) for c in changes]

    # ----------------------------------------------------------- the daemon

    async def health(self, probe: bool = False) -> p.DaemonHealthResult:
        """Version, load and model; with ``probe``, whether the model server answers."""
        try:
            model = self.sessions.model()
        except ModelError:
            model = None
        live = self.sessions.live.values()
        result = p.DaemonHealthResult(
            version=__version__, protocol_version=p.PROTOCOL_VERSION, sessions=len(live),
            running_turns=sum(1 for s in live if s.running),
            model=model.name if model else None, mcp=wire.mcp_health(self.mcp),
            sandbox=wire.sandbox_health(await asyncio.to_thread(sandbox.status)),
            model_url=model.base_url if model else None,  # as configured (null: OpenAI's)
        )
        if self.services.web is not None:
            from turnstoned.tools import web_search

            result.web_search = web_search.choose(self.services.web.settings,
                                                  self.mcp.tools()).describe()
        if probe and model is not None:
            from turnstoned.llm.discovery import list_models  # imports openai: not on startup

            listing = await asyncio.to_thread(list_models, model.base_url, model.api_key)
            result.model_url, result.model_reachable = listing.base_url, listing.reached
            result.model_error = listing.problem()
        return result

    async def prewarm(self) -> None:
        """Open the connection to the configured model's server, so a first turn finds it."""
        from turnstoned.llm.openai_chat import prewarm  # imports openai: not on startup

        try:
            await prewarm(self.sessions.model())
        except ModelError:
            pass  # nothing configured: the first turn says how to configure it

    def terminate(self) -> None:
        """Last resort at process exit, outside any event loop: kill what sessions spawned."""
        self.watches.runner.kill_now()
        self.sessions.kill_now()
        self.store.close()

    async def shutdown(self) -> None:
        """Stop watches, turns, shells and MCP servers (idempotent)."""
        if self.sessions.closing:
            return
        self.sessions.closing = True
        await self.watches.runner.close()
        await self.projects.close()
        await self.policies.close()
        await self.mcp.close()
        if self.services.web is not None:
            await self.services.web.aclose()
        await self.sessions.shutdown()


def _workspace(row: SessionRow) -> Path | None:
    return Path(row.workspace) if row.workspace else None
