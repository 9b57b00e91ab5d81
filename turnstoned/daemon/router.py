"""The engine's EventSink over every connection of the daemon.

Each connection (the stdio client, or each client of the resident daemon's
socket) follows the sessions it started, resumed or started a turn in, and
sees those sessions' notifications only (and those of the sessions they spawned,
a coordinator's children); notifications about no session (MCP server status)
go to every initialized connection. The stdio daemon's one client also sees
the sessions nobody follows (a watch that fires after a restart). ``session/unsubscribe`` or
closing the connection stops following.

An approval request goes to every connection following its session; the first
answer wins and the others get ``$/cancelRequest``. A connection that starts
following a session with a question open is asked it too (after the answer to
the request that made it follow), so a client that resumes a session someone
else is driving can answer. When the last follower goes away the question
waits for the next one; ``deny_unattended`` ends such questions when the
daemon has had no client at all for a while. An MCP trust question goes only
to the connection whose request opened the session, and is dismissed if that
connection goes away. So does the question whether a workspace's policies
file may allow.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import protocol as p
from turnstoned.daemon import rpc
from turnstoned.tools.base import EditorUnavailable

if TYPE_CHECKING:
    from turnstoned.daemon.transport import DaemonProtocol

log = logging.getLogger(__name__)

EDITOR_TIMEOUT = 10.0  # seconds an editor has to answer an editor/* request
_EDITOR_FEATURES = {"editor/diagnostics": "diagnostics", "editor/openFiles": "open_files",
                    "editor/symbol": "symbols", "editor/buffers": "buffers"}


class Unanswerable(Exception):
    """A question nobody can answer any more (the connection asked is gone, or no client)."""


class Connection:
    """One client of the daemon: its protocol object and the sessions it follows."""

    def __init__(self, router: Router, protocol: DaemonProtocol, number: int) -> None:
        self.router = router
        self.protocol = protocol
        self.number = number
        self.sessions: dict[str, None] = {}  # followed sessions, in order
        self.initialized = False
        self.closed = False

    def __repr__(self) -> str:
        return f"<connection {self.number}>"

    def write(self, frame: bytes) -> None:
        writer = self.protocol.writer
        if self.closed or writer is None:
            return
        try:
            writer.write(frame)
        except (OSError, ValueError) as exc:  # this client went away; the others go on
            log.debug("%r: a frame was not sent: %s", self, exc)

    def notify(self, event: p.Event) -> None:
        self.write(rpc.frame(rpc.notification(event)))


class TurnLog:
    """Every notification of each running turn, from its prompt to turn/completed, with
    consecutive deltas of one item joined; a client that joins mid-turn gets them
    (session/resume ``running``). Past ``LIMIT`` events a turn's further deltas are not
    kept (its items' starts and ends still are)."""

    LIMIT = 20_000

    def __init__(self) -> None:
        self._turns: dict[str, tuple[str, list[p.Event]]] = {}

    def record(self, session_id: str, event: p.Event) -> None:
        kept = self._turns.get(session_id)
        turn_id = getattr(event, "turn_id", None)
        if isinstance(event, p.SessionInput | p.TurnStarted) and turn_id is not None \
                and (kept is None or kept[0] != turn_id):  # its prompt, or its start
            self._turns[session_id] = (turn_id, [event])
            return
        if kept is None or (turn_id or kept[0]) != kept[0]:
            return
        if isinstance(event, p.TurnCompleted):
            del self._turns[session_id]
            return
        events = kept[1]
        last = events[-1]
        if isinstance(event, p.ItemDelta | p.ToolOutputDelta):
            if type(last) is type(event) and last.item_id == event.item_id \
                    and last.parent_call_id == event.parent_call_id:
                field = "chunk" if isinstance(event, p.ToolOutputDelta) else "delta"
                joined = getattr(last, field) + getattr(event, field)
                events[-1] = msgspec.structs.replace(last, **{field: joined})
                return
            if len(events) >= self.LIMIT:
                return
        events.append(event)

    def replay(self, session_id: str) -> p.RunningTurn | None:
        kept = self._turns.get(session_id)
        if kept is None:
            return None
        return p.RunningTurn(turn_id=kept[0], events=[
            p.ReplayedEvent(method=type(e).method, params=rpc.encode(e)) for e in kept[1]])


# The connection whose request is being handled; tasks started by it inherit it.
CALLER: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "turnstoned_caller", default=None)


def subscribe(session_id: str) -> None:
    """The connection serving this request follows ``session_id``."""
    conn = CALLER.get()
    if conn is not None:
        conn.router.subscribe(conn, session_id)


def unsubscribe(session_id: str) -> None:
    """The connection serving this request stops following ``session_id``."""
    conn = CALLER.get()
    if conn is not None:
        conn.router.unsubscribe(conn, session_id)


def login_opener() -> Callable[[str, str], Awaitable[bool | None]]:
    """Shows an MCP login page to the connection serving this request (mcpServer/login)."""
    conn = CALLER.get()

    async def opener(server: str, url: str) -> bool | None:
        if conn is None:
            return None
        return await conn.router.open_login_page(p.McpAuthorizeParams(server=server, url=url),
                                                 [conn])
    return opener


def running_turn(session_id: str) -> p.RunningTurn | None:
    """The session's running turn so far, for the connection serving this request."""
    conn = CALLER.get()
    return conn.router.turns.replay(session_id) if conn is not None else None


def closed(session_id: str) -> None:
    """The session was closed: nobody follows it any more."""
    conn = CALLER.get()
    if conn is not None:
        for follower in list(conn.router.followers.get(session_id, ())):
            conn.router.unsubscribe(follower, session_id)


class _Question:
    """One daemon->client request, asked of one or more connections; the first answer wins."""

    def __init__(self, event: p.Event, prefix: str, session_id: str | None) -> None:
        self.method = type(event).method
        self.params = rpc.encode(event)
        self.session_id = session_id
        self.msg_id = f"{prefix}-{uuid.uuid4().hex}"
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.asked: dict[Connection, Future[Any]] = {}
        self.failure: BaseException | None = None

    def ask(self, conn: Connection) -> None:
        if conn.closed or conn in self.asked or self.answer.done():
            return
        future = conn.protocol.send_request(self.method, self.params, msg_id=self.msg_id)
        self.asked[conn] = future
        future.add_done_callback(lambda f: self._answered(conn, f))

    def _answered(self, conn: Connection, future: Future[Any]) -> None:
        if self.asked.get(conn) is not future:
            return  # withdrawn from that connection
        del self.asked[conn]
        if self.answer.done() or future.cancelled():
            return
        exc = future.exception()
        if exc is None:
            self.answer.set_result(future.result())
            self.withdraw()
        elif self.asked:
            self.failure = exc  # another connection may still answer
        else:
            self.answer.set_exception(exc)

    def drop(self, conn: Connection, tell: bool) -> None:
        """Stop asking ``conn`` (it closed, or stopped following the session)."""
        if self.asked.pop(conn, None) is None:
            return
        conn.protocol.withdraw_request(self.msg_id)
        if tell:
            conn.notify(p.CancelParams(id=self.msg_id))

    def withdraw(self) -> None:
        """Every connection still asked gets ``$/cancelRequest``."""
        for conn in list(self.asked):
            self.drop(conn, tell=True)

    def fail(self, exc: BaseException) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)
        self.withdraw()


class Router:
    """Routes the engine's notifications and questions to the connections they concern."""

    def __init__(self, resident: bool = False) -> None:
        self.resident = resident  # the daemon outlives its connections
        self.connections: list[Connection] = []
        self.followers: dict[str, list[Connection]] = {}
        self.questions: list[_Question] = []
        self._numbers = itertools.count(1)
        # The session that spawned a session (a coordinator's child), if any.
        self.parent_of: Callable[[str], str | None] = lambda session_id: None
        self.turns = TurnLog()  # what each running turn sent so far, for who joins mid-turn

    def _lineage(self, session_id: str) -> list[str]:
        """The session, the session that spawned it, and so on up."""
        chain = [session_id]
        while (parent := self.parent_of(chain[-1])) is not None and parent not in chain:
            chain.append(parent)
        return chain

    def followers_of(self, session_id: str) -> list[Connection]:
        """Who sees a session: its own followers, else those of the session that spawned it
        (a coordinator's child sessions are part of the coordinator's work). A session
        nobody follows (a watch firing after a restart) is seen by the stdio daemon's one
        client; on the resident daemon, by whoever resumes it."""
        found = self.followers.get(session_id)
        if found:
            return found
        for ancestor in self._lineage(session_id)[1:]:
            if found := self.followers.get(ancestor):
                return found
        if not self.resident:  # the stdio daemon's one client sees every session
            return [c for c in self.connections if c.initialized]
        return []

    # ----------------------------------------------------------- connections

    def add(self, protocol: DaemonProtocol) -> Connection:
        conn = Connection(self, protocol, next(self._numbers))
        self.connections.append(conn)
        return conn

    def remove(self, conn: Connection) -> None:
        """``conn`` closed: it follows nothing and is asked nothing any more."""
        if conn.closed:
            return
        conn.closed = True
        self.connections.remove(conn)
        for session_id in list(conn.sessions):
            self._unfollow(conn, session_id)
        for question in list(self.questions):
            question.drop(conn, tell=False)
            if question.session_id is None and not question.asked:
                question.fail(Unanswerable(f"{conn!r} closed"))

    def subscribe(self, conn: Connection, session_id: str) -> None:
        if conn.closed or session_id in conn.sessions:
            return
        conn.sessions[session_id] = None
        self.followers.setdefault(session_id, []).append(conn)
        if any(q.session_id and session_id in self._lineage(q.session_id)
               for q in self.questions):
            # Ask after the answer to the request that subscribed (resume, turn/start) has
            # been written: that answer is sent from the request task's done callback,
            # which is scheduled once the handler returns, right after this first hop.
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._ask_waiting, conn, session_id)

    def _ask_waiting(self, conn: Connection, session_id: str) -> None:
        if session_id in conn.sessions:
            for question in self.questions:
                if question.session_id and session_id in self._lineage(question.session_id):
                    question.ask(conn)

    def unsubscribe(self, conn: Connection, session_id: str) -> None:
        if session_id not in conn.sessions:
            return
        self._unfollow(conn, session_id)
        for question in self.questions:
            if question.session_id and session_id in self._lineage(question.session_id) \
                    and conn not in self.followers_of(question.session_id):
                question.drop(conn, tell=True)

    def _unfollow(self, conn: Connection, session_id: str) -> None:
        conn.sessions.pop(session_id, None)
        followers = self.followers.get(session_id)
        if followers is not None:
            followers.remove(conn)
            if not followers:
                del self.followers[session_id]

    def deny_unattended(self, reason: str) -> int:
        """End the approval questions no connection is being asked; how many there were."""
        ended = [q for q in self.questions if q.session_id is not None and not q.asked]
        for question in ended:
            question.fail(Unanswerable(reason))
        return len(ended)

    # ----------------------------------------------------------- the EventSink

    def notify(self, event: p.Event) -> None:
        session_id = getattr(event, "session_id", None)
        if session_id is not None:
            self.turns.record(session_id, event)
            targets = self.followers_of(session_id)
            if isinstance(event, p.SessionInput):  # the sender shows its own prompt
                targets = [c for c in targets if c is not CALLER.get()]
        else:
            targets = [c for c in self.connections if c.initialized]
        if not targets:
            return
        frame = rpc.frame(rpc.notification(event))
        for conn in list(targets):
            conn.write(frame)

    async def _ask(self, question: _Question, targets: list[Connection]) -> Any:
        self.questions.append(question)
        try:
            for conn in targets:
                question.ask(conn)
            return await question.answer
        except asyncio.CancelledError:
            question.withdraw()
            raise
        finally:
            self.questions.remove(question)

    async def request_approval(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        question = _Question(params, "approval", params.session_id)
        raw = await self._ask(question, list(self.followers_of(params.session_id)))
        try:
            return msgspec.convert(raw, p.ApprovalResponse)
        except msgspec.ValidationError as exc:
            log.warning("approval answer is not valid (%s): %r", exc, raw)
            return p.ApprovalResponse(decision="deny", feedback=None)

    # ----------------------------------------------------------- the editor's services

    def features(self, session_id: str) -> p.EditorCapabilities:
        """What the first editor following ``session_id`` that serves anything serves."""
        for conn in self.followers_of(session_id):
            if conn.protocol.editor is not None:
                return conn.protocol.editor
        return p.EditorCapabilities()

    async def ask(self, params: p.Event, result: type[Any]) -> Any:
        """An ``editor/*`` request to the first connection following the session whose editor
        serves it; bounded by ``EDITOR_TIMEOUT`` (then withdrawn)."""
        method = type(params).method
        feature = _EDITOR_FEATURES[method]
        serving = [c for c in self.followers_of(getattr(params, "session_id", ""))
                   if c.protocol.editor is not None and getattr(c.protocol.editor, feature)]
        if not serving:
            raise EditorUnavailable(f"no editor following this session serves {method}")
        conn, msg_id = serving[0], f"editor-{uuid.uuid4().hex}"
        future = conn.protocol.send_request(method, rpc.encode(params), msg_id=msg_id)
        try:
            raw = await asyncio.wait_for(asyncio.wrap_future(future), EDITOR_TIMEOUT)
        except TimeoutError as exc:
            conn.protocol.withdraw_request(msg_id)
            conn.notify(p.CancelParams(id=msg_id))
            raise EditorUnavailable(f"{method} had no answer in {EDITOR_TIMEOUT:.0f} s") from exc
        except Exception as exc:  # an error answer, or the connection closed
            raise EditorUnavailable(f"{method} failed: {exc}") from exc
        try:
            return msgspec.convert(raw, result)
        except msgspec.ValidationError as exc:
            raise EditorUnavailable(f"{method}: the answer is not valid ({exc})") from exc

    async def request_elicitation(self, params: p.McpElicitParams) -> p.McpElicitResponse | None:
        """An MCP server's question, asked of every connection following the session (the
        first answer wins); None when none could answer (the server is told: declined)."""
        from pygls.exceptions import JsonRpcException

        targets = list(self.followers_of(params.session_id))
        if not targets:
            return None
        try:
            raw = await self._ask(_Question(params, "elicit", params.session_id), targets)
        except (Unanswerable, JsonRpcException) as exc:
            log.info("mcpServer/elicit was not answered: %s", exc)
            return None
        try:
            return msgspec.convert(raw, p.McpElicitResponse)
        except msgspec.ValidationError:
            log.warning("mcpServer/elicit answer is not valid: %r", raw)
            return None

    async def request_authorization(self, params: p.McpAuthorizeParams) -> bool | None:
        """An MCP server's login page for a session's running call, shown by the connections
        following it (the first answer wins); None when none could be asked."""
        return await self.open_login_page(
            params, list(self.followers_of(params.session_id or "")))

    async def open_login_page(self, params: p.McpAuthorizeParams,
                              targets: list[Connection]) -> bool | None:
        """``mcpServer/authorize`` to ``targets``: True the browser opened, False the user
        was shown the address only, None nobody could be asked."""
        from pygls.exceptions import JsonRpcException

        targets = [c for c in targets if not c.closed]
        if not targets:
            return None
        try:
            raw = await self._ask(_Question(params, "authorize", params.session_id), targets)
            return msgspec.convert(raw, p.McpAuthorizeResponse).opened
        except (Unanswerable, JsonRpcException, msgspec.ValidationError) as exc:
            log.info("mcpServer/authorize was not answered: %s", exc)
            return None

    async def request_mcp_trust(
        self, params: p.McpTrustRequestParams
    ) -> p.McpTrustResponse | None:
        return await self._ask_trust(params, "mcp-trust")

    async def request_policy_trust(
        self, params: p.PolicyTrustRequestParams
    ) -> p.McpTrustResponse | None:
        return await self._ask_trust(params, "policy-trust")

    async def _ask_trust(self, params: p.Event, prefix: str) -> p.McpTrustResponse | None:
        """A trust question, asked of the connection whose request opened the session; no
        answer that can be read (an error, that connection gone) trusts nothing."""
        from pygls.exceptions import JsonRpcException

        method = type(params).method
        conn = CALLER.get()
        if conn is None or conn.closed:
            log.info("no connection to ask %s; asked again at the next session", method)
            return None
        try:
            raw = await self._ask(_Question(params, prefix, None), [conn])
        except Unanswerable:
            return None
        except JsonRpcException as exc:  # e.g. a client without this method: nothing trusted
            log.info("%s answered with an error: %s", method, exc)
            return None
        try:
            return msgspec.convert(raw, p.McpTrustResponse)
        except msgspec.ValidationError:
            log.warning("%s answer is not valid: %r", method, raw)
            return None
