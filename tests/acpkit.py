"""Driving a real ``turnstoned acp`` process in tests: a minimal ND-JSON client (no turnstoned
imports), and a scripted model that acts on what the user asks.

The model (``Brain``) reads the last user message of a request:

- ``call `TOOL` with `JSON```: a call of that tool with those arguments;
- ``run `CMD```: a ``bash`` call running CMD;
- ``write PATH: TEXT``: a ``write_file`` call;
- ``edit PATH: OLD -> NEW``: a ``read_file`` call, then an ``edit_file`` call;
- ``think``: a reply with reasoning first;
- ``long``: a reply cut by the server's token limit (``finish_reason: length``);
- ``refuse``: a reply the server filtered (``finish_reason: content_filter``);
- anything else: ``Hello from the scripted model.``;

after a tool result it answers ``Done: <the result's first line>``; a request without
tools (a summary) gets a summary.

``python -m tests.acpkit`` serves this model on 127.0.0.1 and prints its base URL (the
TypeScript SDK's interop script uses it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls

JSON = dict[str, Any]
HELLO = "Hello from the scripted model."
ROOT = Path(__file__).resolve().parents[1]


def _last_user(messages: list[JSON]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _results_since_user(messages: list[JSON]) -> int:
    count = 0
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        count += message.get("role") == "tool"
    return count


class Brain:
    """The scripted model's answer to a request, from what the user asked (see above)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: JSON) -> Response:
        messages = request.get("messages") or []
        if not request.get("tools"):
            return text("SUMMARY: the user asked for scripted things.")
        last = messages[-1] if messages else {}
        asked = _last_user(messages)
        self.calls += 1
        call_id = f"call_{self.calls}"
        edit = re.search(r"edit (\S+): (.*?) -> (.*)", asked, re.DOTALL)
        if last.get("role") == "tool":
            results = _results_since_user(messages)
            if edit and results == 1:  # the file was read: now the edit
                return tool_calls([(call_id, "edit_file", json.dumps({
                    "path": edit.group(1), "old_string": edit.group(2),
                    "new_string": edit.group(3)}))])
            first = str(last.get("content") or "").strip().splitlines() or [""]
            return text(f"Done: {first[0][:80]}")
        if edit:  # an edit needs a read of the file first
            return tool_calls([(call_id, "read_file", json.dumps({"path": edit.group(1)}))])
        if m := re.search(r"call `([^`]+)` with `([^`]*)`", asked):
            return tool_calls([(call_id, m.group(1), m.group(2))])
        if m := re.search(r"run `([^`]+)`", asked):
            return tool_calls([(call_id, "bash", json.dumps({"command": m.group(1)}))])
        if m := re.search(r"write (\S+): (.*)", asked, re.DOTALL):
            return tool_calls([(call_id, "write_file",
                                json.dumps({"path": m.group(1), "content": m.group(2)}))])
        if "think" in asked:
            return text("Thought it through.", reasoning="Let me consider this carefully.")
        if "long" in asked:
            return text("This reply was cut at the token lim", finish_reason="length")
        if "refuse" in asked:
            return text("", finish_reason="content_filter")
        return text(HELLO)


def model_env(model: ScriptedModel, home: Path) -> dict[str, str]:
    return {"TURNSTONED_HOME": str(home), "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-test", "TURNSTONED_MODEL": "scripted"}


def acp_command() -> list[str]:
    return [sys.executable, "-m", "turnstoned", "acp"]


class AcpFailure(Exception):
    def __init__(self, error: JSON) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = str(error.get("message"))
        self.data = error.get("data")


class RawAcp:
    """ACP over a real process's stdio, one JSON message per line.

    ``on_request(method, params)`` answers the agent's requests (an awaitable of the
    result, or an ``AcpFailure`` to answer with an error); ``updates`` collects every
    ``session/update``, ``notes`` every other notification, ``lines`` every line read.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[bytes] = []
        self.updates: list[JSON] = []
        self.notes: list[tuple[str, Any]] = []
        self.asked: list[tuple[str, JSON]] = []
        self.on_request: Callable[[str, JSON], Any] = self._refuse
        self._ids = 0
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._changed = asyncio.Event()
        self.stderr = bytearray()
        self._tasks = [asyncio.get_running_loop().create_task(self._read()),
                       asyncio.get_running_loop().create_task(self._read_stderr())]

    @classmethod
    async def start(cls, env: dict[str, str], cwd: Path | None = None,
                    args: tuple[str, ...] = ()) -> RawAcp:
        proc = await asyncio.create_subprocess_exec(
            *acp_command(), *args, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env}, cwd=str(cwd or ROOT), limit=1 << 26)
        return cls(proc)

    @staticmethod
    async def _refuse(method: str, params: JSON) -> Any:
        raise AcpFailure({"code": -32601, "message": f"no handler for {method}"})

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, msg: JSON) -> None:
        self.write(json.dumps(msg).encode() + b"\n")

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line)
            msg = json.loads(line)
            if "method" in msg and "id" in msg:
                asyncio.get_running_loop().create_task(self._answer(msg))
            elif "method" in msg:
                if msg["method"] == "session/update":
                    self.updates.append(msg["params"])
                else:
                    self.notes.append((msg["method"], msg.get("params")))
            else:
                future = self._pending.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
            self._changed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(EOFError("the agent closed its stdout"))
        self._changed.set()

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    async def _answer(self, msg: JSON) -> None:
        self.asked.append((msg["method"], msg.get("params") or {}))
        self._changed.set()
        try:
            result = await self.on_request(msg["method"], msg.get("params") or {})
        except AcpFailure as exc:
            self.send({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": exc.code, "message": exc.message}})
            return
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    async def raw(self, method: str, params: Any = None, timeout: float = 30) -> JSON:
        """The whole response message to a request."""
        self._ids += 1
        msg_id = self._ids
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        msg: JSON = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return await asyncio.wait_for(future, timeout)  # type: ignore[no-any-return]

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        answer = await self.raw(method, params, timeout)
        if "error" in answer:
            raise AcpFailure(answer["error"])
        return answer["result"]

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(self, pred: Callable[[], Any], timeout: float = 20) -> Any:
        async def scan() -> Any:
            while True:
                found = pred()
                if found:
                    return found
                self._changed.clear()
                try:  # a message arrived, or a tenth of a second passed (files, processes)
                    await asyncio.wait_for(self._changed.wait(), 0.1)
                except TimeoutError:
                    pass
        return await asyncio.wait_for(scan(), timeout)

    def of(self, kind: str, session_id: str | None = None) -> list[JSON]:
        """The updates of one ``sessionUpdate`` kind (of one session)."""
        return [u["update"] for u in self.updates if u["update"]["sessionUpdate"] == kind
                and (session_id is None or u["sessionId"] == session_id)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.of(kind, session_id))

    def calls(self, session_id: str | None = None) -> dict[str, JSON]:
        """Every tool call as the updates left it (``tool_call`` merged with its updates)."""
        out: dict[str, JSON] = {}
        for u in self.updates:
            update = u["update"]
            if session_id is not None and u["sessionId"] != session_id:
                continue
            if update["sessionUpdate"] == "tool_call":
                out[update["toolCallId"]] = dict(update)
            elif update["sessionUpdate"] == "tool_call_update":
                call = out.setdefault(update["toolCallId"], {})
                call.update({k: v for k, v in update.items() if v is not None})
        return out

    async def initialize(self, **capabilities: Any) -> JSON:
        return await self.request("initialize", {  # type: ignore[no-any-return]
            "protocolVersion": 1, "clientCapabilities": capabilities,
            "clientInfo": {"name": "tests", "version": "1"}})

    async def new_session(self, cwd: Path, **params: Any) -> str:
        result = await self.request("session/new", {"cwd": str(cwd), "mcpServers": [], **params})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text_: str, timeout: float = 30) -> JSON:
        return await self.request("session/prompt", {  # type: ignore[no-any-return]
            "sessionId": session_id, "prompt": [{"type": "text", "text": text_}]},
            timeout=timeout)

    async def close(self, timeout: float = 15) -> int:
        """Close stdin and wait for the process to end (killed after ``timeout``)."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, 5)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
        return code


def main() -> int:
    """Serve the scripted model until stdin closes; print its base URL on stdout."""
    with ScriptedModel(default=Brain(), record=False) as server:
        print(server.base_url, flush=True)
        done = threading.Event()

        def wait_stdin() -> None:
            sys.stdin.read()
            done.set()

        threading.Thread(target=wait_stdin, daemon=True).start()
        done.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
