"""The stdio daemon: pygls with the LSP lifecycle, serving protocol v1."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Generator
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from turnstoned import __version__, config, paths, rpc
from turnstoned import protocol as p
from turnstoned.handlers import build

log = logging.getLogger(__name__)


class _Protocol(LanguageServerProtocol):
    """Adds turnstoned's capabilities to the ``initialize`` answer."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Generator[Any, Any, lsp.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "turnstoned": {
                "protocolVersion": p.PROTOCOL_VERSION,
                "methods": [m.name for m in p.METHODS if m.direction == "client->daemon"],
            }
        }
        self._server.ready = True  # type: ignore[attr-defined]
        return result


class Daemon(LanguageServer):
    ready = False


def _prewarm() -> None:
    """Import the model client in the background so the first turn does not wait for it."""
    try:
        import turnstoned.llm.openai_chat  # noqa: F401
    except Exception:  # an optional speed-up; the turn reports any real problem
        log.debug("prewarm failed", exc_info=True)


def create(cfg: config.Config | None, config_error: str | None) -> Daemon:
    server = Daemon("turnstoned", __version__, protocol_cls=_Protocol,
                    converter_factory=rpc.converter)
    sink = rpc.PyglsSink(server.protocol)
    engine = None
    if cfg is not None:
        from turnstoned.core.engine import Engine
        from turnstoned.store import Store

        engine = Engine(cfg, Store(paths.database_file()), sink)
    handlers = build(engine) if engine is not None else _config_error_handlers(config_error or "")
    for method in p.METHODS:
        if method.direction == "client->daemon":
            fn = rpc.typed_handler(method, handlers[method.name], lambda: server.ready)
            server.feature(method.name)(fn)

    @server.feature(lsp.INITIALIZED)
    def _initialized(_: Any) -> None:
        threading.Thread(target=_prewarm, name="prewarm", daemon=True).start()
        if config_error:
            server.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error, message=f"turnstoned: {config_error}"))

    @server.feature(lsp.SHUTDOWN)
    async def _shutdown(_: Any) -> None:
        if engine is not None:
            await engine.shutdown()

    server.engine = engine  # type: ignore[attr-defined]
    return server


def _config_error_handlers(message: str) -> dict[str, Any]:
    """With a broken config file every request explains it; health still answers."""

    async def refuse(_: Any) -> Any:
        raise rpc.RpcError(p.ErrorCode.CONFIG_ERROR, message)

    async def health(_: Any) -> p.DaemonHealthResult:
        return p.DaemonHealthResult(version=__version__, protocol_version=p.PROTOCOL_VERSION,
                                    sessions=0, config_error=message, mcp=p.McpHealth())

    names = [m.name for m in p.METHODS if m.direction == "client->daemon"]
    return {name: refuse for name in names} | {"daemon/health": health}


def _claim_stdout() -> BinaryIO:
    """Keep fd 1 for frames only: stray prints and inherited fds go to stderr."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def serve_stdio() -> int:
    logging.basicConfig(level=os.environ.get("TURNSTONED_LOG", "WARNING").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rpc.install_log_filter()
    try:
        cfg, err = config.load(), None
    except config.ConfigError as exc:
        cfg, err = None, str(exc)
        log.error("%s", err)
    out = _claim_stdout()
    server = create(cfg, err)
    try:
        server.start_io(sys.stdin.buffer, out)
    finally:
        engine = server.engine  # type: ignore[attr-defined]
        if engine is not None:
            engine.terminate()
    return 0
