"""Fuzz a real daemon over stdio; prints figures. Not a test: it floods a daemon for a while.

    .venv/bin/python bench/fuzz_daemon.py [--inputs 12000] [--seed 1]

Inputs, in batches that each end with a `daemon/health` probe:

- every client->daemon method of protocol.METHODS with each params field replaced by
  values of every wrong JSON type, huge and odd values (and params that are not objects);
- valid requests in framing variants: header case and spacing, LF-only, lengths counted in
  characters, no blank line, overstated lengths, garbage between frames, split writes;
- random JSON bodies, broken JSON, envelope mutations (ids and methods of every type,
  missing or wrong `jsonrpc`, batches), unserved LSP methods, stray responses and cancels;
- frames over the size limit (the run sets `[daemon] max_frame_mib = 1`).

Approval requests from the daemon are answered with random (often invalid) answers.

Checked: the daemon stays alive and answers every probe; no error on the wire carries
anything but `data.kind` and no message carries a traceback; every request with a
usable id got an answer. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls
from turnstoned import protocol as p

TRACEBACK = b"Traceback (most recent call last)"
BATCH = 100
PROBE_TIMEOUT = 60.0


def odd_values(rng: random.Random) -> list[Any]:
    """Values of every JSON type, huge and odd ones among them."""
    return [
        None, True, False, 0, -1, 2**63, -(2**70), 10**40, 1.5, -0.0, 1e308,
        "", "x", " ", "\u0000", "a\u0000b", "\u202e\u2066evil", "é" * 3, "🙂" * 5,
        "x" * 5000, "/" + "d/" * 3000, "file:///tmp", "../../etc/passwd", "~", "\\\\?\\C:",
        [], [None], [1, "a", {}], list(range(200)), {}, {"a": 1}, {"__proto__": {}},
        {"type": "text", "text": 5}, nested(rng.randint(50, 400)),
    ]


def nested(depth: int) -> Any:
    value: Any = "deep"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([rng.randint(-10, 10), rng.randint(-(2**80), 2**80), rng.random() * 1e6])
    if kind in (3, 4):
        return random_text(rng, rng.randint(0, 40))
    if kind in (5, 6):
        return {random_text(rng, rng.randint(0, 8)): random_json(rng, depth + 1)
                for _ in range(rng.randint(0, 5))}
    return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def random_text(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x2FFF)]))
                   for _ in range(n))


def example_params(method: p.Method, sessions: list[str], tmp: str) -> dict[str, Any]:
    """A plausible, mostly valid params object for ``method``."""
    base: dict[str, Any] = {
        "session/start": {"cwd": tmp},
        "turn/start": {"sessionId": sessions[0], "input": [{"type": "text", "text": "hi"}]},
        "turn/interrupt": {"sessionId": sessions[0]},
        "memory/delete": {"name": "n", "scope": "global"},
        "initialize": {"processId": None, "capabilities": {}},
    }.get(method.name, {})
    if method.params is not None and method.name not in base:
        for field in msgspec.structs.fields(method.params):
            if field.encode_name == "sessionId":
                base["sessionId"] = sessions[0]
    return base


def model_answer(rng: random.Random) -> Callable[[Any], Response]:
    """The model server's answer to a turn: text, or a write that needs an approval."""

    def answer(_: Any) -> Response:
        if rng.random() < 0.6:
            return tool_calls([(f"w{rng.randrange(10**9)}", "write_file",
                                '{"path": "fuzz.txt", "content": "x"}')])
        return text("ok")

    return answer


class Fuzzer:
    def __init__(self, env: dict[str, str], seed: int) -> None:
        self.env = env
        self.rng = random.Random(seed)
        self.sent = 0
        self.expect: set[str] = set()  # request ids that must be answered
        self.answered: set[str] = set()
        self.bad_errors: list[dict[str, Any]] = []
        self.tracebacks = 0
        self.internal: list[dict[str, Any]] = []
        self.crashes = 0
        self.daemon_requests = 0
        self.frames_out = 0
        self.stderr_tracebacks = 0
        self.results: dict[str, Any] = {}
        self.notes: dict[str, int] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Any = None

    # ----------------------------------------------------------- the daemon

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "turnstoned"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
                                     cwd=self.env["TURNSTONED_HOME"])
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        threading.Thread(target=self._stderr, args=(self.proc,), daemon=True).start()
        self.call("initialize", {"processId": os.getpid(), "capabilities": {}})
        self.write(self.frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def _stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if b"Traceback" in line:
                self.stderr_tracebacks += 1
            if self.log is not None:
                self.log.write(line)

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        out = proc.stdout
        assert out is not None
        while True:
            length = -1
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            body = out.read(length)
            self.frames_out += 1
            if TRACEBACK in body:
                self.tracebacks += 1
            self._seen(json.loads(body))

    def _seen(self, msg: dict[str, Any]) -> None:
        if "method" in msg:
            name = str(msg["method"])
            self.notes[name] = self.notes.get(name, 0) + 1
        if "method" in msg and "id" in msg:
            self.daemon_requests += 1
            # no "always": a standing grant would stop the questions
            answers = [{"decision": "deny"}, {"decision": "approve"}, None, {"decision": 7}, "x",
                       {"decision": "approve", "feedback": "\u0000" * 3}, {}]
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"],
                                     "result": self.rng.choice(answers)}
            if self.rng.random() < 0.2:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": self.rng.choice(
                    [{"code": -1, "message": "no"}, "broken", {"code": "x"}])}
            threading.Thread(target=self.write, args=(self.frame(reply),), daemon=True).start()
            return
        err = msg.get("error")
        if isinstance(err, dict):
            data = err.get("data")
            if not (isinstance(data, dict) and set(data) == {"kind"}):
                self.bad_errors.append(msg)
            if err.get("code") == -32603:
                self.internal.append(msg)
        if "id" in msg and "method" not in msg:
            with self._cond:
                self.answered.add(str(msg["id"]))
                if "result" in msg:
                    self.results[str(msg["id"])] = msg["result"]
                self._cond.notify_all()

    def write(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with self._write_lock:  # one writer at a time keeps frames whole
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass

    # ----------------------------------------------------------- inputs

    def next_id(self) -> str:
        self._ids += 1
        return f"f{self._ids}"

    @staticmethod
    def frame(msg: Any, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
        body = json.dumps(msg).encode() if not isinstance(msg, bytes) else msg
        return header % len(body) + body

    def request(self, method: Any, params: Any = None, *, answered: bool = True,
                omit_params: bool = False) -> tuple[str, dict[str, Any]]:
        msg_id = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit_params:
            msg["params"] = params
        if answered:
            self.expect.add(msg_id)
        return msg_id, msg

    def call(self, method: str, params: Any = None, timeout: float = PROBE_TIMEOUT) -> bool:
        """Send a request and wait for its answer; False when none came."""
        msg_id, msg = self.request(method, params)
        self.last_call = msg_id
        self.write(self.frame(msg))
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.answered:
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc is not None and self.proc.poll() is not None):
                    return False
                self._cond.wait(left)
        return True

    def typed_inputs(self, sessions: list[str], tmp: str) -> Iterator[bytes]:
        """Every method, every params field, every odd value; and params that are not objects."""
        for method in p.METHODS:
            if method.direction != "client->daemon" or method.kind != "request":
                continue
            if method.name == "shutdown":
                continue
            base = example_params(method, sessions, tmp)
            fields = ([f.encode_name for f in msgspec.structs.fields(method.params)]
                      if method.params is not None else []) + ["unexpected"]
            for field in fields:
                for value in odd_values(self.rng):
                    _, msg = self.request(method.name, {**base, field: value})
                    yield self.frame(msg)
            for params in odd_values(self.rng):
                if not isinstance(params, dict):
                    _, msg = self.request(method.name, params)
                    yield self.frame(msg)

    def framed_variant(self) -> bytes:
        """A valid request in one of the framing variants the daemon must accept."""
        method = self.rng.choice(["daemon/health", "session/list", "tool/list", "mcpServer/list"])
        _, msg = self.request(method, {"note": "naïve ✓ " * self.rng.randint(0, 5)})
        body = json.dumps(msg, ensure_ascii=False).encode()
        variant = self.rng.randrange(9)
        headers = [b"content-length: %d\r\n\r\n", b"Content-Length:%d\r\n\r\n",
                   b"Content-Length: %d   \r\n\r\n", b"Content-Length: %d\n\n",
                   b"CONTENT-LENGTH : %d\r\nContent-Type: application/json\r\n\r\n",
                   b"Content-Length: %d\r\n"]
        if variant < len(headers):
            return headers[variant] % len(body) + body
        if variant == 6:  # characters, not bytes
            return b"Content-Length: %d\r\n\r\n" % len(body.decode()) + body
        if variant == 7:  # overstated by a little: the next frame is inside the body
            return b"Content-Length: %d\r\n\r\n" % (len(body) + self.rng.randint(1, 40)) + body
        junk = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 60)))
        return junk.replace(b"ontent", b"xntent") + b"\r\n" + self.frame(body)

    def random_input(self) -> bytes:
        kind = self.rng.randrange(12)
        if kind >= 10:  # a real turn: its approvals get random answers, some are withdrawn
            sid = self.rng.choice(self.sessions)
            method = self.rng.choice(["turn/start"] * 6 + ["turn/interrupt", "session/close"]
                                     + ["session/resume"] * 3)
            params: dict[str, Any] = {"sessionId": sid}
            if method == "turn/start":
                params["input"] = [{"type": "text", "text": random_text(self.rng, 20)}]
            _, msg = self.request(method, params)
            return self.frame(msg)
        if kind == 0:
            return self.framed_variant()
        if kind == 1:  # random JSON body
            return self.frame(json.dumps(random_json(self.rng)).encode())
        if kind == 2:  # broken JSON; the daemon answers id null or the id it can see
            _, msg = self.request("daemon/health", answered=False)
            body = json.dumps(msg).encode()
            cut = self.rng.randint(1, len(body) - 1)
            return self.frame(self.rng.choice([body[:cut], body[:cut] + b"\x00\xff", b"{" * 50]))
        if kind == 3:  # envelope mutations
            _, msg = self.request("daemon/health", answered=False)
            key = self.rng.choice(["id", "method", "jsonrpc", "params"])
            msg[key] = self.rng.choice(odd_values(self.rng)[:30])
            if self.rng.random() < 0.2:
                msg.pop(self.rng.choice(list(msg)))
            return self.frame(self.rng.choice([msg, [msg], [msg, msg], []]))
        if kind == 4:  # LSP methods the daemon does not serve, and random names
            method = self.rng.choice(["textDocument/completion", "workspace/executeCommand",
                                      "textDocument/didOpen", "$/setTrace", "workspace/symbol",
                                      random_text(self.rng, 8)])
            if self.rng.random() < 0.5:  # as a notification: ignored quietly
                return self.frame({"jsonrpc": "2.0", "method": method,
                                   "params": random_json(self.rng)})
            _, msg = self.request(method, random_json(self.rng))
            return self.frame(msg)
        if kind == 5:  # stray responses and cancels
            choice = self.rng.randrange(3)
            if choice == 0:
                return self.frame({"jsonrpc": "2.0", "id": self.rng.choice(["approval-x", 5, "f1"]),
                                   "result": random_json(self.rng)})
            if choice == 1:
                return self.frame({"jsonrpc": "2.0", "id": "approval-y", "error": random_json(self.rng)})
            return self.frame({"jsonrpc": "2.0", "method": "$/cancelRequest",
                               "params": {"id": self.rng.choice([f"f{self._ids}", 3, [], None])}})
        method = self.rng.choice([m for m in p.METHODS if m.direction == "client->daemon"
                                  and m.kind == "request" and m.name != "shutdown"])
        params = random_json(self.rng)
        if isinstance(params, dict) and self.rng.random() < 0.5:
            params.update(example_params(method, self.sessions, self.tmp))
        _, msg = self.request(method.name, params)
        return self.frame(msg)

    def oversized(self) -> bytes:
        _, msg = self.request("turn/start", {"sessionId": self.sessions[0],
                                             "input": [{"type": "text", "text": "x" * (3 << 20)}]})
        return self.frame(msg)

    def huge_length(self) -> bytes:
        _, msg = self.request("daemon/health", answered=False)
        return b"Content-Length: 100000000000000000000\r\n\r\n" + json.dumps(msg).encode()

    # ----------------------------------------------------------- the run

    def run(self, inputs: int, tmp: str) -> dict[str, Any]:
        self.tmp = tmp
        self.start()
        for _ in range(4):
            self.call("session/start", {"cwd": tmp})
        self.call("session/list")
        listed = self.results.get(self.last_call, {}).get("sessions", [])
        self.sessions = [s["sessionId"] for s in listed] or ["missing"]
        stream = list(self.typed_inputs(self.sessions, tmp))
        self.typed = len(stream)
        stream += [self.oversized(), self.huge_length(), self.oversized()]
        while len(stream) < inputs:
            stream.append(self.random_input())
        self.rng.shuffle(stream)
        deaf = 0
        t0 = time.monotonic()
        for start in range(0, len(stream), BATCH):
            for data in stream[start:start + BATCH]:
                self._write_split(data)
                self.sent += 1
            if not self.call("daemon/health"):
                deaf += 1
                if self.proc is not None and self.proc.poll() is not None:
                    self.crashes += 1
                    self.start()
        alive = self.proc is not None and self.proc.poll() is None and self.call("daemon/health")
        deadline = time.monotonic() + 30
        with self._cond:
            while self.expect - self.answered and time.monotonic() < deadline:
                self._cond.wait(0.5)
        elapsed = time.monotonic() - t0
        self.call("shutdown")
        self.write(self.frame({"jsonrpc": "2.0", "method": "exit"}))
        code = self.proc.wait(30) if self.proc is not None else None
        return {"alive": alive, "deaf": deaf, "elapsed": elapsed, "exit": code,
                "unanswered": sorted(self.expect - self.answered)}

    def _write_split(self, data: bytes) -> None:
        if len(data) > 4096 or self.rng.random() < 0.8:
            self.write(data)
            return
        cuts = sorted(self.rng.sample(range(1, len(data)), min(3, len(data) - 1)))
        for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True):
            self.write(data[a:b])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--inputs", type=int, default=12_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log", help="write the daemon's stderr to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work, \
            ScriptedModel(record=False, default=model_answer(random.Random(args.seed))) as model:
        Path(home, "config").mkdir()
        Path(home, "config", "config.toml").write_text("[daemon]\nmax_frame_mib = 1\n")
        env = {**os.environ, "TURNSTONED_HOME": home, "OPENAI_BASE_URL": model.base_url,
               "OPENAI_API_KEY": "sk-fuzz", "TURNSTONED_MODEL": "scripted"}
        fuzz = Fuzzer(env, args.seed)
        if args.log:
            fuzz.log = open(args.log, "wb")  # noqa: SIM115 - closed below
        result = fuzz.run(args.inputs, work)
        if fuzz.log is not None:
            fuzz.log.close()
    print(f"fuzzed inputs          {fuzz.sent:,} (seed {args.seed}, {result['elapsed']:.0f} s; "
          f"{fuzz.typed:,} typed params, the rest framing, envelopes and random JSON)")
    print(f"frames from the daemon {fuzz.frames_out:,} ({fuzz.daemon_requests} approval requests)")
    print(f"notifications          {sum(fuzz.notes.values()):,} "
          f"({fuzz.notes.get('turn/completed', 0)} turns completed)")
    print(f"crashes                {fuzz.crashes}")
    print(f"deaf probes            {result['deaf']}")
    print(f"alive at the end       {result['alive']} (exit code after shutdown/exit: {result['exit']})")
    print(f"tracebacks on the wire {fuzz.tracebacks}")
    print(f"errors without kind    {len(fuzz.bad_errors)}")
    print(f"unanswered requests    {len(result['unanswered'])} of {len(fuzz.expect):,}")
    print(f"-32603 internal errors {len(fuzz.internal)}")
    print(f"tracebacks in the log  {fuzz.stderr_tracebacks}")
    for msg in (fuzz.bad_errors + fuzz.internal)[:10]:
        print("  ", json.dumps(msg)[:300])
    for msg_id in result["unanswered"][:10]:
        print("   unanswered:", msg_id)
    ok = (result["alive"] and not fuzz.crashes and not fuzz.tracebacks and not fuzz.bad_errors
          and not result["unanswered"] and not result["deaf"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
