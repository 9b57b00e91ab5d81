"""The daemon's live sessions and their turns: the service every helper of the engine uses.

``Sessions`` opens, resumes and closes sessions, starts, wakes and interrupts
their turns, queues notices for them, and says which model a session uses
(``model``: one answer, one error kind). Helpers that act on sessions (task
agents, coordinators, watches, previews) are given this service, never the
engine; they hear of a closed session or an ended turn through ``on_closed``
and ``on_turn_ended``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnstoned import protocol as p
from turnstoned import sandbox
from turnstoned.config import Config, ModelSettings, resolve_model
from turnstoned.core import commands, editor, finder, pictures, wire
from turnstoned.core import messages as m
from turnstoned.core.approval import ApprovalPolicy, grants
from turnstoned.core.errors import EngineError
from turnstoned.core.events import EventSink
from turnstoned.core.session import Session, TurnState, resolve_dir
from turnstoned.core.toolset import SearchSettings
from turnstoned.core.turn import TurnRunner
from turnstoned.llm.types import ModelError, OnUsage
from turnstoned.protocol import ErrorCode
from turnstoned.store import SessionRow, Store
from turnstoned.tools.base import MODE_KEY, Services, SessionEnv, ToolSettings

if TYPE_CHECKING:
    from turnstoned.core.approval.judge import Judge
    from turnstoned.core.approval.policy_files import PolicyBook
    from turnstoned.core.undo import Checkpoints

log = logging.getLogger(__name__)

# Turns a session may start on its own (a watch fired) before the user speaks again.
MAX_WAKES = 5


def mode_of(row: SessionRow, config: Config) -> p.ApprovalMode:
    """A session's approval mode: as set, else the configured default (older sessions)."""
    mode = row.state.get(MODE_KEY)
    return mode if mode in ("read-only", "auto", "full-access", "plan") else config.approvals.mode


class Sessions:
    """Every live session of the daemon, and the turns running in them."""

    def __init__(self, config: Config, store: Store, sink: EventSink, services: Services,
                 policies: PolicyBook) -> None:
        self.config = config
        self.store = store
        self.sink = sink
        self.services = services
        self.policies = policies
        self.judge: Judge | None = None
        self.checkpoints: Checkpoints | None = None
        self.live: dict[str, Session] = {}
        # A workspace a session opened in (MCP project trust asks about its .mcp.json).
        self.on_opened: list[Callable[[Path], None]] = []
        self.on_closed: list[Callable[[str], None]] = []
        self.on_turn_ended: list[Callable[[Session], None]] = []
        self.closing = False  # the daemon is shutting down: no turn starts on its own

    # ----------------------------------------------------------- models

    def model(self, session_id: str | None = None) -> ModelSettings:
        """The model a session's calls go to (the configured one without a session);
        raises ``ModelError("notConfigured")`` saying how to configure one."""
        override = None
        if session_id is not None:
            live = self.live.get(session_id)
            if live is not None:
                override = live.model
            else:
                row = self.store.get_session(session_id)
                override = row.model if row is not None else None
        found = resolve_model(self.config.model, override)
        if isinstance(found, str):
            raise ModelError("notConfigured", found)
        return found

    def spend(self, session_id: str) -> OnUsage | None:
        """Where a side call for this session counts its tokens (its running turn's tally)."""
        live = self.live.get(session_id)
        return live.spend() if live is not None else None

    # ----------------------------------------------------------- opening

    def _settings(self) -> ToolSettings:
        t, mdl = self.config.tools, self.config.model
        return ToolSettings(
            timeout=t.timeout, truncation=t.truncation, context_window=mdl.context_window,
            supports_vision=mdl.supports_vision, env_passthrough=tuple(t.env_passthrough),
            max_background_shells=t.max_background_shells,
        )

    def _open(self, row: SessionRow) -> Session:
        store, tools = self.store, self.config.tools
        env = SessionEnv(
            session_id=row.id, kind=row.kind, cwd=Path(row.cwd),
            workspace=Path(row.workspace) if row.workspace else None, settings=self._settings(),
            persisted=dict(row.state), services=self.services,
            save_persisted=lambda state: store.update_session(row.id, state=state),
        )
        workspace = (env.workspace or env.cwd).resolve()
        policy = ApprovalPolicy(
            skip_permissions=row.skip_permissions or tools.skip_permissions,
            mode=mode_of(row, self.config), sandbox=sandbox.status().available,
            grants=grants.load(row.grants), configured=frozenset(tools.auto_approve_tools),
            timeout=tools.approval_timeout_seconds,
            on_grant=lambda saved: store.update_session(row.id, grants=sorted(saved)),
            policies=lambda: self.policies.policies(workspace)[0], judge=self.judge,
        )
        session = Session(row, store, env, policy)
        for opened in self.on_opened:
            opened(env.workspace or env.cwd)
        self.policies.open(workspace)
        session.search = SearchSettings(mode=tools.search, threshold=tools.search_threshold,
                                        max_results=tools.search_max_results,
                                        native=self.config.model.native_tool_search)
        env.notice = lambda kind, text, data: self.notice(session, kind, text, data)
        env.announce = lambda kind, text, data: self.sink.notify(
            p.SessionNotice(session_id=session.id, kind=kind, text=text, data=dict(data)))
        env.emit = self.sink.notify
        self.live[row.id] = session
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

    def start(self, params: p.SessionStartParams, parent_id: str | None = None) -> Session:
        cwd = resolve_dir(params.cwd, Path(os.getcwd()))
        if not cwd.is_dir():
            raise EngineError(ErrorCode.INVALID_PARAMS, f"cwd is not a directory: {cwd}")
        workspace = resolve_dir(params.workspace, cwd) if params.workspace else None
        now = time.time()
        mode = params.approval_mode or self.config.approvals.mode
        row = SessionRow(
            id=secrets.token_hex(16), kind=params.kind, cwd=str(cwd),
            workspace=str(workspace) if workspace else None, model=params.model,
            title=params.title, skip_permissions=params.skip_permissions, grants=(),
            state={MODE_KEY: mode},
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
        session = self.live.get(session_id)
        if session is not None:
            return session
        if self.row(session_id).closed:
            raise EngineError(ErrorCode.SESSION_CLOSED,
                              f"session {session_id!r} is closed; session/resume reopens it")
        return self.resume(session_id)

    def resume(self, session_id: str) -> Session:
        session = self.live.get(session_id)
        if session is not None:
            return session
        row = self.row(session_id)
        if row.closed:
            self.store.update_session(session_id, closed=False)
            row = self.store.get_session(session_id) or row
        session = self._open(row)
        self.reload(session)
        session.queued = [m.decode(body) for body in self.store.load_queued(session_id)]
        return session

    def reload(self, session: Session) -> None:
        """Read what the model reads from the store (after a resume, a rewind)."""
        summary, bodies = self.store.load_view(session.id)  # what the model read last
        history = [m.decode(body) for body in bodies]
        repaired = m.repair(history)
        if len(repaired) != len(history):
            fresh = [x for x in repaired if x not in history]
            self.store.append_messages(session.id, [(x.role, x.turn_id, m.encode(x)) for x in fresh])
        session.history = ([m.decode(summary)] if summary else []) + repaired
        session.generation += 1

    def set_mode(self, session_id: str, mode: p.ApprovalMode) -> p.ApprovalMode:
        """Change a session's approval mode (from its next tool call); the previous one."""
        session = self.get(session_id)
        previous = session.policy.mode
        session.policy.mode = mode
        session.env.persist(MODE_KEY, mode)
        if mode != previous:
            self.sink.notify(p.SessionModeChanged(session_id=session_id, mode=mode,
                                                  previous=previous))
        return previous

    def set_model(self, session_id: str, model: str) -> str | None:
        """A session's own model (on the configured server), from its next model call; the
        previous one (None: it had none of its own)."""
        session = self.get(session_id)
        previous = session.model
        session.model = model
        self.store.update_session(session_id, model=model)
        return previous

    def info(self, row: SessionRow) -> p.SessionInfo:
        """A session as ``session/list`` shows it, live or not."""
        live = self.live.get(row.id)
        if live is not None:
            return live.info()
        return wire.session_info(row, row.title, row.updated_at, "idle", mode_of(row, self.config))

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        await self._stop_turn(session)
        await session.env.close()
        self.store.update_session(session_id, closed=True)
        self.live.pop(session_id, None)
        for closed in self.on_closed:
            closed(session_id)

    # ----------------------------------------------------------- turns

    def start_turn(self, session_id: str, texts: list[str],
                   shown: p.EditorState | None = None,
                   mentions: Sequence[p.MentionInput] = (),
                   images: Sequence[p.ImageInput] = ()) -> tuple[str, bool]:
        """A turn for ``texts`` (or, when one runs, input queued for it); ``shown``: what the
        editor showed as the user sent it; ``mentions``: files the prompt names with @;
        ``images``: pictures for a vision model (a queued input goes without these)."""
        session = self.get(session_id)
        text = "\n\n".join(t for t in texts if t)
        if not text.strip():
            raise EngineError(ErrorCode.INVALID_PARAMS, "input: at least one non-empty text item")
        parts = self._pictures(session, images) if images else []
        if session.turn is not None:
            if parts:
                raise EngineError(ErrorCode.INVALID_PARAMS, "a picture goes with a new prompt: "
                                  "wait for the running turn to end (or interrupt it)")
            # Queued input is read as text at the turn's next seam: mentioned files go in it.
            blocks = [finder.mention_block(m, session.env.cwd, session.env.buffers)
                      for m in mentions]
            queued = session.queue_input("\n\n".join([*blocks, text]))
            self.sink.notify(p.SessionInput(session_id=session.id, item=p.UserMessageItem(
                id=queued.id, text=text, queued=True)))
            return session.turn.id, True
        session.wakes = 0
        # Input queued for a turn that ended first (or that a crash ended), and notices
        # that arrived while idle, lead this turn's message (one user message: strict
        # chat templates refuse two in a row).
        earlier = session.take_queued()
        content = "\n\n".join([*(q.text() for q in earlier), text])
        message = m.Message(role="user", id=m.new_id("user"),
                            content=[{"type": "text", "text": content}, *parts] if parts
                            else content,
                            context=self._context(session, text, shown, mentions),
                            prompt=text if earlier else None)
        turn_id = self._launch(session, message, earlier)
        shown_item = next(i for i in m.to_items([message]) if isinstance(i, p.UserMessageItem))
        shown_item.text, shown_item.turn_id = text, turn_id
        self.sink.notify(p.SessionInput(session_id=session.id, item=shown_item, turn_id=turn_id))
        return turn_id, False

    def _pictures(self, session: Session, images: Sequence[p.ImageInput]) -> list[dict[str, Any]]:
        """The images as content parts, or an error the client shows (no vision, too big)."""
        try:
            model = self.model(session.id)
        except ModelError as exc:
            raise EngineError(ErrorCode.CONFIG_ERROR, exc.message) from exc
        if not model.supports_vision:
            raise EngineError(ErrorCode.INVALID_PARAMS, (
                f"the model {model.name} does not take pictures; if it does, set "
                "[model] supports_vision = true"))
        return [pictures.part(image, session.env.cwd) for image in images]

    def _context(self, session: Session, text: str, shown: p.EditorState | None,
                 mentions: Sequence[p.MentionInput]) -> str | None:
        """The blocks the model reads before the prompt: a slash command run, mentioned
        files, the editor state."""
        cwd = session.env.cwd
        blocks = [ran] if (ran := commands.note(session.env, text)) else []
        blocks += [finder.mention_block(item, cwd, session.env.buffers) for item in mentions]
        if shown is not None and (state := editor.render(shown, cwd)):
            blocks.append(state)
        return "\n\n".join(blocks) or None

    def _launch(self, session: Session, message: m.Message, folded: list[m.Message]) -> str:
        """Commit the turn's leading message (folding ``folded`` queued ones) and start it."""
        turn = TurnState(id=m.new_id("turn"), generation=session.generation)
        message.turn_id = turn.id
        session.commit([message], folded=folded)
        session.turn = turn
        runner = TurnRunner(session, turn, self.config, self.sink, self.model, self.checkpoints)
        turn.task = asyncio.get_running_loop().create_task(runner.run(), name=f"turn-{turn.id}")
        turn.task.add_done_callback(lambda _: self._turn_ended(session, turn))
        return turn.id

    def _turn_ended(self, session: Session, turn: TurnState) -> None:
        """Listeners hear of it; a watch report that arrived as the turn was ending starts
        the next one (unless the user stopped this one: then it waits for them)."""
        for ended in self.on_turn_ended:
            ended(session)
        if not self.closing and not turn.cancel.is_set() and self.live.get(session.id) is session:
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

    # ----------------------------------------------------------- the daemon's end

    async def shutdown(self) -> None:
        """Stop every session's turn and shells without marking it closed (daemon exit)."""
        self.closing = True
        for session in list(self.live.values()):
            try:
                await self._stop_turn(session)
                await session.env.close()
            except Exception:  # shutting down: log and keep closing the others
                log.exception("closing session %s", session.id)

    def kill_now(self) -> None:
        """Last resort at process exit, outside any event loop: kill what sessions spawned."""
        for session in self.live.values():
            session.env.kill_now()
