"""The Python client for scripts and tests: protocol v1 to a spawned or resident daemon.

It speaks to a daemon it spawns (``Client.spawn``) or to this user's resident
daemon (``Client.attach``, which starts it when none runs).

    async with await Client.attach() as c:
        sid = await c.start_session(cwd=".")
        done = await c.run_turn(sid, "hello", on_event=print)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self

import msgspec

from turnstoned import protocol as p
from turnstoned.daemon import rundir

ApprovalHandler = Callable[[p.ApprovalRequestParams], Awaitable[p.ApprovalResponse]]
TrustHandler = Callable[[p.McpTrustRequestParams], Awaitable[p.McpTrustResponse]]
EventHandler = Callable[[str, dict[str, Any]], None]


class RpcFailure(Exception):
    """The daemon answered a request with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data

    @property
    def kind(self) -> str | None:
        return self.data.get("kind") if isinstance(self.data, dict) else None


def daemon_command() -> list[str]:
    """This interpreter running the daemon in isolated mode (``-I``): a ``turnstoned/``
    folder in the current directory (any cloned repository) is never imported."""
    return rundir.daemon_command()


async def _deny(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
    return p.ApprovalResponse(decision="deny", feedback="no approval handler in this client")


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 proc: asyncio.subprocess.Process | None = None) -> None:
        self._in = reader
        self._out = writer
        self.proc = proc  # a daemon of this client's own (``spawn``)
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._listeners: list[EventHandler] = []
        self.approval_handler: ApprovalHandler = _deny
        # Without one, mcpServer/requestTrust is answered -32601: nothing is trusted.
        self.trust_handler: TrustHandler | None = None
        # Other daemon requests this client answers: method -> handler of the raw params.
        self.request_handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def spawn(cls, command: Sequence[str] | None = None, *, env: dict[str, str] | None = None,
                    cwd: str | None = None, initialize: bool = True) -> Client:
        cmd = list(command or daemon_command())
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})}, cwd=cwd, limit=2**24)
        assert proc.stdout is not None and proc.stdin is not None
        client = cls(proc.stdout, proc.stdin, proc)
        if initialize:
            await client.initialize()
        return client

    @classmethod
    async def attach(cls, serve_args: Sequence[str] = (), *, initialize: bool = True) -> Client:
        """A client of this user's resident daemon, started (with ``serve_args``) if none
        runs. It keeps running after ``close``; its environment is the one it started in."""
        sock = await asyncio.to_thread(rundir.connect_or_start, list(serve_args))
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=2**24)
        client = cls(reader, writer)
        if initialize:
            await client.initialize()
        return client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------- wire

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self._out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read_loop(self) -> None:
        out = self._in
        try:
            while True:
                length = 0
                while True:
                    line = await out.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                self._dispatch(json.loads(await out.readexactly(length)))
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the daemon exited"))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            asyncio.get_running_loop().create_task(self._answer(msg))
        elif "method" in msg:
            for listener in list(self._listeners):
                listener(msg["method"], msg.get("params") or {})
        else:
            fut = self._pending.pop(msg.get("id"), None)
            if fut is None or fut.done():
                return
            if "error" in msg:
                err = msg["error"]
                fut.set_exception(RpcFailure(err.get("code", 0), err.get("message", ""), err.get("data")))
            else:
                fut.set_result(msg.get("result"))

    async def _answer(self, msg: dict[str, Any]) -> None:
        answer: Any
        if msg["method"] == "item/tool/requestApproval":
            answer = await self.approval_handler(
                msgspec.convert(msg["params"], p.ApprovalRequestParams))
        elif msg["method"] == "mcpServer/requestTrust" and self.trust_handler is not None:
            answer = await self.trust_handler(
                msgspec.convert(msg["params"], p.McpTrustRequestParams))
        elif msg["method"] in self.request_handlers:  # e.g. editor/* for an editor's services
            answer = await self.request_handlers[msg["method"]](msg.get("params") or {})
        else:
            self._send({"jsonrpc": "2.0", "id": msg["id"],
                        "error": {"code": -32601, "message": f"unknown method {msg['method']}"}})
            return
        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": msgspec.to_builtins(answer)})

    async def request(self, method: str, params: Any = None, timeout: float | None = 30) -> Any:
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = msgspec.to_builtins(params)
        self._send(message)
        return await asyncio.wait_for(fut, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = msgspec.to_builtins(params)
        self._send(message)

    def listen(self, handler: EventHandler) -> Callable[[], None]:
        self._listeners.append(handler)
        return lambda: self._listeners.remove(handler)

    # ----------------------------------------------------------- lifecycle

    async def initialize(self, options: p.InitializationOptions | None = None) -> dict[str, Any]:
        """``options``: what this client serves the daemon (answer those requests through
        ``request_handlers``)."""
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": {},
                                  "clientInfo": {"name": "turnstoned.client"}}
        if options is not None:
            params["initializationOptions"] = msgspec.to_builtins(options)
        result = await self.request("initialize", params)
        self.notify("initialized", {})
        return dict(result)

    async def close(self, timeout: float = 10) -> int:
        """End the connection (``shutdown``, ``exit``); a spawned daemon then exits, and its
        exit code is returned (0 for the resident daemon, which goes on)."""
        proc = self.proc
        if proc is None or proc.returncode is None:
            try:
                await self.request("shutdown", timeout=timeout)
                self.notify("exit")
            except (TimeoutError, RpcFailure, ConnectionError):
                pass
        if proc is not None and proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        self._out.close()
        self._reader.cancel()
        return (proc.returncode or 0) if proc is not None else 0

    # ----------------------------------------------------------- typed helpers

    async def start_session(self, **fields: Any) -> str:
        """A new session; a relative ``cwd`` or ``workspace`` is this process's, made
        absolute (the daemon, perhaps a resident one, has a directory of its own)."""
        for key in ("cwd", "workspace"):
            value = fields.get(key)
            if isinstance(value, str) and "://" not in value:
                fields[key] = os.path.abspath(value)
        result = await self.request("session/start", p.SessionStartParams(**fields))
        return str(result["sessionId"])

    async def start_turn(self, session_id: str, text: str) -> dict[str, Any]:
        params = p.TurnStartParams(session_id=session_id, input=[p.TextInput(text=text)])
        result: dict[str, Any] = await self.request("turn/start", params)
        return result

    async def run_turn(self, session_id: str, text: str, *, on_event: EventHandler | None = None,
                       timeout: float | None = None) -> dict[str, Any]:
        """Start a turn and wait for its ``turn/completed``; events go to ``on_event``."""
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        turn: dict[str, str] = {}
        early: list[tuple[str, dict[str, Any]]] = []

        def handler(method: str, params: dict[str, Any]) -> None:
            if params.get("sessionId") != session_id:
                return
            if "id" not in turn:
                early.append((method, params))
                return
            _deliver(method, params)

        def _deliver(method: str, params: dict[str, Any]) -> None:
            if params.get("turnId") not in (None, turn["id"]):
                return
            if on_event:
                on_event(method, params)
            if method == "turn/completed" and not done.done():
                done.set_result(params)

        unsubscribe = self.listen(handler)
        try:
            result = await self.start_turn(session_id, text)
            turn["id"] = result["turnId"]
            for method, params in early:
                _deliver(method, params)
            return await asyncio.wait_for(done, timeout)
        finally:
            unsubscribe()
