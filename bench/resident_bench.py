"""The resident daemon and the first turn, side by side in one run. Prints figures.

    .venv/bin/python bench/resident_bench.py [--runs N] [--codex PATH/TO/codex]

1. Start to `initialize` answered, from a fresh process: `turnstoned attach` to a
   running resident daemon, `attach` that has to start it, the stdio daemon's cold
   start, and a bare `python -c pass` run to its end (goal: attach <= 60 ms).
2. Start to the first delta of a first turn (a 2,000-token reply from a local fake
   model server, tests/fakes/model_server.py in its own process): the stdio daemon,
   `attach` cold and warm, and Codex's app-server (its native binary, spawned as its
   VS Code extension does, against the same server's Responses endpoint) when
   `--codex` names it (goal: <= 1.0x Codex; without it, <= 400 ms).
3. In a stdio daemon, a first turn sent right after `initialized`, a first turn sent
   once the warm-up has reached the model server, and the second turn: time from
   `turn/start` to the first delta and to `turn/completed`; and how long the warm-up
   takes.
4. `turnstoned chat` twice in a row: launch to the first byte of the answer on its
   stdout, the second run (resident daemon warm) and the first (it starts the daemon);
   goal: the second within 100 ms.

Each figure: median and minimum of N; the variants take turns, so load hits all alike.
The package is byte-compiled first, as an installed one is.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
TURNSTONED = str(BIN / "turnstoned")  # the console script an editor launches


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Framed:
    """A blocking client of a process speaking Content-Length frames (or JSON lines)."""

    def __init__(self, cmd: list[str], env: dict[str, str], lines: bool = False) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.lines = lines
        self.buf = bytearray()
        self.next_id = 0

    def send(self, method: str, params: Any = None, request: bool = True) -> int:
        msg: dict[str, Any] = {"method": method}
        if not self.lines:
            msg["jsonrpc"] = "2.0"
        if params is not None:
            msg["params"] = params
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode() if self.lines else _frame(msg))
        return self.next_id

    def _fill(self) -> None:
        assert self.proc.stdout is not None
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            raise EOFError("the server closed its stdout")
        self.buf += chunk

    def message(self) -> dict[str, Any]:
        if self.lines:
            while (end := self.buf.find(b"\n")) < 0:
                self._fill()
            body = bytes(self.buf[:end])
            del self.buf[:end + 1]
            return json.loads(body)  # type: ignore[no-any-return]
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        length = int(bytes(self.buf[:end]).split(b"\r\n")[0].split(b":")[1])
        while len(self.buf) < end + 4 + length:
            self._fill()
        body = bytes(self.buf[end + 4:end + 4 + length])
        del self.buf[:end + 4 + length]
        return json.loads(body)  # type: ignore[no-any-return]

    def call(self, method: str, params: Any = None) -> Any:
        msg_id = self.send(method, params)
        while (m := self.message()).get("id") != msg_id or "method" in m:
            pass
        return m.get("result")

    def until(self, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while not pred(m := self.message()):
            pass
        return m

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


INIT = {"processId": None, "capabilities": {}}


def _stop_resident(home: str) -> None:
    subprocess.run([TURNSTONED, "stop"], env={**os.environ, "TURNSTONED_HOME": home},
                   capture_output=True, check=False, timeout=30)


def _resident_running(home: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(os.path.join(home, "run", "daemon.sock"))
            return True
        except OSError:
            return False


# ---------------------------------------------------------------- 1. to `initialize`


def to_initialize(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    c = Framed(cmd, env)
    c.call("initialize", INIT)
    elapsed = time.perf_counter() - t0
    c.close()
    return elapsed


def bare_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def bench_initialize(runs: int, env: dict[str, str], codex: Codex | None) -> None:
    home = env["TURNSTONED_HOME"]
    rows: dict[str, list[float]] = {"python -c pass": [], "attach, daemon running": [],
                                    "attach, daemon not running": [],
                                    "stdio daemon (cold start)": []}
    if codex:
        rows["Codex app-server (cold start)"] = []
    to_initialize([TURNSTONED, "attach"], env)  # page cache, and a daemon for the warm row
    for _ in range(runs):
        rows["python -c pass"].append(bare_python())
        rows["attach, daemon running"].append(to_initialize([TURNSTONED, "attach"], env))
        _stop_resident(home)
        rows["attach, daemon not running"].append(to_initialize([TURNSTONED, "attach"], env))
        rows["stdio daemon (cold start)"].append(to_initialize([TURNSTONED], env))
        if codex:
            rows["Codex app-server (cold start)"].append(codex.to_initialize())
    _print(f"start -> `initialize` answered, from a fresh process, median (min) of {runs}", rows,
           goal=("attach, daemon running", 0.060))


# ---------------------------------------------------------------- 2. to the first delta


def turnstoned_first_delta(cmd: list[str], env: dict[str, str], workdir: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    c = Framed(cmd, env)
    c.call("initialize", INIT)
    c.send("initialized", {}, request=False)
    sid = c.call("session/start", {"cwd": workdir})["sessionId"]
    c.send("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "go"}]})
    c.until(lambda m: m.get("method") == "item/agentMessage/delta")
    first = time.perf_counter() - t0
    c.until(lambda m: m.get("method") == "turn/completed")
    done = time.perf_counter() - t0
    c.close()
    return first, done


class Codex:
    """Codex's app-server (its native binary) against the fake server's Responses API."""

    def __init__(self, binary: str, base_url: str, workdir: str) -> None:
        self.binary = binary
        self.workdir = workdir
        self.home = tempfile.mkdtemp(prefix="codex-home-")
        Path(self.home, "config.toml").write_text(
            'model = "scripted"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{base_url}"\nwire_api = "responses"\n')
        self.env = {**os.environ, "CODEX_HOME": self.home, "OPENAI_API_KEY": "sk-bench"}

    def _start(self) -> Framed:
        return Framed([self.binary, "app-server"], self.env, lines=True)

    def to_initialize(self) -> float:
        t0 = time.perf_counter()
        c = self._start()
        c.call("initialize", {"clientInfo": {"name": "bench", "version": "1"}})
        elapsed = time.perf_counter() - t0
        c.proc.kill()
        c.proc.wait()
        return elapsed

    def first_delta(self) -> tuple[float, float]:
        t0 = time.perf_counter()
        c = self._start()
        c.call("initialize", {"clientInfo": {"name": "bench", "version": "1"}})
        c.send("initialized", request=False)
        thread = c.call("thread/start", {"cwd": self.workdir})["thread"]["id"]
        c.send("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "go"}]})
        c.until(lambda m: m.get("method") == "item/agentMessage/delta")
        first = time.perf_counter() - t0
        c.until(lambda m: m.get("method") == "turn/completed")
        done = time.perf_counter() - t0
        c.proc.kill()
        c.proc.wait()
        return first, done


def bench_first_delta(runs: int, env: dict[str, str], workdir: str, codex: Codex | None) -> None:
    home = env["TURNSTONED_HOME"]
    firsts: dict[str, list[float]] = {"stdio daemon, spawned": [], "attach, daemon not running": [],
                                      "attach, daemon running": []}
    dones: dict[str, list[float]] = {k: [] for k in firsts}
    if codex:
        firsts["Codex app-server, spawned"], dones["Codex app-server, spawned"] = [], []
    turnstoned_first_delta([TURNSTONED], env, workdir)  # page cache
    for _ in range(runs):
        _stop_resident(home)
        for name, cmd in (("stdio daemon, spawned", [TURNSTONED]),
                          ("attach, daemon not running", [TURNSTONED, "attach"]),
                          ("attach, daemon running", [TURNSTONED, "attach"])):
            first, done = turnstoned_first_delta(cmd, env, workdir)
            firsts[name].append(first)
            dones[name].append(done)
        if codex:
            first, done = codex.first_delta()
            firsts["Codex app-server, spawned"].append(first)
            dones["Codex app-server, spawned"].append(done)
    anchor = statistics.median(firsts["Codex app-server, spawned"]) if codex else 0.400
    _print(f"start -> first delta of a first turn (2,000-token reply), median (min) of {runs}",
           firsts, goal=None, anchor=("Codex" if codex else "400 ms", anchor))
    _print("start -> turn/completed of that turn", dones, goal=None)


# ---------------------------------------------------------------- 3. first vs second turn


def _turn(c: Framed, workdir: str) -> tuple[float, float]:
    sid = c.call("session/start", {"cwd": workdir})["sessionId"]
    t0 = time.perf_counter()
    c.send("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "go"}]})
    c.until(lambda m: m.get("method") == "item/agentMessage/delta")
    first = time.perf_counter() - t0
    c.until(lambda m: m.get("method") == "turn/completed")
    return first, time.perf_counter() - t0


def bench_first_turn(runs: int, env: dict[str, str], workdir: str) -> None:
    """The model server runs in this process here, so the bench sees when the daemon's
    warm-up reaches it (GET /models on the connection the first turn then uses)."""
    from tests.fakes.model_server import ScriptedModel, token_text

    rows: dict[str, list[float]] = {
        "warm-up: `initialized` -> model server reached": [],
        "first turn sent at once: -> first delta": [],
        "first turn sent once warm: -> first delta": [],
        "second turn: -> first delta": [],
        "first turn sent at once: -> turn/completed": [],
        "first turn sent once warm: -> turn/completed": [],
        "second turn: -> turn/completed": []}
    with ScriptedModel(default=lambda _r: token_text(2000), record=False) as model:
        env = {**env, "OPENAI_BASE_URL": model.base_url}
        for _ in range(runs):
            c = Framed([TURNSTONED], env)
            c.call("initialize", INIT)
            c.send("initialized", {}, request=False)
            first, done = _turn(c, workdir)
            rows["first turn sent at once: -> first delta"].append(first)
            rows["first turn sent at once: -> turn/completed"].append(done)
            c.close()
            c = Framed([TURNSTONED], env)
            c.call("initialize", INIT)
            seen = len(model.gets)
            t0 = time.perf_counter()
            c.send("initialized", {}, request=False)
            model.wait_gets(seen + 1, timeout=60)
            rows["warm-up: `initialized` -> model server reached"].append(time.perf_counter() - t0)
            for which in ("first turn sent once warm", "second turn"):
                first, done = _turn(c, workdir)
                rows[f"{which}: -> first delta"].append(first)
                rows[f"{which}: -> turn/completed"].append(done)
            c.close()
    _print(f"stdio daemon: a first turn (turn/start -> ...) vs the next one, median (min) of "
           f"{runs}", rows, goal=None)


# ---------------------------------------------------------------- 4. chat twice


def chat_first_byte(env: dict[str, str], workdir: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen([TURNSTONED, "chat", "--cwd", workdir, "hi"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    select.select([proc.stdout], [], [], 60)
    elapsed = time.perf_counter() - t0
    proc.stdout.read()
    proc.wait(60)
    return elapsed


def bench_chat(runs: int, env: dict[str, str], workdir: str) -> None:
    home = env["TURNSTONED_HOME"]
    rows: dict[str, list[float]] = {"first `turnstoned chat` (starts the daemon)": [],
                                    "second `turnstoned chat`": []}
    for _ in range(runs):
        _stop_resident(home)
        rows["first `turnstoned chat` (starts the daemon)"].append(chat_first_byte(env, workdir))
        rows["second `turnstoned chat`"].append(chat_first_byte(env, workdir))
    _print(f"`turnstoned chat` twice in a row: launch -> first byte of the answer, median (min) "
           f"of {runs}", rows, goal=("second `turnstoned chat`", 0.100))


# ---------------------------------------------------------------- output


def _print(title: str, rows: dict[str, list[float]], goal: tuple[str, float] | None,
           anchor: tuple[str, float] | None = None) -> None:
    print(title + ":")
    for name, values in rows.items():
        med, low = statistics.median(values), min(values)
        line = f"  {name:<44} {med * 1000:7.1f} ms ({low * 1000:6.1f})"
        if goal and name == goal[0]:
            line += f"   goal <= {goal[1] * 1000:.0f} ms"
        if anchor:
            line += f"   {med / anchor[1]:5.2f}x {anchor[0]}"
        print(line)
    print(flush=True)


def _model_server(port_hint: int = 0) -> tuple[subprocess.Popen[bytes], str]:
    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.model_server", "--port",
                               str(port_hint), "--text-tokens", "2000"], cwd=ROOT,
                              stderr=subprocess.PIPE)
    assert server.stderr is not None
    base = server.stderr.readline().decode().strip()
    return server, base


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--codex", default=os.environ.get("CODEX_BIN"),
                        help="Codex's native binary (from the npm package @openai/codex)")
    parser.add_argument("--only", default="init,first,turns,chat")
    args = parser.parse_args()
    only = set(args.only.split(","))
    # The bytecode an installed package has: with PYTHONDONTWRITEBYTECODE set, a checkout's
    # modules would otherwise be compiled again by every process measured.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "turnstoned")],
                   check=True)
    server, base = _model_server()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "TURNSTONED_HOME": home, "TURNSTONED_MODEL": "scripted",
               "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base}
        codex = Codex(args.codex, base, work) if args.codex else None
        if codex is None:
            print("Codex: not given (--codex); the first-delta goal is compared with 400 ms\n")
        try:
            if "init" in only:
                bench_initialize(args.runs, env, codex)
            if "first" in only:
                bench_first_delta(args.runs, env, work, codex)
            if "turns" in only:
                bench_first_turn(args.runs, env, work)
            if "chat" in only:
                bench_chat(args.runs, env, work)
        finally:
            _stop_resident(home)
            server.terminate()
            server.wait(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
