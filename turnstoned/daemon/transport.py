"""The daemon's transport: frames in, envelopes checked, messages handed to pygls.

pygls' own reader dies on a huge ``Content-Length`` and goes deaf on header
variants, so the daemon reads each connection itself (``framing.FrameReader``) on
the event loop: stdin for the stdio daemon, a socket connection for each client
of the resident daemon, through the same ``Link``. Every message is checked as a JSON-RPC 2.0 envelope before pygls sees it:
what is not one is answered here (-32600, -32700), requests for methods the
daemon does not serve get -32601, notifications for them are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol, lsp_method

from turnstoned import protocol as p
from turnstoned.daemon import framing, rpc, rundir
from turnstoned.protocol import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator

log = logging.getLogger(__name__)

STALL_SECONDS = 0.2  # how long a short body waits for bytes that may complete it


def served_methods() -> frozenset[str]:
    """Every method a client may send: the protocol's, the LSP lifecycle's included, and
    ``$/cancelRequest`` for a client's own requests."""
    return frozenset({m.name for m in p.METHODS if m.direction == "client->daemon"}
                     | {"$/cancelRequest"})


def _initialize_result(name: str, version: str) -> p.InitializeResult:
    methods = [m.name for m in p.METHODS if m.direction == "client->daemon" and not m.lsp]
    return p.InitializeResult(
        capabilities=p.ServerCapabilities(experimental=p.ExperimentalCapabilities(
            turnstoned=p.TurnstonedCapabilities(protocol_version=p.PROTOCOL_VERSION,
                                                protocol_revision=p.PROTOCOL_REVISION,
                                                methods=methods))),
        server_info=p.ServerInfo(name=name, version=version))


def _editor_capabilities(options: Any) -> p.EditorCapabilities | None:
    """The editor services a client declared at initialize (None: none, or unreadable)."""
    if not isinstance(options, dict):
        return None
    try:
        declared = msgspec.convert(options, p.InitializationOptions)
    except msgspec.ValidationError as exc:
        log.info("initializationOptions not understood (%s); no editor services", exc)
        return None
    return declared.turnstoned.editor if declared.turnstoned else None


class DaemonProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with turnstoned's capabilities in the ``initialize`` answer."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Generator[Any, Any, Any]:
        """Answer with ``protocol.InitializeResult``: what the daemon serves and nothing of
        pygls' defaults, so an LSP host (vscode-languageclient, ``vim.lsp.start``) does not
        stream open buffers to it."""
        yield from super().lsp_initialize(params)
        self.editor = _editor_capabilities(params.initialization_options)
        answer = rpc.encode(_initialize_result(self._server.name, self._server.version))
        self.server_capabilities = self._converter.structure(answer["capabilities"],
                                                             lsp.ServerCapabilities)
        self._server.ready = True
        return answer

    _server: Any  # the Daemon
    # What the client's editor serves (``initializationOptions.turnstoned.editor``).
    editor: p.EditorCapabilities | None = None

    def _send_response(self, msg_id: Any, result: Any = None,
                       error: lsp.ResponseError | None = None) -> None:
        """Every error leaves with ``data: {kind}`` only: never a traceback, whatever raised."""
        if error is not None:
            error = lsp.ResponseError(code=error.code, message=(error.message or "error")[:4000],
                                      data={"kind": rpc.kind_of(error.code)})
        super()._send_response(msg_id, result, error)

    @property
    def initialized(self) -> bool:
        """``initialize`` was answered."""
        return bool(self._server.ready)

    @property
    def shut_down(self) -> bool:
        """``shutdown`` was answered: only ``exit`` is expected now."""
        return bool(self._shutdown)

    def fail_request(self, msg_id: int | str, reason: str) -> None:
        """Fail the daemon's pending request ``msg_id`` (its answer could not be read)."""
        future = self.withdraw_request(msg_id)
        if future is not None and not future.done():
            future.set_exception(JsonRpcException(message=reason))

    def withdraw_request(self, msg_id: int | str) -> Any:
        """Stop waiting for the answer to ``msg_id``; a late answer is then ignored."""
        self._result_types.pop(msg_id, None)
        return self._request_futures.pop(msg_id, None)


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


MAX_BACKLOG = 256 << 20  # bytes a client may leave unread before it is disconnected


class SocketWriter:
    """pygls' writer interface over a socket connection's transport (never blocks)."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport

    def write(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(data)
        if self.transport.get_write_buffer_size() > MAX_BACKLOG:
            # A client that stopped reading would grow the daemon without bound.
            log.warning("a client left %d MiB unread; disconnecting it", MAX_BACKLOG >> 20)
            self.transport.abort()

    def close(self) -> None:
        self.transport.close()


class _Pipe(asyncio.Protocol):
    """Bytes of one connection into its link: stdin's read pipe, or a socket connection."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not isinstance(transport, asyncio.WriteTransport):
            return  # stdin's read pipe: frames go back through stdout
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family == socket.AF_UNIX and rundir.peer_uid(sock) != os.getuid():
            log.warning("refused a connection from another user")
            transport.abort()
            self.link.close("refused")
            return
        self.link.protocol.set_writer(SocketWriter(transport))
        self.link.attach(transport)

    def data_received(self, data: bytes) -> None:
        self.link.feed(data)

    def eof_received(self) -> bool:
        self.link.close("eof")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.close("eof")


class Link:
    """Reads one connection's frames and dispatches them into its pygls protocol."""

    def __init__(self, protocol: DaemonProtocol, served: Collection[str],
                 max_frame: int = framing.DEFAULT_MAX_FRAME) -> None:
        self.protocol = protocol
        self.served = served
        self.frames = framing.FrameReader(max_frame)
        self.done: asyncio.Future[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stall: asyncio.TimerHandle | None = None
        self._pipe: asyncio.BaseTransport | None = None
        self._garbage_logged = 0
        self.on_close: Callable[[str], None] = lambda reason: None
        self._ended = False
        self._shutdown_asked = False  # a `shutdown` request arrived (answered or not)

    def protocol_factory(self) -> asyncio.Protocol:
        """The asyncio protocol that feeds this link (for a socket connection)."""
        return _Pipe(self)

    def attach(self, transport: asyncio.BaseTransport) -> None:
        """Read from a socket connection that was just made; ``done`` resolves when it ends."""
        self._loop = asyncio.get_running_loop()
        self.done = self._loop.create_future()
        self._pipe = transport

    async def start(self, stdin: BinaryIO) -> None:
        """Begin reading stdin; ``done`` resolves with why the transport ended."""
        loop = self._loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        try:
            self._pipe, _ = await loop.connect_read_pipe(lambda: _Pipe(self), stdin)
        except ValueError:  # a regular file, not a pipe: read it in a thread
            threading.Thread(target=self._read_blocking, args=(stdin.fileno(), loop),
                             name="stdin", daemon=True).start()

    def _read_blocking(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(self.feed, chunk)
        except OSError as exc:
            log.warning("stdin: %s", exc)
        loop.call_soon_threadsafe(self.close, "eof")

    def set_max_frame(self, size: int) -> None:
        """Frames over ``size`` bytes are skipped from now on (``[daemon] max_frame_mib``)."""
        self.frames.max_frame = size

    def close(self, reason: str) -> None:
        """Stop reading (a socket: close it); ``done`` resolves with ``reason``."""
        if self._pipe is not None:
            self._pipe.close()
        if self._ended:
            return
        self._ended = True
        if self.done is not None:
            self.done.set_result(reason)
        self.on_close(reason)

    # ----------------------------------------------------------- frames

    def feed(self, data: bytes) -> None:
        for event in self.frames.feed(data):
            self._event(event)
        if self.frames.garbage > self._garbage_logged:
            log.warning("skipped %d bytes that were not a frame",
                        self.frames.garbage - self._garbage_logged)
            self._garbage_logged = self.frames.garbage
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        if self.frames.waiting and self._loop is not None:
            self._stall = self._loop.call_later(STALL_SECONDS, self._flush)

    def _flush(self) -> None:
        self._stall = None
        for event in self.frames.flush():
            self._event(event)

    def _event(self, event: framing.Event) -> None:
        if isinstance(event, framing.Message):
            self.message(event.value)
        elif isinstance(event, framing.Oversized):
            limit = self.frames.max_frame
            self.error(event.id, ErrorCode.INVALID_REQUEST,
                       f"frame of {event.length} bytes is over the limit of {limit} bytes "
                       "([daemon] max_frame_mib); it was skipped")
        else:
            self.error(event.id, ErrorCode.PARSE_ERROR, f"the frame is not JSON: {event.reason}")

    def error(self, msg_id: int | str | None, code: ErrorCode, message: str) -> None:
        rpc.send_error(self.protocol.writer, msg_id, code, message)

    # ----------------------------------------------------------- envelopes

    def message(self, msg: Any) -> None:
        """Check one JSON-RPC envelope and hand it on, or answer why not."""
        if not isinstance(msg, dict):
            why = "batches are not supported" if isinstance(msg, list) else "not a JSON object"
            return self.error(None, ErrorCode.INVALID_REQUEST, f"invalid message: {why}")
        has_id, msg_id = "id" in msg, msg.get("id")
        answer_to = msg_id if _valid_id(msg_id) else None
        if "method" not in msg:
            if has_id and ("result" in msg or "error" in msg):
                return self._response(msg, answer_to)
            return self.error(answer_to, ErrorCode.INVALID_REQUEST,
                              "invalid message: no `method`, `result` or `error`")
        method = msg["method"]
        problem = ('`jsonrpc` must be "2.0"' if msg.get("jsonrpc") != "2.0"
                   else "`method` must be a string" if not isinstance(method, str)
                   else "`id` must be a string or an integer" if has_id and answer_to is None
                   else None)
        if problem is not None:
            return self.error(answer_to, ErrorCode.INVALID_REQUEST, f"invalid message: {problem}")
        self._call(msg, method, answer_to)

    def _call(self, msg: dict[str, Any], method: str, msg_id: int | str | None) -> None:
        if method == "exit":
            return self.close("exit")
        if self.protocol.shut_down or (method == "shutdown" and self._shutdown_asked):
            if msg_id is not None:
                self.error(msg_id, ErrorCode.INVALID_REQUEST, "the daemon is shutting down")
            return
        if method == "shutdown":
            if not self.protocol.initialized:
                if msg_id is not None:
                    self.error(msg_id, ErrorCode.SERVER_NOT_INITIALIZED,
                               "shutdown before initialize")
                return
            self._shutdown_asked = True
        if method not in self.served:
            if msg_id is not None:
                self.error(msg_id, ErrorCode.METHOD_NOT_FOUND, f"unknown method: {method}")
            else:
                log.debug("ignored notification %s", method)
            return
        if method == "$/cancelRequest":
            params = msg.get("params")
            if not (isinstance(params, dict) and _valid_id(params.get("id"))):
                log.debug("ignored a $/cancelRequest without a usable id")
                return
        try:
            message = self.protocol.structure_message(msg)
        except JsonRpcException:  # pygls' converter refused the params
            log.debug("%s: params do not fit", method, exc_info=True)
            if msg_id is not None:
                self.error(msg_id, ErrorCode.INVALID_PARAMS, f"{method}: invalid params")
            return
        try:
            self.protocol.handle_message(message)
        except Exception:  # a dispatch boundary: log it, answer cleanly, keep reading
            log.exception("%s failed", method)
            if msg_id is not None:
                self.error(msg_id, ErrorCode.INTERNAL_ERROR, f"{method} failed")

    def _response(self, msg: dict[str, Any], msg_id: int | str | None) -> None:
        """A client's answer to one of the daemon's requests."""
        if msg_id is None:
            log.warning("dropped a response without a usable id")
            return
        try:
            message = self.protocol.structure_message(msg)
        except JsonRpcException:  # a malformed answer: the request fails instead of waiting forever
            log.warning("malformed response to %r", msg_id)
            self.protocol.fail_request(msg_id, "the client's answer was malformed")
            return
        try:
            self.protocol.handle_message(message)
        except Exception:  # a dispatch boundary: log it and keep reading
            log.exception("response %r failed", msg_id)
