"""The servers' lifecycle: connect, discover, refresh, notice loss, reconnect, ping.

``ServerPool`` owns one ``Server`` record per configured server and every
background task. It reports through two callbacks: ``on_catalog()`` after any
server's catalog changed, and ``on_status(server)`` after its state or error
changed. Per server, connects and refreshes are serialized by a lock.

Reconnects use full-jitter exponential backoff, ``uniform(0, min(cap,
base * 2**attempt))``, forever; background retries after the first failure
keep the state ``failed`` (no "connecting" flapping). Refreshes triggered by
``list_changed`` wait ``debounce`` seconds, coalesce, and run outside the
session's receive loop; a notification during a refresh queues exactly one
more round; a failed refresh is retried on the next health tick. An idle
server that misses ``MAX_MISSED_PINGS`` pings in a row (alive but wedged) is
abandoned, its process stopped, and reconnected like a dead one.

Every error text a server's state carries (``Server.error``, a refresh's error) and every
failure logged here passes the output guard's redaction: it may quote a server's stderr or
error message, and those echo keys.

An HTTP server's OAuth (``auth.Authorizer``, made at its first connect) rides on its
connections. A connect that stops at the login (nobody waiting to open the browser)
leaves the server ``failed`` with ``needs_auth`` and no retries; ``login`` connects with a
person to take that step, ``logout`` forgets the tokens and reconnects.

A server added ``untrusted`` is only listed: it never connects. A server with a
``gate`` asks it before every connect and reconnect; a refusal turns it
``untrusted`` (with the reason as its error) and stops its retries.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import guard
from turnstoned.mcp.config import ServerSpec
from turnstoned.mcp.models import (
    LOGIN_TIMEOUT,
    CatalogChange,
    ConnectError,
    LoginError,
    Opener,
    ServerCatalog,
    ServerState,
    ServerStatus,
    diff,
)

if TYPE_CHECKING:
    from pathlib import Path

    from turnstoned.mcp.auth import Authorizer
    from turnstoned.mcp.connection import Connection

log = logging.getLogger(__name__)

Gate = Callable[[], str | None]
ALL_KINDS = frozenset({"tools", "resources", "prompts"})
MAX_MISSED_PINGS = 3  # consecutive ping timeouts of an idle server before it is restarted


@dataclass(frozen=True)
class Timings:
    """Tunable delays (seconds)."""

    health_interval: float = 30.0
    connect_timeout: float = 30.0
    ping_timeout: float = 10.0
    debounce: float = 0.3
    backoff_base: float = 1.0
    backoff_cap: float = 60.0


@dataclass(eq=False)
class Server:
    """One configured server's live state."""

    spec: ServerSpec
    state: ServerState = "connecting"
    error: str | None = None
    gate: Gate | None = None  # None to connect, else why this server may not run
    conn: Connection | None = None
    connecting: Connection | None = None
    catalog: ServerCatalog = field(default_factory=ServerCatalog)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    attempt: int = 0
    missed_pings: int = 0
    inflight: int = 0
    pending: set[str] = field(default_factory=set)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    last_status: ServerStatus | None = None
    auth: Authorizer | None = None  # an HTTP server's OAuth, made at its first connect
    needs_auth: bool = False  # its last connect stopped at the login; no retries until one
    tasks: dict[str, asyncio.Task[Any]] = field(
        default_factory=dict
    )  # "reconnect", "refresh", "ping"

    def idle(self, kind: str) -> bool:
        task = self.tasks.get(kind)
        return task is None or task.done()


class ServerPool:
    """Every configured server, connected and kept alive in background tasks."""

    def __init__(
        self,
        specs: list[ServerSpec],
        timings: Timings,
        *,
        on_catalog: Callable[[], None],
        on_status: Callable[[Server], None],
        auth_dir: Path | None = None,
    ) -> None:
        self.auth_dir = auth_dir  # where OAuth tokens are kept (None: no OAuth)
        self.servers = {
            s.name: Server(spec=s, state="connecting" if s.enabled else "disabled") for s in specs
        }
        self.env: dict[str, str] = {}
        self._t = timings
        self._on_catalog = on_catalog
        self._on_status = on_status
        self.roots: Callable[[], list[str]] = list  # the sessions' folders (MCP roots)
        self._background: set[asyncio.Task[Any]] = set()
        # Connections closing in the background (see _close_later).
        self._closing: set[asyncio.Task[Any]] = set()
        self._health: asyncio.Task[Any] | None = None
        self.started = False
        self.closed = False

    def start(self, env: dict[str, str]) -> None:
        self.env = env
        self.started = True
        for srv in self.servers.values():
            self._launch(srv)

    def add(
        self, spec: ServerSpec, *, gate: Gate | None = None, untrusted: str | None = None
    ) -> Server | None:
        """Add a server after start (e.g. a project's .mcp.json); an existing name wins.

        ``untrusted`` (the reason) lists it without ever connecting it.
        """
        if spec.name in self.servers or self.closed:
            return None
        srv = Server(spec=spec, state="connecting" if spec.enabled else "disabled", gate=gate)
        if untrusted is not None:
            srv.state, srv.error = "untrusted", untrusted
        self.servers[spec.name] = srv
        if self.started:
            self._launch(srv)
        return srv

    def remove(self, name: str) -> Server | None:
        """Forget a server: its loops stop and its connection closes in the background."""
        srv = self.servers.pop(name, None)
        if srv is None:
            return None
        for task in srv.tasks.values():
            task.cancel()
        for conn in (srv.conn, srv.connecting):
            if conn is not None:
                self._close_later(conn)
        srv.conn = srv.connecting = None
        srv.catalog = ServerCatalog()
        srv.settled.set()
        return srv

    def _launch(self, srv: Server) -> None:
        if srv.spec.enabled and srv.state != "untrusted":
            srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=True))
        else:
            srv.settled.set()
        if self._health is None:
            self._health = self._spawn(self._health_loop())

    async def close(self) -> None:
        self.closed = True
        tasks = [t for t in self._background if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        conns = [
            c for srv in self.servers.values() for c in (srv.conn, srv.connecting) if c is not None
        ]
        await asyncio.gather(*(c.close() for c in conns), *self._closing,
                             return_exceptions=True)
        for srv in self.servers.values():
            srv.conn = srv.connecting = None

    # -- refresh -------------------------------------------------------------------

    async def refresh(self, srv: Server) -> CatalogChange:
        """Full rediscovery of a connected server, or a reconnect of a dead one."""
        if not srv.spec.enabled:
            return CatalogChange(
                server=srv.spec.name, status="disabled", error="disabled in the configuration"
            )
        if srv.state == "untrusted":
            return CatalogChange(server=srv.spec.name, status="untrusted", error=srv.error)
        before = srv.catalog
        if srv.conn is not None:
            async with srv.lock:
                try:
                    change = await self._rediscover(srv, ALL_KINDS)
                    return msgspec.structs.replace(change, status=srv.state)
                except ConnectError as exc:
                    return CatalogChange(
                        server=srv.spec.name, status=srv.state, error=_redact(str(exc))
                    )
        if srv.connecting is not None:  # a connect is in flight: let it finish first
            async with srv.lock:
                pass
        if srv.conn is None:
            await self._cancel(srv, "reconnect")
        if srv.conn is None and not await self._connect(srv, announce=True):
            srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=False))
        change = diff(srv.spec.name, srv.state, before, srv.catalog)
        return msgspec.structs.replace(change, error=srv.error)

    async def _rediscover(self, srv: Server, kinds: frozenset[str]) -> CatalogChange:
        """List ``kinds`` again (caller holds the lock); raises ``ConnectError``."""
        conn = srv.conn
        if conn is None:
            raise ConnectError("not connected")
        found = await conn.discover(kinds, self._t.connect_timeout)
        if srv.conn is not conn:
            raise ConnectError("the connection was lost during the refresh")
        old, srv.catalog = srv.catalog, msgspec.structs.replace(srv.catalog, **found)
        if old != srv.catalog:
            self._on_catalog()
        return diff(srv.spec.name, srv.state, old, srv.catalog)

    def on_list_changed(self, srv: Server, conn: Connection, kind: str) -> None:
        if self.closed or conn not in (srv.conn, srv.connecting):
            return
        srv.pending.add(kind)
        if srv.idle("refresh"):
            srv.tasks["refresh"] = self._spawn(self._refresh_worker(srv, self._t.debounce))

    async def _refresh_worker(self, srv: Server, delay: float) -> None:
        await asyncio.sleep(delay)
        while srv.pending:
            async with srv.lock:
                if srv.conn is None:
                    srv.pending.clear()  # the next connect rediscovers everything
                    return
                kinds = frozenset(srv.pending)
                srv.pending.clear()  # a notification from now on queues one more round
                try:
                    await self._rediscover(srv, kinds)
                except ConnectError as exc:
                    srv.pending |= kinds  # retried on the next health tick
                    log.warning(
                        "MCP server %r: refresh of %s failed: %s",
                        srv.spec.name,
                        sorted(kinds),
                        _redact(str(exc)),
                    )
                    return

    # -- connect, lose, reconnect ----------------------------------------------------

    async def _reconnect_loop(self, srv: Server, *, immediate: bool) -> None:
        delay = 0.0 if immediate else self._delay(srv.attempt)
        while not self.closed:
            if delay > 0:
                await asyncio.sleep(delay)
            if await self._connect(srv):
                return
            srv.attempt += 1
            delay = self._delay(srv.attempt)

    def _delay(self, attempt: int) -> float:
        return random.uniform(
            0.0, min(self._t.backoff_cap, self._t.backoff_base * 2 ** min(attempt, 30))
        )

    async def _connect(self, srv: Server, *, announce: bool = False) -> bool:
        """One connect and full discovery; True when connected (or shutting down)."""
        from turnstoned.mcp.connection import Connection

        async with srv.lock:
            if self.closed or srv.conn is not None:  # shutting down, or another caller won
                return True
            refusal = srv.gate() if srv.gate is not None else None
            if refusal is not None or srv.state == "untrusted":
                self._set_state(srv, "untrusted", refusal or srv.error)
                srv.settled.set()
                return True  # not a failure to retry: nothing may run until trusted again
            if srv.attempt == 0 or announce:
                self._set_state(srv, "connecting", srv.error)
            auth = self._authorizer(srv)
            waiting = auth is not None and bool(auth.openers)  # a login: a person in a browser
            conn = Connection(
                srv.spec,
                env={**self.env, **srv.spec.env},
                connect_timeout=self._t.connect_timeout + (LOGIN_TIMEOUT if waiting else 0.0),
                on_list_changed=lambda c, kind: self.on_list_changed(srv, c, kind),
                on_lost=lambda c, reason: self._on_lost(srv, c, reason),
                auth=auth,
            )
            conn.roots = lambda: self.roots()
            srv.connecting = conn
            try:
                await conn.open()
                found = await conn.discover(ALL_KINDS, self._t.connect_timeout)
            except ConnectError as exc:
                await conn.close()
                if auth is not None and auth.needs_login:
                    srv.needs_auth = True
                    self._set_state(srv, "failed", "needs login: the server asks you to log in")
                    return True  # not a failure to retry: nothing works until a login
                self._failed(srv, str(exc))
                return False
            except Exception as exc:  # a bug here must not kill the reconnect loop
                log.exception("MCP server %r: unexpected error while connecting", srv.spec.name)
                await conn.close()
                self._failed(srv, f"internal error: {exc!r}")
                return False
            except asyncio.CancelledError:
                await conn.close()
                raise
            finally:
                srv.connecting = None
                srv.settled.set()
            srv.conn, srv.attempt, srv.missed_pings, srv.needs_auth = conn, 0, 0, False
            if auth is not None:
                auth.needs_login = False
            srv.catalog = ServerCatalog(**found)
            srv.state, srv.error = "connected", None
            self._on_catalog()
            self._on_status(srv)
            log.info("MCP server %r connected: %s", srv.spec.name, _counts(srv.catalog))
            return True

    def _failed(self, srv: Server, error: str) -> None:
        error = _redact(error)
        repeated = srv.attempt > 0 and srv.error == error
        log.log(
            logging.DEBUG if repeated else logging.WARNING,
            "MCP server %r failed: %s",
            srv.spec.name,
            error,
        )
        self._set_state(srv, "failed", error)

    def _on_lost(self, srv: Server, conn: Connection, reason: str) -> None:
        if self.closed or srv.conn is not conn:
            return
        reason = _redact(reason)
        log.warning("MCP server %r: connection lost (%s); reconnecting", srv.spec.name, reason)
        srv.conn = None
        self._close_later(conn)
        srv.catalog = ServerCatalog()
        srv.state, srv.error = "failed", f"connection lost: {reason}"
        self._on_catalog()
        self._on_status(srv)
        if srv.idle("reconnect"):
            srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=False))

    async def _health_loop(self) -> None:
        while not self.closed:
            await asyncio.sleep(self._t.health_interval)
            for srv in self.servers.values():
                self._health_check(srv)

    def _health_check(self, srv: Server) -> None:
        conn = srv.conn
        if conn is not None:
            if srv.pending and srv.idle("refresh"):
                srv.tasks["refresh"] = self._spawn(self._refresh_worker(srv, 0.0))
            if srv.inflight == 0 and srv.idle("ping"):
                srv.tasks["ping"] = self._spawn(self._ping(srv, conn))
        elif srv.spec.enabled and srv.state == "failed" and not srv.needs_auth \
                and srv.idle("reconnect"):
            srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=True))

    # -- OAuth -----------------------------------------------------------------------

    def _authorizer(self, srv: Server) -> Authorizer | None:
        """The server's OAuth (made once): HTTP servers with OAuth on, when tokens have a home."""
        oauth = srv.spec.oauth
        if srv.auth is None and srv.spec.type == "http" and self.auth_dir is not None \
                and (oauth is None or oauth.enabled):
            from turnstoned.mcp.auth import Authorizer, TokenStore

            srv.auth = Authorizer(srv.spec, TokenStore.for_server(self.auth_dir, srv.spec))
        return srv.auth

    async def login(self, srv: Server, opener: Opener) -> None:
        """Connect with a person to take the browser step (``opener`` shows the page);
        raises ``ConnectError`` with the reason when that did not connect. A connected
        server is left as it is."""
        if srv.spec.type != "http":
            raise LoginError(f"MCP server {srv.spec.name!r} runs on this machine (stdio): "
                             "it has no login")
        auth = self._authorizer(srv)
        if auth is None:
            raise LoginError(f"OAuth is off for MCP server {srv.spec.name!r} (oauth = false)")
        if auth.machine:
            raise LoginError(f"MCP server {srv.spec.name!r} logs in with client credentials; "
                             "no browser login")
        if srv.conn is not None or srv.state == "untrusted" or not srv.spec.enabled:
            return
        await self._cancel(srv, "reconnect")
        auth.openers.append(opener)
        auth.needs_login = False
        try:
            connected = await self._connect(srv, announce=True)
        except asyncio.CancelledError:  # the user gave up on it
            srv.needs_auth = True
            self._set_state(srv, "failed", "needs login: the login was cancelled")
            raise
        finally:
            auth.openers.remove(opener)
        if not connected or srv.conn is None:
            if srv.idle("reconnect") and not srv.needs_auth:
                srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=False))
            raise LoginError(srv.error or "the server did not connect")

    async def logout(self, srv: Server) -> bool:
        """Forget the server's tokens and reconnect without them; True if it had any."""
        auth = self._authorizer(srv)
        if auth is None:
            return False
        had = auth.logout()
        await self._cancel(srv, "reconnect")
        conn, srv.conn = srv.conn, None
        if conn is not None:
            self._close_later(conn)
            srv.catalog = ServerCatalog()
            self._on_catalog()
        srv.needs_auth, srv.attempt = False, 0
        if srv.spec.enabled and srv.state != "untrusted":
            srv.settled.clear()
            srv.tasks["reconnect"] = self._spawn(self._reconnect_loop(srv, immediate=True))
        return had

    async def _ping(self, srv: Server, conn: Connection) -> None:
        """A closed connection reports itself; a wedged one is abandoned after a few timeouts."""
        outcome = await conn.ping(self._t.ping_timeout)
        srv.missed_pings = srv.missed_pings + 1 if outcome == "timeout" else 0
        if srv.missed_pings >= MAX_MISSED_PINGS and srv.conn is conn:
            conn.abandon(f"no answer to {srv.missed_pings} pings in a row")

    async def _cancel(self, srv: Server, kind: str) -> None:
        task = srv.tasks.pop(kind, None)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _set_state(self, srv: Server, state: ServerState, error: str | None) -> None:
        srv.state, srv.error = state, _redact(error) if error else error
        self._on_status(srv)

    def _close_later(self, conn: Connection) -> None:
        """Close a connection in the background; close() waits for it and never cancels it,
        since a cancelled close could leave the server process running."""
        task = asyncio.get_running_loop().create_task(conn.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task


def _redact(text: str) -> str:
    return guard.check(text, redact=True).text


def _counts(cat: ServerCatalog) -> str:
    return (
        f"{len(cat.tools)} tools, {len(cat.resources)} resources, "
        f"{len(cat.templates)} templates, {len(cat.prompts)} prompts"
    )
