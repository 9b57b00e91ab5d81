"""``turnstoned chat``: one turn, headless, printed as text or as JSON lines.

It talks to this user's resident daemon (starting it when none listens), so a
second ``chat`` finds the engine, the model connection and its imports warm;
``--private`` spawns a daemon of its own over stdio instead, as editors do.
Blocking I/O and the standard library only: a script that runs ``chat`` in a
loop should not pay for asyncio or the protocol module on every call.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from turnstoned import rundir

if TYPE_CHECKING:
    import argparse

Message = dict[str, Any]
REQUEST_TIMEOUT = 30.0


class Failure(Exception):
    """The daemon answered a request with an error, or went away."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message, self.kind = message, kind


class Wire:
    """Blocking JSON-RPC in Content-Length frames over a socket or a daemon's pipes."""

    def __init__(self, read_fd: int, write: Callable[[bytes], None]) -> None:
        self.read_fd = read_fd
        self._write = write
        self.buf = bytearray()
        self.next_id = 0
        self.on_request: Callable[[Message], Any] = lambda msg: None
        self.on_notification: Callable[[Message], None] = lambda msg: None

    def send(self, msg: Message) -> None:
        body = json.dumps(msg).encode()
        self._write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def _frame(self, timeout: float | None) -> Message:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                length = next(int(line.split(b":")[1]) for line in self.buf[:end].split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                if len(self.buf) >= end + 4 + length:
                    body = bytes(self.buf[end + 4:end + 4 + length])
                    del self.buf[:end + 4 + length]
                    msg: Message = json.loads(body)
                    return msg
            ready, _, _ = select.select([self.read_fd], [], [], timeout)
            if not ready:
                raise TimeoutError("the daemon did not answer in time")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise Failure("the daemon closed the connection")
            self.buf += chunk

    def pump(self, timeout: float | None = None) -> Message | None:
        """Read one message: a response is returned; a daemon request is answered and a
        notification handed on here (None)."""
        msg = self._frame(timeout)
        if "method" not in msg:
            return msg
        if "id" not in msg:
            self.on_notification(msg)
            return None
        try:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": self.on_request(msg)})
        except LookupError:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": f"unknown method {msg['method']}"}})
        return None

    def request(self, method: str, params: Any = None,
                timeout: float | None = REQUEST_TIMEOUT) -> Any:
        self.next_id += 1
        msg_id = self.next_id
        message: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            answer = self.pump(timeout)
            if answer is None or answer.get("id") != msg_id:
                continue
            if "error" in answer:
                err = answer["error"]
                data = err.get("data")
                raise Failure(str(err.get("message", "")),
                              data.get("kind") if isinstance(data, dict) else None)
            return answer.get("result")


class Daemon:
    """The daemon a chat talks to: the resident one, or a private stdio daemon."""

    def __init__(self, flags: list[str], private: bool) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        if private:
            self.proc = subprocess.Popen([sys.executable, "-I", "-m", "turnstoned", *flags],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert self.proc.stdin is not None and self.proc.stdout is not None
            stdin = self.proc.stdin

            def write(data: bytes) -> None:
                stdin.write(data)
                stdin.flush()
            self.wire = Wire(self.proc.stdout.fileno(), write)
        else:
            self.sock = rundir.connect_or_start(flags)
            self.wire = Wire(self.sock.fileno(), self.sock.sendall)

    def initialize(self) -> None:
        self.wire.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                         "clientInfo": {"name": "turnstoned chat"}})
        self.wire.notify("initialized")

    def close(self) -> None:
        """End this client's connection (a private daemon: the daemon too)."""
        try:
            self.wire.request("shutdown", timeout=10)
            self.wire.notify("exit")
        except (Failure, TimeoutError, OSError):
            pass
        if self.sock is not None:
            self.sock.close()
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- answering the daemon


def ask_terminal(params: Message) -> Message:
    """An approval request, asked on the terminal: y, n or a(lways), then a message."""
    items = params.get("items") or []
    gated = [i for i in items if i.get("needsApproval")]
    for item in items:
        print(f"\n{item['header']}", file=sys.stderr)
        if item.get("preview") and item["preview"] != item["header"]:
            print(item["preview"], file=sys.stderr)
    labels = sorted({i["approvalLabel"] for i in gated})
    what = labels[0] if len(gated) == 1 else f"{len(gated)} tools ({', '.join(labels)})"
    print(f"Allow {what}? [y/n/a(lways), optional message] ", end="", file=sys.stderr, flush=True)
    try:
        line = sys.stdin.readline() if sys.stdin and not sys.stdin.closed else ""
    except (OSError, ValueError):
        line = ""
    sep = "," if "," in line else " "
    word, _, feedback = line.strip().partition(sep)
    word = word.strip().lower()
    decision = ("always" if word in ("a", "always")
                else "approve" if word in ("y", "yes") else "deny")
    return {"decision": decision, "feedback": feedback.strip() or None}


def answer_trust(params: Message, trust: bool) -> Message:
    """mcpServer/requestTrust: trust with --trust-mcp, else say how and ask later."""
    if trust:
        print(f"trusting {params['configPath']}", file=sys.stderr)
        return {"decision": "trust"}
    print(f"{params['configPath']} defines MCP servers that were not started:", file=sys.stderr)
    for s in params.get("servers") or []:
        what = s.get("url") or " ".join([s.get("command") or "", *(s.get("args") or [])])
        print(f"  {s['name']}: {what}", file=sys.stderr)
    print("  rerun with --trust-mcp to trust this version of the file", file=sys.stderr)
    return {"decision": "dismiss"}


class Printer:
    """Renders events for a person (text on stdout, tool activity on stderr) or as JSON lines."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def __call__(self, method: str, params: Message) -> None:
        if self.as_json:
            print(json.dumps({"method": method, "params": params}), flush=True)
            return
        if method == "item/agentMessage/delta":
            print(params["delta"], end="", flush=True)
        elif method == "item/toolCall/outputDelta":
            print(params["chunk"], end="", file=sys.stderr, flush=True)
        elif method == "item/started" and params["item"]["type"] == "toolCall":
            print(f"\n{params['item']['header']}", file=sys.stderr, flush=True)
        elif method == "item/completed" and params["item"]["type"] == "toolCall":
            item = params["item"]
            mark = "✗" if item.get("isError") else "✓"
            first = (item.get("output") or "").strip().splitlines()[:1]
            print(f"{mark} {item['tool']} {item['status']}: {first[0][:200] if first else ''}",
                  file=sys.stderr, flush=True)
        elif method == "turn/completed":
            print(flush=True)
            if params.get("error"):
                err = params["error"]
                print(f"turn failed ({err['kind']}): {err['message']}", file=sys.stderr)
        elif method == "session/notice":
            print(f"\n[{params['kind']}] {params['text']}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the turn


class Turn:
    """Runs one turn of a session and prints its events until ``turn/completed``."""

    def __init__(self, wire: Wire, session_id: str, show: Printer) -> None:
        self.wire, self.session_id, self.show = wire, session_id, show
        self.turn_id: str | None = None
        self.early: list[Message] = []
        self.done: Message | None = None

    def event(self, msg: Message) -> None:
        params = msg.get("params") or {}
        if params.get("sessionId") != self.session_id:
            return
        if self.turn_id is None:
            self.early.append(msg)
            return
        if params.get("turnId") not in (None, self.turn_id):
            return
        self.show(msg["method"], params)
        if msg["method"] == "turn/completed":
            self.done = params

    def run(self, prompt: str) -> Message:
        self.wire.on_notification = self.event
        result = self.wire.request("turn/start", {
            "sessionId": self.session_id, "input": [{"type": "text", "text": prompt}]})
        self.turn_id = result["turnId"]
        for msg in self.early:
            self.event(msg)
        try:
            while self.done is None:
                self.wire.pump(None)
        except KeyboardInterrupt:
            self.interrupt()
        assert self.done is not None
        return self.done

    def interrupt(self) -> None:
        """Ctrl-C: the resident daemon outlives us, so stop the turn there."""
        try:
            self.wire.request("turn/interrupt", {"sessionId": self.session_id,
                                                 "turnId": self.turn_id}, timeout=5)
            while self.done is None:
                self.wire.pump(5)
        except (Failure, TimeoutError, OSError):
            self.done = {"status": "interrupted"}


def _trust_project(wire: Wire, folder: str) -> None:
    """Trust the folder's .mcp.json before the session opens, so its tools are there."""
    try:
        result = wire.request("mcpServer/trust", {"workspace": folder, "trusted": True},
                              timeout=None)
    except Failure as exc:
        print(f"turnstoned: --trust-mcp: {exc.message}", file=sys.stderr)
        return
    states = ", ".join(f"{s['name']} {s['status']}" for s in result["servers"])
    print(f"trusted {result['configPath']}: {states}", file=sys.stderr)


def _answerer(opts: argparse.Namespace) -> Callable[[Message], Any]:
    def answer(msg: Message) -> Any:
        if msg["method"] == "item/tool/requestApproval":
            return {"decision": "approve"} if opts.yes else ask_terminal(msg["params"])
        if msg["method"] == "mcpServer/requestTrust":
            return answer_trust(msg["params"], opts.trust_mcp)
        raise LookupError(msg["method"])
    return answer


def run(opts: argparse.Namespace, daemon_flags: list[str]) -> int:
    try:
        daemon = Daemon(daemon_flags, opts.private)
    except (rundir.RundirError, OSError) as exc:
        print(f"turnstoned: {exc}", file=sys.stderr)
        return 2
    wire = daemon.wire
    wire.on_request = _answerer(opts)
    try:
        daemon.initialize()
        cwd = os.path.abspath(opts.cwd or ".")
        if opts.trust_mcp and not opts.session:
            _trust_project(wire, cwd)
        if opts.session:
            wire.request("session/resume", {"sessionId": opts.session})
            sid = opts.session
        else:
            sid = wire.request("session/start", {"cwd": cwd, "model": opts.model,
                                                 "skipPermissions": opts.yes})["sessionId"]
        if not opts.json:
            print(f"session {sid}", file=sys.stderr)
        done = Turn(wire, sid, Printer(opts.json)).run(opts.prompt)
    except (Failure, TimeoutError, OSError) as exc:
        print(f"turnstoned: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    finally:
        daemon.close()
    return {"completed": 0, "interrupted": 130}.get(done["status"], 1)
