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
import sys

from turnstoned.daemon import rundir

# `typing` and `subprocess` (only --private needs it) cost every run a few milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    import subprocess
    from collections.abc import Callable
    from typing import Any

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
        except NoAnswer as exc:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32603, "message": str(exc)}})
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
            import subprocess

            # Its own session: Ctrl-C in the terminal reaches only this chat, which stops the
            # turn and closes the daemon in order (a daemon sharing the signal died under it).
            # It still ends with this chat: its stdin closes.
            self.proc = subprocess.Popen(rundir.daemon_command(*flags), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, start_new_session=True)
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
            import subprocess

            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()
            except OSError:  # it is gone already
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- answering the daemon


_SANDBOX = {"sandboxed": "in the sandbox", "unsandboxed": "outside the sandbox",
            "escalated": "outside the sandbox, as the model asked"}


class NoAnswer(Exception):
    """The terminal gave no answer (end of input): the daemon hears that nobody answered."""


def _read_line() -> str | None:
    """A line from the terminal; None at end of input."""
    try:
        line = sys.stdin.readline() if sys.stdin and not sys.stdin.closed else ""
    except (OSError, ValueError):
        line = ""
    return line or None


def ask_terminal(params: Message) -> Message:
    """An approval request, asked on the terminal: y, n or a(lways), then a message; an
    answer it does not understand asks again, end of input is no answer."""
    items = params.get("items") or []
    gated = [i for i in items if i.get("needsApproval")]
    for item in items:  # each call's header was printed when it started: not again
        preview = (item.get("preview") or "").strip()
        if preview and preview not in item["header"]:  # a diff, a long command
            print(item["preview"], file=sys.stderr)
        for rated in (item.get("verdict"), item.get("judgeVerdict")):
            if rated:
                print(f"  {rated['risk']} risk ({rated['rule']}): {rated['reason']}",
                      file=sys.stderr)
        if item.get("escalation"):
            print(f"  wants to run outside the sandbox: {item['escalation']}", file=sys.stderr)
        elif item.get("sandbox"):
            print(f"  runs {_SANDBOX[item['sandbox']]}", file=sys.stderr)
        if item.get("needsApproval"):
            saves = ", ".join(item.get("grantRules") or []) or "nothing (it will ask every time)"
            print(f"  always saves: {saves}", file=sys.stderr)
    labels = sorted({i["approvalLabel"] for i in gated})
    what = labels[0] if len(gated) == 1 else f"{len(gated)} tools ({', '.join(labels)})"
    while True:
        print(f"Allow {what}? [y/n/a(lways), optional message] ", end="", file=sys.stderr,
              flush=True)
        line = _read_line()
        if line is None:
            print("\n(no answer: the call does not run)", file=sys.stderr)
            raise NoAnswer("the terminal gave no answer (end of input)")
        sep = "," if "," in line else " "
        word, _, feedback = line.strip().partition(sep)
        decision = {"a": "always", "always": "always", "y": "approve", "yes": "approve",
                    "n": "deny", "no": "deny"}.get(word.strip().lower())
        if decision is not None:
            return {"decision": decision, "feedback": feedback.strip() or None}
        print("  answer y (run it), n (do not; add why after a comma) or a (always)",
              file=sys.stderr)


def _field(name: str, spec: Message, required: bool) -> tuple[bool, Any]:
    """One form field asked on the terminal: (answered, value); raises NoAnswer at end of
    input. Empty keeps the default (or leaves an optional field out)."""
    kind = spec.get("type", "string")
    choices = spec.get("enum")
    default = spec.get("default")
    hint = "/".join(map(str, choices)) if choices else kind
    extra = f", default {default}" if default is not None else ""
    while True:
        label = spec.get("title") or name
        print(f"  {label} ({hint}{extra}{', required' if required else ''}): ", end="",
              file=sys.stderr, flush=True)
        line = _read_line()
        if line is None:
            raise NoAnswer("end of input")
        text = line.strip()
        if text == "!decline":
            return False, "!decline"
        if not text:
            if default is not None:
                return True, default
            if not required:
                return False, None
            print("    this one is required", file=sys.stderr)
            continue
        try:
            if kind == "boolean":
                if text.lower() not in ("y", "yes", "true", "n", "no", "false"):
                    raise ValueError("answer y or n")
                return True, text.lower() in ("y", "yes", "true")
            if kind == "integer":
                return True, int(text)
            if kind == "number":
                return True, float(text)
        except ValueError as exc:
            print(f"    {exc}", file=sys.stderr)
            continue
        if choices and text not in map(str, choices):
            print(f"    one of: {hint}", file=sys.stderr)
            continue
        return True, text


def ask_form(params: Message) -> Message:
    """An MCP server's question (mcpServer/elicit), as a form on the terminal; `!decline`
    declines, end of input cancels."""
    schema = params.get("requestedSchema") or {}
    props: dict[str, Message] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    print(f"\n[{params['server']}] {params['message']}", file=sys.stderr)
    print("  (empty: the default; !decline: decline; end of input: cancel)", file=sys.stderr)
    content: Message = {}
    try:
        for name, spec in props.items():
            answered, value = _field(name, spec, name in required)
            if value == "!decline":
                return {"action": "decline"}
            if answered:
                content[name] = value
    except NoAnswer:
        return {"action": "cancel"}
    return {"action": "accept", "content": content}


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
    """Renders events for a person (text on stdout, tool activity on stderr) or as JSON lines.

    What a task agent does (events with ``parentCallId``) is indented under its call, on
    stderr: stdout keeps the session's own answer.
    """

    NESTED = "    "

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._fresh = True  # stderr is at the start of a line

    def _stream(self, text: str, nested: bool) -> None:
        """Streamed text on stderr; a task agent's lines are indented."""
        for piece in text.splitlines(keepends=True):
            if nested and self._fresh:
                sys.stderr.write(self.NESTED)
            sys.stderr.write(piece)
            self._fresh = piece.endswith("\n")
        sys.stderr.flush()

    def _line(self, text: str, nested: bool) -> None:
        """A line of its own on stderr."""
        start = "" if self._fresh else "\n"
        print(f"{start}{self.NESTED if nested else ''}{text}", file=sys.stderr, flush=True)
        self._fresh = True

    def __call__(self, method: str, params: Message) -> None:
        if self.as_json:
            print(json.dumps({"method": method, "params": params}), flush=True)
            return
        nested = bool(params.get("parentCallId"))
        item = params.get("item") or {}
        if method == "item/agentMessage/delta":
            if nested:
                self._stream(params["delta"], nested)
            else:
                print(params["delta"], end="", flush=True)
        elif method == "item/toolCall/outputDelta":
            self._stream(params["chunk"], nested)
        elif method == "item/started" and item["type"] == "toolCall":
            self._line(item["header"], nested)
        elif method == "item/started" and item["type"] == "agentMessage" and nested:
            self._line("⤷ agent:", nested)
        elif method == "item/completed" and item["type"] == "toolCall":
            mark = "✗" if item.get("isError") else "✓"
            first = (item.get("output") or "").strip().splitlines()[:1]
            use = item.get("sandbox")  # said when it differs from running as before: outside
            how = f" ({_SANDBOX[use]})" if use in ("sandboxed", "escalated") else ""
            self._line(f"{mark} {item['tool']} {item['status']}{how}: "
                       f"{first[0][:200] if first else ''}", nested)
        elif method == "turn/completed":
            print(flush=True)
            if params.get("error"):
                err = params["error"]
                print(f"turn failed ({err['kind']}): {err['message']}", file=sys.stderr)
        elif method == "plan/updated":
            marks = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}
            lines = [f"  {marks.get(s['status'], '[ ]')} {s['step']}" for s in params["steps"]]
            why = f" ({params['explanation']})" if params.get("explanation") else ""
            self._line("plan" + why + ":\n" + "\n".join(lines), nested)
        elif method == "session/notice":
            title = (params.get("data") or {}).get("title")
            head = f"{params['kind']}: {title}" if title else params["kind"]
            self._line(f"[{head}] {params['text']}", False)


def show_child(method: str, params: Message) -> None:
    """One line per step of a session a coordinator spawned."""
    sid = str(params.get("sessionId"))
    tag, item = f"  [{sid[:8]}]", params.get("item") or {}
    if method == "item/started" and item.get("type") == "toolCall":
        print(f"{tag} {item['header']}", file=sys.stderr, flush=True)
    elif method == "item/completed" and item.get("type") == "agentMessage" and item["text"]:
        first = item["text"].strip().splitlines()[0][:200]
        print(f"{tag} ⤷ {first}", file=sys.stderr, flush=True)
    elif method == "turn/completed" and params["status"] != "completed":
        print(f"{tag} turn {params['status']}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the turn


class Session:
    """Runs a turn of one session and prints its events (and its child sessions' steps);
    ``follow`` then stays while the session's watches are active."""

    def __init__(self, wire: Wire, session_id: str, show: Printer, children: bool) -> None:
        self.wire, self.session_id, self.show = wire, session_id, show
        self.children = children
        self.turn_id: str | None = None
        self.early: list[Message] = []
        self.done: Message | None = None
        self.following = False
        self.running: set[str] = set()  # turns the session's watches started
        self.changed = False
        wire.on_notification = self.event

    def event(self, msg: Message) -> None:
        method, params = msg["method"], msg.get("params") or {}
        if params.get("sessionId") != self.session_id:
            if self.children and params.get("sessionId") and not params.get("parentCallId"):
                show_child(method, params)
            return
        if self.following:
            self._followed(method, params)
        elif self.turn_id is None:
            self.early.append(msg)
        elif params.get("turnId") in (None, self.turn_id):
            self.show(method, params)
            if method == "turn/completed":
                self.done = params

    def run(self, prompt: str) -> Message:
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

    def _followed(self, method: str, params: Message) -> None:
        self.show(method, params)
        if method == "turn/started":
            self.running.add(params["turnId"])
        elif method == "turn/completed":
            self.running.discard(params["turnId"])
            self.changed = True
        elif method == "session/notice":
            self.changed = True

    def follow(self) -> None:
        """Print what the session's watches bring (reports, the turns they start) until none
        is left active and no turn runs."""
        self.following = True
        shown = ""
        while True:
            self.changed = False
            listed = self.wire.request("watch/list", {"sessionId": self.session_id})
            names = ", ".join(w["name"] for w in listed["watches"])
            if not names and not self.running:
                return
            if names and names != shown:
                print(f"\nfollowing: active watches {names}; Ctrl-C stops following (the "
                      "watches stay)", file=sys.stderr, flush=True)
            shown = names
            while not self.changed:
                self.wire.pump(None)


# ---------------------------------------------------------------- /undo and /redo

UNDO_USAGE = "/undo [rewind] [TURN_ID] | /redo [UNDO_ID]"


def _resolve(conflicts: list[Message]) -> dict[str, str]:
    """Each file the user changed since the agent did: keep mine (k), take the checkpoint
    (t), or show the diff (d) first. No answer keeps the user's version."""
    chosen: dict[str, str] = {}
    for conflict in conflicts:
        path = conflict["path"]
        while path not in chosen:
            print(f"{path} changed after the agent's turn. k(eep mine) / t(ake the "
                  "checkpoint) / d(iff)? ", end="", file=sys.stderr, flush=True)
            try:
                word = (sys.stdin.readline() if sys.stdin and not sys.stdin.closed else "")
            except (OSError, ValueError):
                word = ""
            word = word.strip().lower()[:1]
            if word == "d":
                print(conflict["diff"] or "(binary)", file=sys.stderr)
                continue
            chosen[path] = "checkpoint" if word == "t" else "mine"
    return chosen


def undo_command(wire: Wire, session_id: str | None, prompt: str, as_json: bool) -> int | None:
    """``/undo`` or ``/redo`` instead of a prompt (None when the prompt is neither)."""
    words = prompt.split()
    if not words or words[0] not in ("/undo", "/redo"):
        return None
    if session_id is None:
        print(f"turnstoned: {words[0]} needs --session ID (the session whose turn to take "
              "back)", file=sys.stderr)
        return 2
    if words[0] == "/undo":
        method = "turn/undo"
        params: Message = {"sessionId": session_id, "rewind": "rewind" in words[1:]}
        rest = [w for w in words[1:] if w != "rewind"]
        if rest:
            params["turnId"] = rest[0]
    else:
        method, params = "turn/redo", {"sessionId": session_id}
        if words[1:]:
            params["undoId"] = words[1]
    if len(words) > 3:
        print(f"turnstoned: usage: {UNDO_USAGE}", file=sys.stderr)
        return 2
    result = wire.request(method, params, timeout=None)
    if not result["applied"]:
        params["resolutions"] = _resolve(result["conflicts"])
        result = wire.request(method, params, timeout=None)
    if as_json:
        print(json.dumps(result), flush=True)
        return 0 if result["applied"] else 1
    if not result["applied"]:
        print("turnstoned: files changed again while asking; nothing was undone",
              file=sys.stderr)
        return 1
    done = "undid" if method == "turn/undo" else "redid"
    turns = len(result["turnIds"])
    print(f"{done} {turns} turn{'s' if turns != 1 else ''}"
          + (" (the conversation went back too)" if result.get("rewound") else ""))
    for changed in result["restored"]:
        print(f"  {changed['kind']:<6} {changed['path']}")
    for path in result["kept"]:
        print(f"  kept   {path} (your version)")
    if method == "turn/undo":
        if result.get("prompt"):
            print(f"the prompt was: {result['prompt']}")
        print(f"/redo {result['undoId']} brings it back")
    return 0


# ---------------------------------------------------------------- /login and /logout

def show_login_page(params: Message) -> Message:
    """mcpServer/authorize: the address to open (a terminal opens no browser; the daemon
    waits for the login to come back to it)."""
    print(f"\nLog in to MCP server {params['server']}: open this address in a browser on "
          f"this machine, then come back here.\n  {params['url']}\n(waiting up to 5 "
          "minutes)", file=sys.stderr, flush=True)
    return {"opened": False}


def login_command(wire: Wire, prompt: str, as_json: bool) -> int | None:
    """``/login NAME`` or ``/logout NAME`` (an MCP server) instead of a prompt."""
    words = prompt.split()
    if not words or words[0] not in ("/login", "/logout"):
        return None
    if len(words) != 2:
        print(f"turnstoned: usage: {words[0]} MCP_SERVER", file=sys.stderr)
        return 2
    method = "mcpServer/login" if words[0] == "/login" else "mcpServer/logout"
    server = wire.request(method, {"name": words[1]}, timeout=None)["server"]
    if as_json:
        print(json.dumps(server), flush=True)
    elif method == "mcpServer/login":
        print(f"logged in to {server['name']}: {server['status']}, {server['tools']} tools")
    else:
        print(f"logged out of {server['name']}"
              + (" (it asks for a login again)" if server.get("needsAuth") else ""))
    return 0


def mismatch(health: Message) -> str | None:
    """What this shell would use for the model, if the running daemon uses another (it
    was started with other settings); None when they agree or this shell sets nothing."""
    from turnstoned import config

    try:
        found = config.resolve_model(config.load().model)
    except config.ConfigError:
        return None
    if isinstance(found, str) or not health.get("model"):
        return None
    theirs = (health["model"], health.get("modelUrl") or None)
    ours = (found.name, found.base_url or None)
    if ours == theirs:
        return None
    return (f"turnstoned: the resident daemon uses {theirs[0]} at {theirs[1] or 'OpenAI'}, but "
            f"this shell says {ours[0]} at {ours[1] or 'OpenAI'} (the daemon was started with "
            "other settings): run `turnstoned stop` and again, or use --private")


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
        if msg["method"] == "mcpServer/elicit":
            return ask_form(msg["params"])
        if msg["method"] == "mcpServer/authorize":
            return show_login_page(msg["params"])
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
        if not opts.private and (warned := mismatch(wire.request("daemon/health"))):
            print(warned, file=sys.stderr)
        handled = login_command(wire, opts.prompt, opts.json)
        if handled is not None:
            return handled
        cwd = os.path.abspath(opts.cwd or ".")
        if opts.trust_mcp and not opts.session:
            _trust_project(wire, cwd)
        sid = opts.session
        if sid:
            wire.request("session/resume", {"sessionId": sid})
            if opts.mode:
                wire.request("session/setMode", {"sessionId": sid, "mode": opts.mode})
        handled = undo_command(wire, sid, opts.prompt, opts.json)
        if handled is not None:
            return handled
        if not sid:
            kind = "coordinator" if opts.coordinator else "interactive"
            sid = wire.request("session/start", {"cwd": cwd, "model": opts.model, "kind": kind,
                                                 "skipPermissions": opts.yes,
                                                 "approvalMode": opts.mode})["sessionId"]
        if not opts.json:
            print(f"session {sid}", file=sys.stderr)
        session = Session(wire, sid, Printer(opts.json), children=not opts.json)
        done = session.run(opts.prompt)
        if opts.follow:
            session.follow()
    except (Failure, TimeoutError, OSError) as exc:
        print(f"turnstoned: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        daemon.close()
    return {"completed": 0, "interrupted": 130}.get(done["status"], 1)
