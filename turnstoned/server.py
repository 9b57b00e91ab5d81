"""The stdio daemon: pygls with the LSP lifecycle, serving protocol v1."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sqlite3
import sys
import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from turnstoned import __version__, rpc
from turnstoned import protocol as p
from turnstoned.handlers import HANDLERS

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine

log = logging.getLogger(__name__)


class _Protocol(LanguageServerProtocol):
    """Adds turnstoned's capabilities to the ``initialize`` answer."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Generator[Any, Any, lsp.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "turnstoned": {
                "protocolVersion": p.PROTOCOL_VERSION,
                "protocolRevision": p.PROTOCOL_REVISION,
                "methods": [m.name for m in p.METHODS if m.direction == "client->daemon"],
            }
        }
        self._server.ready = True  # type: ignore[attr-defined]
        return result


class Daemon(LanguageServer):
    ready = False


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
        self._loaded = False

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from turnstoned import config, paths
        from turnstoned.core.engine import Engine
        from turnstoned.store import Store

        try:
            cfg = config.with_overrides(config.load(), self.overrides)
            self.engine = Engine(cfg, Store(paths.database_file()), self.sink)
            self.engine.start()
        except config.ConfigError as exc:
            self.error = str(exc)
        except (OSError, sqlite3.Error) as exc:
            self.error = f"cannot open the database {paths.database_file()}: {exc}"
        except Exception as exc:  # a boundary: report it on every request instead of dying
            log.exception("engine start failed")
            self.error = f"the engine failed to start: {type(exc).__name__}: {exc}"
        if self.error:
            log.error("%s", self.error)

    def get(self) -> Engine:
        self.load()
        if self.engine is None:
            from turnstoned.core.errors import EngineError

            raise EngineError(p.ErrorCode.CONFIG_ERROR, self.error or "no engine")
        return self.engine


def create(overrides: dict[str, dict[str, Any]] | None = None) -> Daemon:
    server = Daemon("turnstoned", __version__, protocol_cls=_Protocol,
                    converter_factory=rpc.converter)
    holder = EngineHolder(rpc.PyglsSink(server.protocol), overrides or {})
    for name, handler in HANDLERS.items():
        fn = rpc.typed_handler(p.METHODS_BY_NAME[name], functools.partial(handler, holder.get),
                               lambda: server.ready)
        server.feature(name)(fn)

    @server.feature(lsp.INITIALIZED)
    def _initialized(_: Any) -> None:
        holder.load()
        threading.Thread(target=_prewarm, name="prewarm", daemon=True).start()
        if holder.error:
            server.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error, message=f"turnstoned: {holder.error}"))

    @server.feature(lsp.SHUTDOWN)
    async def _shutdown(_: Any) -> None:
        if holder.engine is not None:
            await holder.engine.shutdown()

    server.holder = holder  # type: ignore[attr-defined]
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


def serve_stdio(overrides: dict[str, dict[str, Any]] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("TURNSTONED_LOG", "WARNING").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rpc.install_log_filter()
    from turnstoned import hardening, watchdog

    hardening.harden()  # before any thread or child exists
    watchdog.start()  # children end with the daemon, even after kill -9
    out = _claim_stdout()
    server = create(overrides)
    try:
        asyncio.run(_serve(server, sys.stdin.buffer, out))
    except (KeyboardInterrupt, SystemExit):
        pass  # `exit` ends the process through SystemExit
    finally:
        engine = server.holder.engine  # type: ignore[attr-defined]
        if engine is not None:
            engine.terminate()
    return 0


async def _serve(server: Daemon, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """pygls' stdio loop, then a graceful engine shutdown while the loop still runs.

    The editor may just close our stdin (no shutdown request): turns still get
    their receipts and MCP servers and background shells are stopped.
    """
    from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

    stop = threading.Event()
    server._stop_event = stop
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        await run_async(stop_event=stop, reader=StdinAsyncReader(stdin, server.thread_pool),
                        protocol=server.protocol, logger=log,
                        error_handler=server.report_server_error)
    finally:
        engine = server.holder.engine  # type: ignore[attr-defined]
        if engine is not None:
            try:
                await asyncio.wait_for(engine.shutdown(), 10)
            except (TimeoutError, OSError) as exc:
                log.warning("engine shutdown incomplete: %s", exc)
        server.shutdown()  # type: ignore[no-untyped-call]
