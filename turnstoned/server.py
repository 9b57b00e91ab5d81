"""The stdio daemon: pygls with the LSP lifecycle, serving protocol v1."""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import signal
import sqlite3
import sys
import threading
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from turnstoned import __version__, rpc
from turnstoned import protocol as p
from turnstoned.handlers import HANDLERS
from turnstoned.transport import DaemonProtocol, StdioTransport, served_methods

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from turnstoned.config import Config
    from turnstoned.core.engine import Engine

log = logging.getLogger(__name__)

# Requests that wait for a model discovery under way (a first run: see EngineHolder).
AFTER_DISCOVERY = frozenset({"turn/start", "session/compact", "daemon/health"})


class Daemon(LanguageServer):
    ready = False
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


class EngineHolder:
    """Builds the engine on first use: config, store and core stay off the cold start."""

    def __init__(self, sink: rpc.PyglsSink, overrides: dict[str, dict[str, Any]]) -> None:
        self.sink = sink
        self.overrides = overrides
        self.engine: Engine | None = None
        self.error: str | None = None
        self.on_config: Callable[[Config], None] = lambda cfg: None
        self._loaded = False
        self._discovery: asyncio.Task[None] | None = None

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from turnstoned import config, paths
        from turnstoned.core.engine import Engine
        from turnstoned.store import Store

        try:
            cfg = config.with_overrides(config.load(), self.overrides)
            self.on_config(cfg)
            self.engine = Engine(cfg, Store(paths.database_file()), self.sink)
            self.engine.start()
            self._discover(cfg)
        except config.ConfigError as exc:
            self.error = str(exc)
        except (OSError, sqlite3.Error) as exc:
            self.error = f"cannot open the database {paths.database_file()}: {exc}"
        except Exception as exc:  # a boundary: report it on every request instead of dying
            log.exception("engine start failed")
            self.error = f"the engine failed to start: {type(exc).__name__}: {exc}"
        if self.error:
            log.error("%s", self.error)

    def _discover(self, cfg: Config) -> None:
        """No model named, a server URL given: ask the server in the background."""
        from turnstoned.config import discovery_target

        target = discovery_target(cfg.model)
        if target is not None:
            self._discovery = asyncio.get_running_loop().create_task(self._use_only_model(*target))

    async def _use_only_model(self, url: str, key: str) -> None:
        from turnstoned.config import with_overrides
        from turnstoned.llm.discovery import only_model

        name = await asyncio.to_thread(only_model, url, key)
        if name is not None and self.engine is not None:
            self.engine.config = with_overrides(self.engine.config, {"model": {"name": name}})

    async def settled(self) -> None:
        """Load the engine and wait for a model discovery that is under way."""
        self.load()
        if self._discovery is not None:
            await asyncio.shield(self._discovery)

    def after_discovery(self, fn: Callable[[Any], Awaitable[Any]]
                        ) -> Callable[[Any], Awaitable[Any]]:
        async def wrapped(params: Any) -> Any:
            await self.settled()
            return await fn(params)

        return wrapped

    def get(self) -> Engine:
        self.load()
        if self.engine is None:
            from turnstoned.core.errors import EngineError

            raise EngineError(p.ErrorCode.CONFIG_ERROR, self.error or "no engine")
        return self.engine


def create(overrides: dict[str, dict[str, Any]] | None = None) -> Daemon:
    server = Daemon("turnstoned", __version__, protocol_cls=DaemonProtocol,
                    converter_factory=rpc.converter)
    holder = EngineHolder(rpc.PyglsSink(server.protocol), overrides or {})
    for name, handler in HANDLERS.items():
        bound: Callable[[Any], Awaitable[Any]] = functools.partial(handler, holder.get)
        if name in AFTER_DISCOVERY:
            bound = holder.after_discovery(bound)
        fn = rpc.typed_handler(p.METHODS_BY_NAME[name], bound, lambda: server.ready)
        server.feature(name)(fn)

    @server.feature(lsp.INITIALIZED)
    def _initialized(_: Any) -> None:
        holder.load()
        threading.Thread(target=_prewarm, name="prewarm", daemon=True).start()
        if holder.error:
            holder.sink.notify(p.ShowMessageParams(type=1, message=f"turnstoned: {holder.error}"))

    @server.feature(lsp.SHUTDOWN)
    async def _shutdown(_: Any) -> None:
        if holder.engine is not None:
            await holder.engine.shutdown()

    server.holder = holder
    return server


def _claim_stdout() -> BinaryIO:
    """Keep fd 1 for frames only: stray prints and inherited fds go to stderr."""
    fd = os.dup(1)
    try:  # a bigger pipe lets streamed output flow while the editor parses (Linux only)
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError):
        pass
    out = os.fdopen(fd, "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def serve_stdio(overrides: dict[str, dict[str, Any]] | None = None) -> NoReturn:
    logging.basicConfig(level=os.environ.get("TURNSTONED_LOG", "WARNING").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rpc.install_log_filter()
    from turnstoned import hardening, watchdog

    hardening.harden()  # before any thread or child exists
    watchdog.start()  # children end with the daemon, even after kill -9
    out = _claim_stdout()
    server = create(overrides)
    code = 0
    try:
        code = _run_bounded(_serve(server, sys.stdin.buffer, out))
    except KeyboardInterrupt:  # a signal before the loop's handlers were in place
        code = 130
    finally:
        engine = server.holder.engine
        if engine is not None:
            engine.terminate()
    _finish(code)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_GRACE = 1.2  # seconds for turns to write their receipts after a signal
EOF_GRACE = 10.0  # the editor closed stdin: turns and MCP servers may take longer


async def _serve(server: Daemon, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve until stdin closes, `exit` or a stop signal, then shut the engine down.

    The editor may just close our stdin (no shutdown request): turns still get
    their receipts and MCP servers and background shells are stopped. After a
    signal that shutdown is bounded so the process ends within two seconds.
    """
    from pygls.io_ import StdoutWriter

    loop = asyncio.get_running_loop()
    server.protocol.set_writer(StdoutWriter(stdout))
    link = StdioTransport(server.protocol, served_methods())
    server.holder.on_config = lambda cfg: link.set_max_frame(cfg.daemon.max_frame_mib << 20)
    budget: asyncio.Timeout | None = None

    def on_signal(sig: signal.Signals) -> None:
        link.close(f"signal {sig.name}")
        if budget is not None and (when := budget.when()) is not None:
            budget.reschedule(min(when, loop.time() + SIGNAL_GRACE))

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    await link.start(stdin)
    assert link.done is not None
    reason = await link.done
    log.info("stopping (%s)", reason)
    engine = server.holder.engine
    if engine is not None:
        try:
            async with asyncio.timeout(EOF_GRACE if reason == "eof" else SIGNAL_GRACE) as budget:
                await engine.shutdown()
        except TimeoutError:
            log.warning("engine shutdown incomplete after %s; stopping anyway", reason)
        except OSError as exc:
            log.warning("engine shutdown failed: %s", exc)
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
