"""The bridge between pygls and msgspec: typed handlers, typed events.

Custom-method params arrive as plain dicts (see ``converter``), are decoded
into the method's Struct, and results are encoded back to builtins. Every
failure leaves as a JSON-RPC error with ``data.kind``; never as a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.protocol import default_converter as pygls_converter

from turnstoned import protocol as p
from turnstoned.core.errors import EngineError
from turnstoned.protocol import ERROR_KINDS, ErrorCode

log = logging.getLogger(__name__)

S = TypeVar("S")


class RpcError(JsonRpcException):
    """A JSON-RPC error response with a stable ``data.kind``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code=int(code), message=message, data={"kind": ERROR_KINDS[code]})


class _QuietAppErrors(logging.Filter):
    """pygls logs every handler exception with a traceback; ours are expected answers.
    Params that do not fit an LSP type are the client's error, answered with -32602."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(record.msg, str) and record.msg.startswith("Unable to deserialize message"):
            return False
        return not isinstance(exc, RpcError)


def install_log_filter() -> None:
    """Quiet pygls: its frame-by-frame INFO lines (every message's full text) appear only when
    the daemon logs at DEBUG, so an editor's output channel at INFO shows the daemon's own log."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietAppErrors())
    debugging = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    logging.getLogger("pygls").setLevel(logging.DEBUG if debugging else logging.WARNING)


def converter() -> Any:
    """pygls' converter, but custom-method params and results stay plain dicts."""
    conv = pygls_converter()  # type: ignore[no-untyped-call]
    shapes = {
        JsonRPCRequestMessage: ("id", "method", "params", "jsonrpc"),
        JsonRPCNotification: ("method", "params", "jsonrpc"),
        JsonRPCResponseMessage: ("id", "result", "jsonrpc"),
    }
    for cls, fields in shapes.items():
        # Absent members (e.g. a request without params) default to None.
        conv.register_structure_hook(
            cls, lambda obj, _t, cls=cls, fields=fields: cls(**{f: obj.get(f) for f in fields}))
    return conv


def _field_path(err: msgspec.ValidationError) -> str:
    text = str(err)
    return text.replace("`$.", "`params.").replace("`$`", "`params`")


def decode_params(raw: Any, params_type: type[S] | None) -> S | None:
    if params_type is None:
        return None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RpcError(ErrorCode.INVALID_PARAMS, "params must be an object")
    try:
        return msgspec.convert(raw, params_type)
    except msgspec.ValidationError as exc:
        raise RpcError(ErrorCode.INVALID_PARAMS, f"Invalid params: {_field_path(exc)}") from exc


def encode(value: Any) -> Any:
    return msgspec.to_builtins(value)


def typed_handler(
    method: p.Method,
    fn: Callable[[Any], Awaitable[Any]],
    is_ready: Callable[[], bool],
) -> Callable[[Any], Awaitable[Any]]:
    """Wrap an async ``fn(params_struct) -> result_struct`` as a pygls handler."""

    async def handler(raw: Any) -> Any:
        if not is_ready():
            raise RpcError(ErrorCode.SERVER_NOT_INITIALIZED,
                           f"{method.name}: send `initialize` first")
        params = decode_params(raw, method.params)
        try:
            result = await fn(params)
        except EngineError as exc:
            raise RpcError(exc.code, exc.message) from exc
        except RpcError:
            raise
        except Exception as exc:  # a request boundary: log it, answer cleanly
            log.exception("%s failed", method.name)
            raise RpcError(ErrorCode.INTERNAL_ERROR,
                           f"{method.name} failed: {type(exc).__name__}: {exc}") from exc
        return encode(result)

    handler.__name__ = method.name.replace("/", "_")
    return handler


class _Notification(msgspec.Struct):
    method: str
    params: Any
    jsonrpc: str = "2.0"


class _Error(msgspec.Struct):
    code: int
    message: str
    data: dict[str, str]


class _ErrorResponse(msgspec.Struct):
    id: int | str | None
    error: _Error
    jsonrpc: str = "2.0"


_encoder = msgspec.json.Encoder()


def frame(message: Any) -> bytes:
    """``message`` encoded with msgspec as one Content-Length frame."""
    body = _encoder.encode(message)
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def write_frame(writer: Any, message: Any) -> None:
    writer.write(frame(message))


def notification(event: p.Event) -> Any:
    """The notification carrying ``event`` (its type names the method). Notifications are
    the hot path (streamed text and command output): msgspec encodes them in half the
    time of pygls' json.dumps, so they are written as frames directly."""
    return _Notification(method=type(event).method, params=event)


def kind_of(code: int) -> str:
    """The ``data.kind`` of an error code (``internal`` for codes outside the protocol)."""
    try:
        return ERROR_KINDS[ErrorCode(code)]
    except ValueError:
        return "internal"


def send_error(writer: Any, msg_id: int | str | None, code: ErrorCode, message: str) -> None:
    """Answer a request the handlers never saw (bad frame, bad envelope, unknown method)."""
    if writer is None:
        return
    try:
        write_frame(writer, _ErrorResponse(id=msg_id, error=_Error(
            code=int(code), message=message, data={"kind": ERROR_KINDS[code]})))
    except (OSError, ValueError) as exc:  # the client went away
        log.debug("error response not sent: %s", exc)
