"""The stdio daemon: pygls with the LSP lifecycle, serving protocol v1."""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from turnstoned import __version__
from turnstoned import protocol as p
from turnstoned.daemon import process, rpc
from turnstoned.daemon.framing import DEFAULT_MAX_FRAME
from turnstoned.daemon.handlers import HANDLERS
from turnstoned.daemon.router import CALLER, Connection, Router
from turnstoned.daemon.transport import DaemonProtocol, Link, served_methods

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from turnstoned.config import Config
    from turnstoned.core.engine import Engine

log = logging.getLogger(__name__)

IDLE_TIMEOUT = 600.0  # [daemon] idle_timeout_seconds until the config is read

# Requests that wait for a model discovery under way (a first run: see EngineHolder).
AFTER_DISCOVERY = frozenset({"turn/start", "session/compact", "daemon/health"})


class Daemon(LanguageServer):
    """The pygls server of one connection (its LSP lifecycle is its own)."""

    ready = False
    hub: Hub
    conn: Connection
    holder: EngineHolder
    protocol: DaemonProtocol


def _prewarm() -> None:
    """Import the model client and tools in the background so the first turn does not wait."""
    try:
        import turnstoned.llm.openai_chat  # noqa: F401
        from turnstoned import tools

        tools.registry()  # imports every tool module
    except Exception:  # an optional speed-up; the turn reports any real problem
        log.debug("prewarm failed", exc_info=True)


class EngineHolder(process.EngineHolder):
    """The shared holder, as the LSP-framed daemon uses it: requests get the engine (or
    ``CONFIG_ERROR``), and the editors following a session answer its editor/* and
    elicitation questions."""

    def __init__(self, sink: Router, overrides: dict[str, dict[str, Any]]) -> None:
        super().__init__(sink, overrides)
        self.on_engine = self._wire

    def _wire(self, engine: Engine) -> None:
        router = self.sink
        assert isinstance(router, Router)
        engine.services.editor = router  # the editors' diagnostics, buffers, ...
        engine.services.elicit = router.request_elicitation  # servers' questions
        engine.services.authorize = router.request_authorization  # servers' login pages

    def after_discovery(self, fn: Callable[[Any], Awaitable[Any]]
                        ) -> Callable[[Any], Awaitable[Any]]:
        async def wrapped(params: Any) -> Any:
            await self.settled()
            return await fn(params)

        return wrapped

    def get(self) -> Engine:
        self.reread_config()
        self.load()
        if self.engine is None:
            from turnstoned.core.errors import EngineError

            raise EngineError(p.ErrorCode.CONFIG_ERROR, self.error or "no engine")
        return self.engine


class Hub:
    """What the connections of one daemon process share: the engine and the router.

    ``resident``: the daemon outlives its connections (``turnstoned serve``); a
    connection's ``shutdown`` then ends only that connection's LSP lifecycle.
    """

    def __init__(self, overrides: dict[str, dict[str, Any]] | None = None,
                 resident: bool = False) -> None:
        self.router = Router(resident)
        self.holder = EngineHolder(self.router, overrides or {})
        self.converter = rpc.converter()  # building one costs ~10 ms: shared by connections
        self.links: set[Link] = set()
        self.max_frame = DEFAULT_MAX_FRAME
        self.idle_timeout = IDLE_TIMEOUT  # `turnstoned serve`: see resident._idle
        self.idle_fixed = False  # given on the command line: the config does not change it
        self.holder.on_config = self._configured
        self.router.parent_of = self._parent_of
        self._warm: asyncio.Task[None] | None = None

    def _parent_of(self, session_id: str) -> str | None:
        engine = self.holder.engine
        return engine.parent_of(session_id) if engine is not None else None

    def _configured(self, cfg: Config) -> None:
        self.max_frame = cfg.daemon.max_frame_mib << 20
        if not self.idle_fixed:
            self.idle_timeout = cfg.daemon.idle_timeout_seconds
        for link in self.links:
            link.set_max_frame(self.max_frame)

    def open(self) -> tuple[Daemon, Link]:
        """A connection: its pygls server and the link that reads its frames."""
        server = create(hub=self)
        link = Link(server.protocol, served_methods(), self.max_frame)
        self.links.add(link)
        return server, link

    def close(self, server: Daemon, link: Link) -> None:
        """A connection ended: it is asked and told nothing more."""
        self.links.discard(link)
        self.router.remove(server.conn)

    def warm(self) -> None:
        """Once per process: import the model client and tools, and connect to the model
        server, in the background, so a first turn does not pay for them."""
        if self._warm is None:
            self._warm = asyncio.get_running_loop().create_task(self._warm_up(), name="warm")

    async def _warm_up(self) -> None:
        await asyncio.to_thread(_prewarm)
        await self.holder.settled()
        engine = self.holder.engine
        if engine is not None:
            await engine.prewarm()


def create(overrides: dict[str, dict[str, Any]] | None = None, hub: Hub | None = None) -> Daemon:
    """The pygls server of one connection (of a new daemon's hub unless one is given)."""
    hub = hub or Hub(overrides)
    holder = hub.holder
    server = Daemon("turnstoned", __version__, protocol_cls=DaemonProtocol,
                    converter_factory=lambda: hub.converter)
    conn = hub.router.add(server.protocol)

    def as_caller(fn: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def call(params: Any) -> Any:
            CALLER.set(conn)  # this request's own task: what it starts belongs to conn
            return await fn(params)
        return call

    for name, handler in HANDLERS.items():
        bound: Callable[[Any], Awaitable[Any]] = functools.partial(handler, holder.get)
        if name in AFTER_DISCOVERY:
            bound = holder.after_discovery(bound)
        fn = rpc.typed_handler(p.METHODS_BY_NAME[name], as_caller(bound), lambda: server.ready)
        server.feature(name)(fn)

    @server.feature(lsp.INITIALIZED)
    def _initialized(_: Any) -> None:
        conn.initialized = True
        holder.load()
        hub.warm()
        if holder.error:
            conn.notify(p.ShowMessageParams(type=1, message=f"turnstoned: {holder.error}"))

    @server.feature(lsp.SHUTDOWN)
    async def _shutdown(_: Any) -> None:
        if holder.engine is not None and not hub.router.resident:
            await holder.engine.shutdown()

    server.hub, server.conn, server.holder = hub, conn, holder
    return server


def setup_process() -> None:
    """What every daemon process does first (``process.setup_process``), pygls quieted."""
    process.setup_process()
    rpc.install_log_filter()


def run_daemon(hub: Hub, main: Coroutine[Any, Any, int]) -> NoReturn:
    """Run ``main`` on a fresh loop, then kill what sessions left and end the process."""
    code = 0
    try:
        code = _run_bounded(main)
    except KeyboardInterrupt:  # a signal before the loop's handlers were in place
        code = 130
    finally:
        engine = hub.holder.engine
        if engine is not None:
            engine.terminate()
    _finish(code)


def serve_stdio(overrides: dict[str, dict[str, Any]] | None = None) -> NoReturn:
    setup_process()
    out = process.claim_stdout()
    hub = Hub(overrides)
    run_daemon(hub, _serve(hub, sys.stdin.buffer, out))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_GRACE = 1.2  # seconds for turns to write their receipts after a signal
EOF_GRACE = 10.0  # the editor closed stdin: turns and MCP servers may take longer


class Stopper:
    """Stop signals end the daemon within two seconds: ``on_signal`` shortens the engine's
    shutdown (if under way) to ``SIGNAL_GRACE`` and calls ``then``."""

    def __init__(self, then: Callable[[str], None]) -> None:
        self.then = then
        self.budget: asyncio.Timeout | None = None
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.on_signal, sig)

    def on_signal(self, sig: signal.Signals) -> None:
        self.then(f"signal {sig.name}")
        budget = self.budget
        if budget is not None and (when := budget.when()) is not None:
            budget.reschedule(min(when, asyncio.get_running_loop().time() + SIGNAL_GRACE))

    async def stop_engine(self, hub: Hub, reason: str) -> None:
        """Shut the engine down: turns get their receipts, MCP servers and shells stop."""
        engine = hub.holder.engine
        if engine is None:
            return
        # No client is waiting after EOF or idleness: turns and MCP servers may take longer.
        grace = EOF_GRACE if reason in ("eof", "idle") else SIGNAL_GRACE
        try:
            async with asyncio.timeout(grace) as self.budget:
                await engine.shutdown()
        except TimeoutError:
            log.warning("engine shutdown incomplete after %s; stopping anyway", reason)
        except OSError as exc:
            log.warning("engine shutdown failed: %s", exc)


async def _serve(hub: Hub, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve until stdin closes, `exit` or a stop signal, then shut the engine down.

    The editor may just close our stdin (no shutdown request): turns still get
    their receipts and MCP servers and background shells are stopped. After a
    signal that shutdown is bounded so the process ends within two seconds.
    """
    from pygls.io_ import StdoutWriter

    server, link = hub.open()
    server.protocol.set_writer(StdoutWriter(stdout))
    stopper = Stopper(link.close)
    await link.start(stdin)
    assert link.done is not None
    reason = await link.done
    log.info("stopping (%s)", reason)
    await stopper.stop_engine(hub, reason)  # the turns' last notifications still go out
    hub.close(server, link)
    # LSP: `exit` without a `shutdown` first is an abnormal end.
    return 1 if reason == "exit" and not server.protocol.shut_down else 0


def _run_bounded(main: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run`` without its unbounded waits: tasks that ignore cancellation and
    threads blocked in a read (the default executor) do not hold the process."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=0.5))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # leaves executor threads running instead of joining them


def _finish(code: int) -> NoReturn:
    """End the process once everything was stopped explicitly. The interpreter's own
    exit would join worker threads (one may be blocked in a read for good) and tear
    down every module, which can take longer than a signal's two seconds."""
    atexit._run_exitfuncs()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
