"""ACP's transport: JSON-RPC 2.0, one message per line (UTF-8 JSON, no embedded newline).

``Peer`` reads lines from the client, runs each request in its own task (a
``session/prompt`` lasts a turn while permission answers keep arriving), answers
it, and sends the agent's own requests and notifications. What it answers for
bad input, never a traceback:

- a line that is not JSON: ``-32700`` with ``id: null``;
- a JSON array (ACP has no batches), or an object that is not a request, a
  notification or a response: ``-32600`` (with its ``id`` when it has a usable one);
- a line longer than ``max_line`` bytes: skipped without being kept, ``-32600``;
- an unknown method: ``-32601`` (an unknown notification is ignored);
- params that do not validate: ``-32602`` naming the field;
- a handler that raised ``AcpError``: its code, message and data; anything else
  raised: ``-32603`` with the exception's type and message (the traceback goes
  to the log on stderr);
- a request the client withdrew (``$/cancel_request``): its handler is cancelled
  and it is answered ``-32800``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec

log = logging.getLogger(__name__)

JSON = dict[str, Any]
Handler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None] | None]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)
RESOURCE_NOT_FOUND = -32002  # ACP: a session (or file) that is not there
REQUEST_CANCELLED = -32800
CANCEL_REQUEST = "$/cancel_request"  # ACP's protocol-level withdrawal of a request
DEFAULT_MAX_LINE = 64 << 20


class AcpError(Exception):
    """A JSON-RPC error to answer with (``data`` always carries ``kind`` when given one)."""

    def __init__(self, code: int, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.kind = code, message, kind

    def wire(self) -> JSON:
        error: JSON = {"code": self.code, "message": self.message}
        if self.kind:
            error["data"] = {"kind": self.kind}
        return error


class RemoteError(Exception):
    """The client answered one of our requests with an error."""

    def __init__(self, error: Any) -> None:
        self.error = error if isinstance(error, dict) else {"message": str(error)}
        super().__init__(str(self.error.get("message", "error")))


def _usable_id(msg: JSON) -> int | str | None:
    found = msg.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


class Peer:
    """One ACP connection: requests in (``handlers``), requests and notifications out."""

    def __init__(self, write: Callable[[bytes], None], max_line: int = DEFAULT_MAX_LINE) -> None:
        self._write = write
        self.max_line = max_line
        self.handlers: dict[str, tuple[type | None, Handler]] = {}
        self.notifications: dict[str, tuple[type | None, NotificationHandler]] = {}
        # Methods not in the tables: a fallback by prefix (the ``_turnstoned/`` extensions).
        self.fallback: Callable[[str, Any], Awaitable[Any]] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._serving: dict[int | str, asyncio.Task[None]] = {}  # the client's open requests
        self._encoder = msgspec.json.Encoder()
        self.closed = False
        self.reading = True

    # ----------------------------------------------------------- registration

    def request(self, method: str, params: type | None = None) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            self.handlers[method] = (params, fn)
            return fn
        return register

    def notification(self, method: str, params: type | None = None
                     ) -> Callable[[NotificationHandler], NotificationHandler]:
        def register(fn: NotificationHandler) -> NotificationHandler:
            self.notifications[method] = (params, fn)
            return fn
        return register

    # ----------------------------------------------------------- sending

    def send(self, msg: JSON) -> None:
        if self.closed:
            return
        try:
            self._write(self._encoder.encode(msg) + b"\n")
        except (OSError, ValueError) as exc:  # the client went away
            log.debug("a message was not sent: %s", exc)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: Any, on_id: Callable[[int], None] | None = None
                   ) -> Any:
        """Send a request and wait for its result; ``RemoteError`` when the client answered
        with an error. Cancelling the wait withdraws the request (``$/cancel_request``)."""
        if not self.reading:
            raise ConnectionError("the client closed the connection")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        if on_id is not None:
            on_id(msg_id)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            if not self.closed:
                self.notify(CANCEL_REQUEST, {"requestId": msg_id})
            raise
        finally:
            self._waiting.pop(msg_id, None)

    # ----------------------------------------------------------- reading

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Read and dispatch until the client closes its end."""
        buffer = bytearray()
        skipping = False  # inside a line over the limit: dropped up to its newline
        while True:
            try:
                chunk = await reader.read(1 << 16)
            except (ConnectionError, OSError):
                break
            if not chunk:
                if buffer.strip() and not skipping:
                    self._line(bytes(buffer))
                break
            start = 0
            while (newline := chunk.find(b"\n", start)) >= 0:
                if skipping:
                    skipping = False
                else:
                    buffer += chunk[start:newline]
                    line = bytes(buffer)
                    buffer.clear()
                    if line.strip():
                        self._line(line)
                start = newline + 1
            if not skipping:
                buffer += chunk[start:]
                if len(buffer) > self.max_line:
                    buffer.clear()
                    skipping = True
                    self._error(None, INVALID_REQUEST,
                                f"a message over {self.max_line} bytes was skipped")
        self.eof()

    def _line(self, line: bytes) -> None:
        try:
            msg = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            self._error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        if not isinstance(msg, dict):
            self._error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC object "
                                               "(ACP has no batches)")
            return
        method = msg.get("method")
        if method is None and ("result" in msg or "error" in msg):
            self._answered(msg)
        elif not isinstance(method, str) or msg.get("jsonrpc") != "2.0":
            self._error(_usable_id(msg), INVALID_REQUEST,
                        "Invalid request: `jsonrpc` must be \"2.0\" and `method` a string")
        elif "id" in msg:
            msg_id = _usable_id(msg)
            if msg_id is None:
                self._error(None, INVALID_REQUEST, "Invalid request: `id` must be a string "
                                                   "or an integer")
                return
            if msg_id in self._serving:
                self._error(msg_id, INVALID_REQUEST, f"Invalid request: id {msg_id!r} is in use")
                return
            task = self._spawn(self._request(msg_id, method, msg.get("params")))
            self._serving[msg_id] = task
            task.add_done_callback(lambda _: self._serving.pop(msg_id, None))
        elif method == CANCEL_REQUEST:
            self._withdrawn(msg.get("params"))
        else:
            self._spawn(self._notification(method, msg.get("params")))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _withdrawn(self, params: Any) -> None:
        """``$/cancel_request``: the client no longer wants the answer to one of its requests."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._serving.get(request_id) if isinstance(request_id, int | str) else None
        if task is not None:
            task.cancel()

    def _answered(self, msg: JSON) -> None:
        future = self._waiting.get(msg.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return  # withdrawn, or not ours
        if "error" in msg:
            future.set_exception(RemoteError(msg["error"]))
        else:
            future.set_result(msg.get("result"))

    def _error(self, msg_id: int | str | None, code: int, message: str,
               kind: str | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": AcpError(code, message, kind).wire()})

    async def _request(self, msg_id: int | str, method: str, raw: Any) -> None:
        try:
            result = await self._dispatch(method, raw)
        except AcpError as exc:
            self.send({"jsonrpc": "2.0", "id": msg_id, "error": exc.wire()})
            return
        except asyncio.CancelledError:
            self._error(msg_id, REQUEST_CANCELLED, "the request was cancelled")
            return
        except Exception as exc:  # a boundary: a bug is an error answer, never a dead agent
            log.exception("%s failed", method)
            self._error(msg_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", "internal")
            return
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result if result is not None else {}})

    async def _dispatch(self, method: str, raw: Any) -> Any:
        entry = self.handlers.get(method)
        if entry is None:
            if self.fallback is not None and method.startswith("_"):
                return await self.fallback(method, raw)
            raise AcpError(METHOD_NOT_FOUND, f"Method not found: {method}", "methodNotFound")
        params_type, fn = entry
        return await fn(decode(params_type, raw))

    async def _notification(self, method: str, raw: Any) -> None:
        entry = self.notifications.get(method)
        if entry is None:
            return  # unknown notifications (other clients' extensions) are ignored
        params_type, fn = entry
        try:
            done = fn(decode(params_type, raw))
            if done is not None:
                await done
        except AcpError as exc:
            log.info("notification %s refused: %s", method, exc.message)
        except Exception:  # nobody to answer: log it and go on
            log.exception("notification %s failed", method)

    def eof(self) -> None:
        """The client closed its end: no answer can come any more, so our requests fail
        (what is still written, the answers of requests under way, may yet be read)."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the client closed the connection"))
        self.reading = False

    def close(self) -> None:
        """The connection ended: our requests fail, nothing more is sent."""
        self.eof()
        self.closed = True


def decode(params_type: type | None, raw: Any) -> Any:
    """``raw`` params as ``params_type`` (msgspec, camelCase), or ``-32602`` naming the field."""
    if params_type is None:
        return raw
    try:
        return msgspec.convert({} if raw is None else raw, params_type)
    except msgspec.ValidationError as exc:
        raise AcpError(INVALID_PARAMS, f"Invalid params: {exc}".replace("`$", "`params"),
                       "invalidParams") from exc
