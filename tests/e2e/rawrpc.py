"""An independent, minimal JSON-RPC client over a real daemon process (no turnstoned imports)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

DEFER = object()  # returned by ``on_request``: the test answers that request itself, later


class ErrorAnswer:
    """Returned by ``on_request``: answer the daemon's request with this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        self.error = {"code": code, "message": message}


class RawDaemon:
    """Spawns ``python -m turnstoned`` and speaks Content-Length framed JSON-RPC to it."""

    def __init__(self, env: dict[str, str], cwd: str | None = None, args: tuple[str, ...] = (),
                 prefix: tuple[str, ...] = ()) -> None:
        """``prefix`` runs the daemon through a wrapper that execs it (e.g. setpriv)."""
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "turnstoned", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={**os.environ, **env}, cwd=cwd)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.raw_stdout = bytearray()
        self.bad_frames: list[bytes] = []
        self.on_request: Callable[[dict[str, Any]], Any] = lambda msg: {"decision": "approve"}
        self._next = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode(errors="replace"))

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                line = out.readline()
                if not line:
                    return
                header += line
            self.raw_stdout += header
            length = None
            for line in header.decode("ascii").split("\r\n"):
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if length is None:
                self.bad_frames.append(header)
                continue
            body = out.read(length)
            self.raw_stdout += body
            msg = json.loads(body)
            self._handle(msg)

    def _handle(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            result = self.on_request(msg)
            if isinstance(result, ErrorAnswer):
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": result.error})
            elif result is not DEFER:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            with self._cond:
                self.notifications.append(msg)
                self._cond.notify_all()
        elif "method" in msg:
            with self._cond:
                self.notifications.append(msg)
                self._cond.notify_all()
        else:
            with self._cond:
                self._responses[msg.get("id")] = msg
                self._cond.notify_all()

    def send(self, msg: dict[str, Any]) -> None:
        self.write(json.dumps(msg).encode())

    def write(self, body: bytes, framed: bool = True) -> None:
        assert self.proc.stdin is not None
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body if framed else body
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any = None, timeout: float = 15) -> dict[str, Any]:
        """The whole response message (with ``result`` or ``error``)."""
        self._next += 1
        msg_id = self._next
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no answer to {method}; stderr: {''.join(self.stderr_lines)[-2000:]}")
                self._cond.wait(left)
            return self._responses.pop(msg_id)

    def wait_response(self, msg_id: Any, timeout: float = 15) -> dict[str, Any]:
        """The response with ``msg_id`` (None: one answering no usable id), removed once read."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no response {msg_id!r}; stderr: "
                                       f"{''.join(self.stderr_lines)[-2000:]}")
                self._cond.wait(left)
            return self._responses.pop(msg_id)

    def result(self, method: str, params: Any = None, timeout: float = 15) -> Any:
        answer = self.request(method, params, timeout)
        assert "error" not in answer, answer
        return answer["result"]

    def wait_for(self, method: str, pred: Callable[[dict[str, Any]], bool] = lambda p: True,
                 timeout: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.notifications:
                    if msg["method"] == method and pred(msg.get("params") or {}):
                        return msg["params"]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {method}; got {[m['method'] for m in self.notifications]}")
                self._cond.wait(left)

    def of(self, method: str) -> list[dict[str, Any]]:
        with self._cond:
            return [m.get("params") or {} for m in self.notifications if m["method"] == method]

    def initialize(self) -> dict[str, Any]:
        result = self.result("initialize", {"processId": None, "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    def close(self, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", timeout=timeout)
                self.send({"jsonrpc": "2.0", "method": "exit"})
            except (TimeoutError, BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
