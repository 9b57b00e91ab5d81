"""One live connection to one MCP server, over stdio or streamable HTTP.

This module imports the MCP SDK; ``manager`` imports it lazily, on the first
connect, so the daemon's startup path never pays for the SDK.

The SDK's transports and ``ClientSession`` are anyio context managers that
must be entered and left by one task, so each connection has a runner task
that owns them: it connects, hands the session out, and then waits until the
connection is closed or lost. Requests are sent from the callers' own tasks
(the session is safe to share), so a call costs no extra task hop. A lost
connection is noticed the moment the session's read stream ends (a stdio
server exiting, an HTTP transport failing), not only at the next health ping.

The client speaks the 2025-11-25 handshake (``initialize``), whose list_changed
notifications arrive on the session's ``message_handler`` (the package
docstring says why not the 2026-07-28 discover mode).

A server's stderr and its error messages become status errors and log lines the
editor shows, so they pass the output guard's redaction first: a server that
fails to authenticate often prints the key it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import warnings
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from turnstoned import __version__, guard
from turnstoned.mcp import discovery, render
from turnstoned.mcp.auth import Authorizer
from turnstoned.mcp.config import ServerSpec
from turnstoned.mcp.models import ConnectError, MCPCallResult, Opener


def with_defaults(content: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An accepted form's values, with the schema's default for each field left out (as
    the spec asks of a client: a form that shows defaults sends them)."""
    props = schema.get("properties")
    filled = dict(content)
    for name, spec in (props.items() if isinstance(props, dict) else ()):
        if name not in filled and isinstance(spec, dict) and "default" in spec:
            filled[name] = spec["default"]
    return filled


# Answers a server's question (message, requested schema) -> (action, the form's values).
Asker = Callable[[str, dict[str, Any]], Awaitable[tuple[str, dict[str, Any] | None]]]

log = logging.getLogger(__name__)
server_log = logging.getLogger("turnstoned.mcp.server")

CLIENT_INFO = types.Implementation(name="turnstoned", version=__version__)
PREFLIGHT_TIMEOUT = 5.0
CLOSE_TIMEOUT = 10.0
STDERR_TAIL = 20
STDERR_CHUNK = 65536
LOG_LINE = 2000  # characters of a server's log message shown
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class Connection:
    """A connected (or connecting) MCP server. Create, ``await open()``, use, ``await close()``."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        env: dict[str, str],
        connect_timeout: float,
        on_list_changed: Callable[[Connection, str], None],
        on_lost: Callable[[Connection, str], None],
        auth: Authorizer | None = None,
    ) -> None:
        self.spec = spec
        self.auth = auth
        self._env = env
        self._askers: list[Asker] = []  # the calls under way that can ask the user
        self._cards: list[Callable[[str], None]] = []  # the running calls' output lines
        self.roots: Callable[[], list[str]] = list  # the sessions' folders
        self.on_updated: Callable[[str], None] = lambda uri: None  # a subscribed resource
        self._subscribed: set[str] = set()
        self._connect_timeout = connect_timeout
        self._on_list_changed = on_list_changed
        self._on_lost = on_lost
        self._scope = anyio.CancelScope()
        self._ended = asyncio.Event()
        self._closing = False
        self._lost_reason: str | None = None
        self._lost_reported = False
        self._session_expired = False  # HTTP 404: requests were refused, not run
        self._runner: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.session: ClientSession | None = None
        self.init: types.InitializeResult | None = None

    @property
    def server_version(self) -> str | None:
        info = self.init.server_info if self.init is not None else None
        return f"{info.name} {info.version}".strip() if info is not None else None

    async def open(self) -> None:
        """Connect and initialize; raises ``ConnectError`` with a readable reason."""
        if self.spec.type == "http":
            await _preflight(self.spec.url)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(ready), name=f"mcp:{self.spec.name}")
        try:
            await ready
        except ConnectError as exc:
            await self._drain_stderr()
            raise ConnectError(self._with_stderr(str(exc))) from None
        except asyncio.CancelledError:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the session and stop the server process; bounded, idempotent."""
        self._closing = True
        self._scope.cancel()
        runner = self._runner
        if runner is not None and not runner.done():
            done, _ = await asyncio.wait({runner}, timeout=CLOSE_TIMEOUT)
            if not done:
                log.warning(
                    "MCP server %r did not shut down in %.0fs", self.spec.name, CLOSE_TIMEOUT
                )
                runner.cancel()
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            with self._scope:
                async with AsyncExitStack() as stack:
                    read, write = await self._enter_transport(stack)
                    watched = _WatchedStream(read, self._stream_ended)
                    session = ClientSession(
                        watched, write, message_handler=self._on_message, client_info=CLIENT_INFO,
                        elicitation_callback=self._elicit, list_roots_callback=self._roots,
                        logging_callback=self._on_log,
                    )
                    await stack.enter_async_context(session)
                    try:
                        with anyio.fail_after(self._connect_timeout):
                            self.init = await session.initialize()
                    except TimeoutError:
                        raise ConnectError(
                            f"no answer to initialize within {self._connect_timeout:g}s"
                        ) from None
                    self.session = session
                    ready.set_result(None)
                    await self._ended.wait()
        except Exception as exc:  # every failure of a server becomes its status text
            self._lost_reason = describe(exc)
            log.debug("MCP server %r runner ended", self.spec.name, exc_info=True)
        finally:
            self.session = None
            if not ready.done():
                ready.set_exception(
                    ConnectError(self._lost_reason or "connection closed while connecting")
                )
            self._report_lost(self._lost_reason or "connection lost")

    async def _enter_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.type == "http":
            client = httpx2.AsyncClient(
                headers=spec.headers, auth=self.auth.provider if self.auth is not None else None,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [self._check_http_session]},
            )
            await stack.enter_async_context(client)
            return await stack.enter_async_context(
                streamable_http_client(spec.url, http_client=client)
            )
        params = StdioServerParameters(
            command=spec.command, args=list(spec.args), env=self._env, cwd=spec.cwd
        )
        read_fd, write_fd = os.pipe()
        errlog = os.fdopen(write_fd, "w")
        try:
            self._stderr_task = asyncio.create_task(self._read_stderr(read_fd))
            streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        except OSError as exc:
            raise ConnectError(f"cannot start {spec.command!r}: {exc.strerror or exc}") from None
        finally:
            errlog.close()  # the child holds its own copy
        return streams

    async def _check_http_session(self, response: httpx2.Response) -> None:
        """A 404 to a request carrying our session id: the server forgot the session.

        The spec says the client must then start a new one, so the connection is
        treated as lost (the server restarted, or expired the session).
        """
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self._session_expired = True
            self._report_lost("the HTTP server no longer knows this session")

    async def _read_stderr(self, fd: int) -> None:
        """Log the server's stderr (never the daemon's stdout) and keep its tail.

        Reads chunks, not lines, so an endless line cannot stall the reader and,
        with it, a server blocked on a full stderr pipe.
        """
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        pipe = os.fdopen(fd, "rb", 0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        pending = b""
        try:
            while chunk := await reader.read(STDERR_CHUNK):
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > STDERR_CHUNK:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    self._stderr_line(line)
            self._stderr_line(pending)
        finally:
            transport.close()

    def _stderr_line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip()
        if text:
            text = redact(text)
            self.stderr_tail.append(text[:1000])
            server_log.info("[%s] %s", self.spec.name, text)

    async def _drain_stderr(self) -> None:
        if self._stderr_task is not None:
            await asyncio.wait({self._stderr_task}, timeout=0.5)

    def _with_stderr(self, message: str) -> str:
        tail = list(self.stderr_tail)[-5:]
        # Lines were redacted one by one; the whole again, for a secret spread over lines.
        return redact(message + ("\nserver stderr:\n" + "\n".join(tail) if tail else ""))

    def _stream_ended(self) -> None:
        self._report_lost("the server closed the connection")

    def _report_lost(self, reason: str) -> None:
        """Mark the connection gone and tell the owner once (not for our own close)."""
        if self._lost_reason is None:
            self._lost_reason = reason
        self._ended.set()
        if self.init is not None and not self._closing and not self._lost_reported:
            self._lost_reported = True
            self._on_lost(self, self._lost_reason)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.debug("MCP server %r transport error: %r", self.spec.name, message)
            return
        method = getattr(message, "method", "")
        kind = _LIST_CHANGED.get(method)
        if kind is not None:
            self._on_list_changed(self, kind)
        elif method == "notifications/resources/updated":
            self.on_updated(str(message.params.uri))

    async def subscribe(self, uri: str, timeout: float) -> bool:
        """``resources/subscribe`` once per URI, where the server offers subscriptions;
        True when the server will say that the resource changed."""
        session = self.session
        caps = session.server_capabilities if session is not None else None
        if session is None or caps is None or caps.resources is None \
                or not caps.resources.subscribe:
            return False
        if uri in self._subscribed:
            return True
        try:  # deprecated in the newest revision, like roots; the servers in use take it
            with anyio.fail_after(timeout), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.subscribe_resource(uri)
        except (MCPError, TimeoutError, RuntimeError) as exc:
            log.info("MCP server %r: subscribing to %s failed: %s", self.spec.name, uri,
                     describe(exc))
            return False
        self._subscribed.add(uri)
        return True

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message: the daemon's log, and the card of the newest call
        running (the server does not say which call it is about), redacted and cut."""
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        text = redact(f"[{params.level}{' ' + params.logger if params.logger else ''}] "
                      f"{data}")[:LOG_LINE]
        server_log.info("[%s] %s", self.spec.name, text)
        if self._cards:
            self._cards[-1](text + "\n")

    async def discover(self, kinds: frozenset[str], timeout: float) -> dict[str, Any]:
        """The server's catalog for ``kinds``; raises ``ConnectError`` on any failure."""
        session = self.session
        if session is None:
            raise ConnectError("not connected")
        try:
            return await discovery.discover(session, self.spec.name, kinds, timeout)
        except (MCPError, TimeoutError, RuntimeError, ValueError) as exc:
            raise ConnectError(f"listing the catalog failed: {describe(exc)}") from None

    async def _elicit(self, context: Any, params: Any) -> types.ElicitResult:
        """A server's question during a call: asked through the newest call under way that
        can ask (none: declined). URL-mode questions are declined: no browser flow here."""
        if not self._askers or getattr(params, "mode", "form") == "url":
            return types.ElicitResult(action="decline")
        schema: Any = getattr(params, "requested_schema", None)
        shown = (schema.model_dump(by_alias=True, exclude_none=True)
                 if hasattr(schema, "model_dump") else dict(schema or {}))
        action, content = await self._askers[-1](str(params.message), shown)
        chosen = action if action in ("accept", "decline", "cancel") else "decline"
        if chosen != "accept":
            return types.ElicitResult(action=chosen)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=with_defaults(content or {}, shown))

    async def _roots(self, context: Any) -> types.ListRootsResult:
        """The folders the daemon's sessions work in (``roots``, set by the manager)."""
        return types.ListRootsResult(roots=[
            types.Root.model_validate({"uri": Path(folder).as_uri(),
                                       "name": Path(folder).name or folder})
            for folder in self.roots()])

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (a session opened or closed)."""
        session = self.session
        if session is None:
            return
        # Roots are deprecated in the newest spec revision (SEP-2577) but still what the
        # servers people run read; the SDK's warning about it says nothing to the user.
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.send_roots_list_changed()

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], timeout: float, asker: Asker | None = None,
        report: Callable[[float, float | None, str | None], None] | None = None,
        opener: Opener | None = None, card: Callable[[str], None] | None = None,
    ) -> MCPCallResult:
        """``tools/call``; failures are error results (only cancellation propagates).
        ``asker`` answers the server's questions (elicitation) while the call runs;
        ``report`` hears its progress notifications (progress, total, message);
        ``opener`` opens the login page if the server asks for more scope (step-up);
        ``card`` shows the server's log messages on the call's card."""
        session = self.session
        if session is None:
            return self._not_connected()
        if asker is not None:
            self._askers.append(asker)
        if card is not None:
            self._cards.append(card)
        openers = self.auth.openers if self.auth is not None else []
        if opener is not None:
            openers.append(opener)
        try:
            async def on_progress(progress: float, total: float | None,
                                  message: str | None) -> None:
                if report is not None:
                    report(progress, total, message)

            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                             progress_callback=on_progress)
        except MCPError as exc:
            return self._request_error(exc, "tool", timeout)
        except (RuntimeError, ValueError) as exc:  # malformed result, output-schema mismatch
            return MCPCallResult(content=f"MCP tool error: {exc}", is_error=True)
        finally:
            if asker is not None:
                self._askers.remove(asker)
            if opener in openers:
                openers.remove(opener)
            if card is not None:
                self._cards.remove(card)
        return render.tool_result(result)

    async def read_resource(self, uri: str, timeout: float) -> MCPCallResult:
        session = self.session
        if session is None:
            return self._not_connected()
        try:
            result = await session.send_request(
                types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri)),
                types.ReadResourceResult,
                request_read_timeout_seconds=timeout,
            )
        except MCPError as exc:
            return self._request_error(exc, "resource read", timeout)
        except (RuntimeError, ValueError) as exc:
            return MCPCallResult(content=f"MCP resource error: {exc}", is_error=True)
        return render.resource_result(result)

    async def get_prompt(
        self, prompt: str, arguments: dict[str, str], timeout: float
    ) -> MCPCallResult:
        session = self.session
        if session is None:
            return self._not_connected()
        try:
            result = await session.send_request(
                types.GetPromptRequest(
                    params=types.GetPromptRequestParams(name=prompt, arguments=arguments)
                ),
                types.GetPromptResult,
                request_read_timeout_seconds=timeout,
            )
        except MCPError as exc:
            return self._request_error(exc, "prompt", timeout)
        except (RuntimeError, ValueError) as exc:
            return MCPCallResult(content=f"MCP prompt error: {exc}", is_error=True)
        return render.prompt_result(result)

    async def ping(self, timeout: float) -> str:
        """``"ok"``, ``"timeout"``, ``"error"`` (answered with an error) or ``"lost"``."""
        session = self.session
        if session is None:
            return "lost"
        try:
            await session.send_request(
                types.PingRequest(), types.EmptyResult, request_read_timeout_seconds=timeout
            )
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                return "timeout"
            if exc.code != types.CONNECTION_CLOSED:
                return "error"
            self._report_lost("no answer to ping: the connection is closed")
            return "lost"
        return "ok"

    def abandon(self, reason: str) -> None:
        """Give up on a connection that is open but unresponsive; its process is stopped."""
        self._report_lost(reason)

    def _not_connected(self) -> MCPCallResult:
        return MCPCallResult(
            content=f"MCP server {self.spec.name!r} is not connected", is_error=True
        )

    def _request_error(self, exc: MCPError, what: str, timeout: float) -> MCPCallResult:
        name = self.spec.name
        if exc.code == types.REQUEST_TIMEOUT:
            text = f"MCP {what} timed out after {timeout:g}s."
            if what == "tool":
                text += " Outcome UNKNOWN: the server may or may not have completed it."
                return MCPCallResult(content=text, is_error=True, effect_status="unknown")
            return MCPCallResult(content=text, is_error=True)
        if exc.code == types.CONNECTION_CLOSED and self.auth is not None and self.auth.needs_login:
            text = (f"MCP server {name!r} refused its login (the token expired or was revoked), "
                    f"so the {what} was not run. The user can log in to it again "
                    "(\"Log in\" on the server in the editor).")
            return MCPCallResult(content=text, is_error=True)
        if exc.code == types.CONNECTION_CLOSED and self._session_expired:
            text = f"MCP server {name!r} lost the session, so the {what} was not run; reconnecting."
            return MCPCallResult(content=text, is_error=True)
        if exc.code == types.CONNECTION_CLOSED:
            self._report_lost("the connection closed during a request")
            text = f"MCP server {name!r} disconnected during the {what}."
            if what == "tool":
                text += " Outcome UNKNOWN."
                return MCPCallResult(content=text, is_error=True, effect_status="unknown")
            return MCPCallResult(content=text, is_error=True)
        return MCPCallResult(
            content=f"MCP {what} error: {exc.error.message} (code {exc.code})", is_error=True
        )


class _WatchedStream:
    """The session's read stream, reporting when it ends (the connection is gone)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _preflight(url: str) -> None:
    """A quick TCP connect, so an unreachable server fails with a clear, fast error."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), PREFLIGHT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError):
            reason = "timed out"
        else:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConnectError(f"cannot reach {host}:{port}: {reason}") from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def redact(text: str) -> str:
    """``text`` with any credential in it replaced, by the output guard's rules."""
    return guard.check(text, redact=True).text


def describe(exc: BaseException) -> str:
    """A one-line account of a connect failure, flattening exception groups; redacted,
    since a server's error message may quote a key."""
    return redact(_describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(e) for e in exc.exceptions))
    if isinstance(exc, ConnectError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return "the server closed the connection"
        return f"{exc.error.message} (code {exc.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
