"""``MCPManager``: every configured MCP server, connected, discovered and kept alive.

Lifecycle: ``start()`` returns at once and connects each enabled server in a
background task; ``wait_ready()`` waits until each has connected or failed
once; ``close()`` stops everything and leaves no server process behind.

Catalog: ``tools()``, ``resources()``, ``resource_templates()`` and
``prompts()`` return the current merged snapshot. A snapshot is never mutated:
any change swaps in new lists (so ``is`` tells a caller whether it changed)
and then calls the ``add_listener`` callbacks on the event loop. Servers keep
their configuration order; on a name or URI clash the earlier server wins.

Liveness (see ``pool``): a connection that ends (stdio process exited, HTTP
transport failed) is noticed at once; its entries leave the catalog and it is
reconnected with backoff, each success ending in a full rediscovery. The
health loop pings idle servers every ``health_interval`` seconds, retries
failed list refreshes and restarts reconnect loops. ``list_changed``
notifications schedule a debounced refresh of that kind for that server.

Calls never raise for server trouble: ``call_tool``, ``read_resource`` and
``get_prompt`` return an ``MCPCallResult`` with ``is_error`` set (and
``effect_status="unknown"`` for a tool call that timed out or lost its
connection mid-way). Cancelling the awaiting task cancels the request on the
server (``notifications/cancelled``) and keeps the connection.

Nothing here imports the MCP SDK: ``connection`` (which does) is imported on
the first connect.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned.mcp.catalog_index import CatalogIndex
from turnstoned.mcp.config import ConfigIssue, ServerSpec
from turnstoned.mcp.models import (
    CatalogChange,
    MCPCallResult,
    MCPPrompt,
    MCPResource,
    MCPResourceTemplate,
    MCPTool,
    Opener,
    ServerStatus,
)
from turnstoned.mcp.pool import Gate, Server, ServerPool, Timings

if TYPE_CHECKING:  # the connection imports the MCP SDK: not on the daemon's start
    from pathlib import Path

    from turnstoned.mcp.connection import Asker

log = logging.getLogger(__name__)

EnvScrub = Callable[[Mapping[str, str]], dict[str, str]]


class MCPManager:
    """Connections to the configured MCP servers and their merged catalog."""

    def __init__(
        self,
        specs: list[ServerSpec],
        issues: Iterable[ConfigIssue] = (),
        *,
        call_timeout: float = 120.0,
        env_scrub: EnvScrub | None = None,
        health_interval: float = 30.0,
        connect_timeout: float = 30.0,
        ping_timeout: float = 10.0,
        debounce: float = 0.3,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        auth_dir: Path | None = None,
    ) -> None:
        timings = Timings(
            health_interval, connect_timeout, ping_timeout, debounce, backoff_base, backoff_cap
        )
        self._pool = ServerPool(
            specs, timings, on_catalog=self._publish, on_status=self._emit_status,
            auth_dir=auth_dir,
        )
        self._servers = self._pool.servers
        self._issues = list(issues)
        self._call_timeout = call_timeout
        self._env_scrub = env_scrub
        self._index = CatalogIndex()
        self._listeners: dict[int, Callable[[], None]] = {}
        # (server, resource URI) -> who read it and hears once when it changes
        self._watchers: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._status_listeners: dict[int, Callable[[ServerStatus], None]] = {}
        self._next_token = 0
        self._started = False

    async def start(self) -> None:
        """Begin connecting every enabled server in the background; returns at once."""
        if self._started:
            return
        self._started = True
        env = self._env_scrub(os.environ) if self._env_scrub is not None else dict(os.environ)
        self._pool.start(env)

    def replace_servers(
        self,
        origin: str,
        specs: Iterable[ServerSpec],
        issues: Iterable[ConfigIssue] = (),
        *,
        gate: Gate | None = None,
        untrusted: str | None = None,
    ) -> list[str]:
        """Make ``origin``'s servers (a project's .mcp.json) these; configured names win.

        Servers of ``origin`` that are not in ``specs`` stop and leave the list
        (a last status says so). ``gate`` is asked before each (re)connect;
        ``untrusted`` (the reason) lists the servers without connecting them.
        Returns the names added.
        """
        gone = [srv for srv in self._servers.values() if srv.spec.origin == origin]
        for srv in gone:
            self._pool.remove(srv.spec.name)
        self._issues = [i for i in self._issues if i.origin != origin] + list(issues)
        added = []
        for spec in specs:
            new = self._pool.add(spec, gate=gate, untrusted=untrusted)
            if new is not None:
                added.append(spec.name)
                self._emit_status(new)
        for srv in gone:
            if srv.spec.name not in added:
                srv.state, srv.error = "disabled", f"no longer in {origin.partition(':')[2]}"
                self._emit_status(srv)
        self._publish()
        return added

    async def wait_ready(self, timeout: float, names: Iterable[str] | None = None) -> None:
        """Wait until every enabled server (or each of ``names``) connected or failed once."""
        wanted = self._servers.values() if names is None else [
            self._servers[n] for n in names if n in self._servers]
        await asyncio.wait_for(asyncio.gather(*(s.settled.wait() for s in wanted)), timeout)

    async def close(self) -> None:
        """Stop every loop, close every session and terminate stdio servers."""
        await self._pool.close()

    # -- catalog -------------------------------------------------------------------

    def tools(self) -> list[MCPTool]:
        """The current tool snapshot (do not mutate; a new list replaces it on change)."""
        return self._index.tools

    def resources(self) -> list[MCPResource]:
        return self._index.resources

    def resource_templates(self) -> list[MCPResourceTemplate]:
        return self._index.templates

    def prompts(self) -> list[MCPPrompt]:
        return self._index.prompts

    def is_mcp_tool(self, name: str) -> bool:
        """True for any ``mcp__`` name: MCP dispatch owns it even while its server is away."""
        return name.startswith("mcp__")

    def status(self) -> list[ServerStatus]:
        """Configuration problems first (``name == ""`` for a whole file), then each server."""
        issues = [
            ServerStatus(name=i.name, status="disabled", origin=i.origin, error=i.message)
            for i in self._issues
        ]
        return issues + [_status_of(srv) for srv in self._servers.values()]

    def add_listener(self, cb: Callable[[], None]) -> Callable[[], None]:
        """Call ``cb()`` after each catalog change; returns the unsubscribe function."""
        return self._subscribe(self._listeners, cb)

    def add_status_listener(self, cb: Callable[[ServerStatus], None]) -> Callable[[], None]:
        """Call ``cb(status)`` whenever a server's state, error or counts change."""
        return self._subscribe(self._status_listeners, cb)

    def _subscribe(self, table: dict[int, Any], cb: Any) -> Callable[[], None]:
        self._next_token += 1
        token = self._next_token
        table[token] = cb

        def unsubscribe() -> None:
            table.pop(token, None)

        return unsubscribe

    # -- calls ---------------------------------------------------------------------

    def set_roots(self, roots: Callable[[], list[str]]) -> None:
        """Where the MCP roots come from (the folders the daemon's sessions work in)."""
        self._pool.roots = roots

    def roots_changed(self) -> None:
        """The roots changed: each connected server is told (in the background)."""
        for srv in self._servers.values():
            if srv.conn is not None:
                self._spawn(srv.conn.roots_changed())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout: float | None = None,
        asker: Asker | None = None,
        progress: Callable[[float, float | None, str | None], None] | None = None,
        opener: Opener | None = None, card: Callable[[str], None] | None = None,
    ) -> MCPCallResult:
        """Call a tool by its model-facing name; server trouble is an error result.
        ``asker`` answers the server's questions while the call runs; ``opener`` shows the
        login page when the server asks for more scope for it; ``card`` shows its log
        messages."""
        tool = self._index.tool_by_name.get(name)
        if tool is None:
            return self._unavailable("tool", name, self._index.known_tools.get(name))
        srv = self._servers[tool.server]
        conn = srv.conn
        if conn is None:
            return self._unavailable("tool", name, tool.server)
        limit = timeout if timeout is not None else (srv.spec.timeout or self._call_timeout)
        srv.inflight += 1
        try:
            return await conn.call_tool(tool.tool, arguments, limit, asker, progress, opener, card)
        finally:
            srv.inflight -= 1

    async def read_resource(self, uri: str, *,
                            on_update: Callable[[], None] | None = None) -> MCPCallResult:
        """Read a listed resource, or a URI matching a template (longest prefix wins).
        ``on_update`` is called once when the server says the resource changed after this
        read (where it offers subscriptions; the subscription outlives reconnects)."""
        server = self._index.server_for_uri(uri)
        srv = self._servers.get(server) if server else None
        if srv is None or srv.conn is None:
            return self._unavailable("resource", uri, server)
        conn, limit = srv.conn, srv.spec.timeout or self._call_timeout
        result = await conn.read_resource(uri, limit)
        if on_update is not None and not result.is_error \
                and await conn.subscribe(uri, min(limit, 10.0)):
            self._watchers.setdefault((srv.spec.name, uri), []).append(on_update)
        return result

    def _resource_updated(self, server: str, uri: str) -> None:
        """A subscribed resource changed: everyone who read it hears it once."""
        for cb in self._watchers.pop((server, uri), []):
            _safe_call(cb)

    def _connected(self, srv: Server) -> None:
        """A server (re)connected: its resource updates come here, and what was subscribed
        before is subscribed again (a new session forgot it)."""
        conn, name = srv.conn, srv.spec.name
        if conn is None:
            return
        conn.on_updated = lambda uri: self._resource_updated(name, uri)
        uris = [uri for server, uri in self._watchers if server == name]
        if uris:
            self._spawn(asyncio.gather(*(conn.subscribe(uri, 10.0) for uri in uris)))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> MCPCallResult:
        """Expand a prompt (``mcp__{server}__{prompt}``) into ``[role]: content`` text."""
        prompt = self._index.prompt_by_name.get(name)
        srv = self._servers.get(prompt.server) if prompt else None
        if prompt is None or srv is None or srv.conn is None:
            return self._unavailable("prompt", name, prompt.server if prompt else None)
        args = {
            str(k): v if isinstance(v, str) else msgspec.json.encode(v).decode()
            for k, v in arguments.items()
        }
        return await srv.conn.get_prompt(
            prompt.prompt, args, srv.spec.timeout or self._call_timeout
        )

    def _unavailable(self, what: str, name: str, server: str | None) -> MCPCallResult:
        srv = self._servers.get(server) if server else None
        if srv is None:
            return MCPCallResult(content=f"Unknown MCP {what}: {name}", is_error=True)
        detail = f" ({srv.error})" if srv.error else ""
        text = (
            f"MCP server {srv.spec.name!r} is not connected{detail}; {what} {name} is unavailable."
        )
        return MCPCallResult(content=text, is_error=True)

    async def login(self, name: str, opener: Opener) -> ServerStatus:
        """Log in to an HTTP server (``opener`` shows the login page to the user) and connect;
        raises ``KeyError`` for an unknown name, ``LoginError`` when it did not connect."""
        srv = self._server(name)
        await self._pool.login(srv, opener)
        return _status_of(srv)

    async def logout(self, name: str) -> ServerStatus:
        """Forget a server's tokens; it reconnects without them (and may then need a login)."""
        srv = self._server(name)
        await self._pool.logout(srv)
        status = _status_of(srv)
        self._emit_status(srv)
        return status

    def _server(self, name: str) -> Server:
        srv = self._servers.get(name)
        if srv is None:
            known = ", ".join(self._servers) or "none"
            raise KeyError(f"unknown MCP server {name!r} (configured: {known})")
        return srv

    async def refresh(self, name: str | None = None) -> list[CatalogChange]:
        """Rediscover one server or all, reconnecting dead ones; returns the +/- changes.

        Raises ``KeyError`` for an unknown server name (the message lists the known ones).
        """
        targets = [self._server(name)] if name is not None else list(self._servers.values())
        return list(await asyncio.gather(*(self._pool.refresh(srv) for srv in targets)))

    # -- publishing ----------------------------------------------------------------

    def _publish(self) -> None:
        """Rebuild the merged catalog; notify listeners when it changed."""
        index = CatalogIndex.build([srv.catalog for srv in self._servers.values()], self._index)
        if index.same_as(self._index):
            return
        self._index = index
        for cb in list(self._listeners.values()):
            _safe_call(cb)
        for srv in self._servers.values():
            self._emit_status(srv)

    def _emit_status(self, srv: Server) -> None:
        status = _status_of(srv)
        if status == srv.last_status:
            return
        if status.status == "connected" and (
                srv.last_status is None or srv.last_status.status != "connected"):
            self._connected(srv)
        srv.last_status = status
        for cb in list(self._status_listeners.values()):
            _safe_call(cb, status)


def _status_of(srv: Server) -> ServerStatus:
    conn, cat = srv.conn, srv.catalog
    init = conn.init if conn is not None else None
    return ServerStatus(
        name=srv.spec.name,
        status=srv.state,
        origin=srv.spec.origin,
        transport=srv.spec.type,
        tools=len(cat.tools),
        resources=len(cat.resources) + len(cat.templates),
        prompts=len(cat.prompts),
        error=srv.error,
        server_version=conn.server_version if conn is not None else None,
        protocol_version=init.protocol_version if init is not None else None,
        needs_auth=srv.needs_auth,
        logged_in=srv.auth is not None and srv.auth.logged_in,
    )


def _safe_call(cb: Callable[..., None], *args: Any) -> None:
    try:
        cb(*args)
    except Exception:  # a listener's bug must not break the manager
        log.exception("MCP listener %r raised", cb)
