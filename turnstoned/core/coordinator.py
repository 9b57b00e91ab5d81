"""Coordinator sessions: their children are ordinary sessions of the daemon.

``session/start {kind: "coordinator"}`` opens a session whose tools spawn,
message, wait for, inspect, list, cancel and close child sessions. A child is an
interactive session with ``parent_id`` set (``session/list`` shows it with
``parentSessionId``): its turns, items and approval requests reach the editor
under its own session id like any session's. ``Coordinator`` implements the
tools' ``Coordination`` on the daemon's ``Sessions``; it only ever acts on the
calling coordinator's own children.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from turnstoned import protocol as p
from turnstoned.core import messages as m
from turnstoned.core.errors import EngineError
from turnstoned.core.wire import iso
from turnstoned.tools.coordination import Child, CoordinationError

if TYPE_CHECKING:
    from turnstoned.core.sessions import Sessions
    from turnstoned.store import SessionRow


class Coordinator:
    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self._changed = asyncio.Event()  # replaced after each change: waiters re-check

    def session_changed(self) -> None:
        """A turn ended or a session closed: wake whoever waits for children."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ----------------------------------------------------------- lookups

    def _own(self, parent: str, child: str) -> SessionRow:
        row = self.sessions.store.get_session(child)
        if row is not None and row.parent_id == parent:
            return row
        kids = self.sessions.store.list_sessions(parent)
        guesses = [f"{k.id} ({k.title or 'untitled'})" for k in kids
                   if k.id.startswith(child[:8]) or (k.title or "").lower() == child.lower()]
        hint = f" Did you mean {', '.join(guesses[:3])}?" if guesses else (
            " Your workstreams: " + ", ".join(f"{k.id} ({k.title or 'untitled'})"
                                              for k in kids[:10]) if kids else
            " You have no workstreams yet.")
        raise CoordinationError(f"Error: {child} is not one of your workstreams.{hint}")

    def describe(self, row: SessionRow) -> Child:
        live = self.sessions.live.get(row.id)
        if row.closed:
            state = "closed"
        elif live is not None and live.policy.awaiting:
            state = "awaiting_approval"
        elif live is not None and live.running:
            state = "running"
        else:
            state = "idle"
        history = live.history if live is not None else []
        said = next((m.text() for m in reversed(history) if m.role == "assistant" and m.text()), "")
        return Child(id=row.id, name=row.title or "untitled", state=state,
                     last_status=live.last_status if live else None, last_message=said,
                     updated_at=iso(live.updated_at if live else row.updated_at))

    # ----------------------------------------------------------- the tools' requests

    def spawn(self, parent: str, name: str | None, message: str | None,
              model: str | None) -> Child:
        coordinator = self.sessions.get(parent)
        params = p.SessionStartParams(
            cwd=str(coordinator.env.cwd), model=model or coordinator.model, title=name or None,
            workspace=str(coordinator.env.workspace) if coordinator.env.workspace else None,
            approval_mode=coordinator.policy.mode)
        child = self.sessions.start(params, parent_id=parent)
        if message:
            self.sessions.start_turn(child.id, [message])
        return self.describe(self.sessions.row(child.id))

    def send(self, parent: str, child: str, message: str) -> Child:
        row = self._own(parent, child)
        if row.closed:
            raise CoordinationError(f"Error: workstream {child} is closed")
        self.sessions.start_turn(child, [message])
        return self.describe(self.sessions.row(child))

    async def wait(self, parent: str, children: list[str], timeout: float,
                   mode: str) -> tuple[list[Child], bool]:
        for child in children:
            self._own(parent, child)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            changed = self._changed  # before looking: a change from now on wakes this wait
            found = [self.describe(self.sessions.row(c)) for c in children]
            settled = [c.state in ("idle", "closed") for c in found]
            if all(settled) if mode == "all" else any(settled):
                return found, False
            left = deadline - loop.time()
            if left <= 0:
                return found, True
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass

    def inspect(self, parent: str, child: str) -> tuple[Child, list[p.Item]]:
        row = self._own(parent, child)
        live = self.sessions.live.get(child)
        items = live.items() if live is not None else m.to_items(
            [m.decode(body) for body in self.sessions.store.load_messages(child)])
        return self.describe(row), items

    def children(self, parent: str, include_closed: bool) -> list[Child]:
        rows = self.sessions.store.list_sessions(parent)
        return [self.describe(r) for r in rows if include_closed or not r.closed]

    async def close(self, parent: str, child: str) -> Child:
        row = self._own(parent, child)
        if not row.closed:
            await self.sessions.close(child)
        return self.describe(self.sessions.row(child))

    def cancel(self, parent: str, child: str) -> tuple[Child, bool]:
        row = self._own(parent, child)
        live = self.sessions.live.get(child)
        running = bool(live is not None and live.running and not row.closed)
        if running:
            try:
                self.sessions.interrupt(child, None)
            except EngineError:  # it ended meanwhile
                running = False
        return self.describe(self.sessions.row(child)), running

