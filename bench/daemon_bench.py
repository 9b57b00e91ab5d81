"""Daemon benchmarks for the core: cold start, streamed answer, tool seam. Prints figures.

    .venv/bin/python bench/daemon_bench.py [--runs N]

1. Cold start: spawn -> `initialize` answered, `python -m turnstoned` vs a bare
   pygls server (bench/bare_pygls.py) started the same way. Median of N.
2. A 2,000-token streamed answer: turn/start -> turn/completed through the daemon
   (raw JSON-RPC client) vs the same stream read directly with openai's AsyncOpenAI.
   The model server runs in its own process (tests/fakes/model_server.py).
3. Tool seam of one auto-approved read_file: from the client seeing the tool call's
   item/started to the model server receiving the follow-up request (prepare,
   execute, fold to SQLite, build the next request), and the whole extra round trip.
4. Request throughput: 2,000 pipelined `daemon/health` requests, written at once, until
   the last answer is read (frame reading, dispatch and answering).
5. First run: only OPENAI_BASE_URL set, the server lists one model. Spawn ->
   `initialize` answered (the discovery must not sit on it), and spawn -> the first
   `daemon/health` naming the discovered model.

`--only cold,stream,seam,requests,first,bash,mcp` runs a subset.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def cold_start(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"processId": None, "capabilities": {}}}))
    proc.stdin.flush()
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        header += proc.stdout.read(1)
    length = int(header.split(b":")[1].split(b"\r\n")[0])
    proc.stdout.read(length)
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(10)
    return elapsed


def bench_cold_start(runs: int, env: dict[str, str]) -> None:
    daemon = [sys.executable, "-m", "turnstoned"]
    bare = [sys.executable, str(ROOT / "bench" / "bare_pygls.py")]
    cold_start(daemon, env), cold_start(bare, env)  # warm the page cache
    d, b = [], []
    for _ in range(runs):
        d.append(cold_start(daemon, env))
        b.append(cold_start(bare, env))
    md, mb = statistics.median(d), statistics.median(b)
    print(f"cold start (spawn -> initialize answered), median of {runs}:")
    print(f"  turnstoned      {md * 1000:7.1f} ms")
    print(f"  bare pygls      {mb * 1000:7.1f} ms")
    print(f"  ratio           {md / mb:7.3f}x   (goal <= 1.15x)")


class _LeanClient:
    """A single-threaded frame reader, as an editor's client reads: big reads, full JSON parse."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "turnstoned"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                     bufsize=0)
        self.buf = bytearray()
        self.next_id = 0

    def send(self, method: str, params: Any, request: bool = True) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(_frame(msg))
        return self.next_id

    def _fill(self) -> None:
        assert self.proc.stdout is not None
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            raise EOFError("daemon closed stdout")
        self.buf += chunk

    def frame(self) -> dict[str, Any]:
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        length = int(bytes(self.buf[:end]).split(b"\r\n")[0].split(b":")[1])
        while len(self.buf) < end + 4 + length:
            self._fill()
        body = bytes(self.buf[end + 4:end + 4 + length])
        del self.buf[:end + 4 + length]
        return json.loads(body)  # type: ignore[no-any-return]

    def call(self, method: str, params: Any) -> Any:
        msg_id = self.send(method, params)
        while (f := self.frame()).get("id") != msg_id or "method" in f:
            pass
        return f["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def bench_bash_stream(runs: int, env: dict[str, str], workdir: str, n: int = 1_000_000) -> None:
    """`seq 1 N` through bash to a client's outputDelta notifications vs a shell pipe."""
    pipe = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(f"seq 1 {n} | cat > /dev/null", shell=True, check=True)
        pipe.append(time.perf_counter() - t0)
    with ScriptedModel() as model:
        c = _LeanClient({**env, "OPENAI_BASE_URL": model.base_url})
        c.call("initialize", {"processId": None, "capabilities": {}})
        c.send("initialized", {}, request=False)
        through, notes = [], []
        for i in range(runs + 1):
            model.push(tool_calls([(f"b{i}", "bash", json.dumps({"command": f"seq 1 {n}"}))]),
                       text("ok"))
            sid = c.call("session/start", {"cwd": workdir, "skipPermissions": True})["sessionId"]
            c.send("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "x"}]})
            lines = chunks = 0
            t0 = 0.0
            while True:
                f = c.frame()
                method, params = f.get("method"), f.get("params") or {}
                # call ids on the wire are the daemon's own, not the model's "b{i}"
                if method == "item/started" and params["item"]["type"] == "toolCall":
                    t0 = time.perf_counter()
                elif method == "item/toolCall/outputDelta":
                    lines += params["chunk"].count("\n")
                    chunks += 1
                elif method == "item/completed" and params["item"]["type"] == "toolCall":
                    elapsed = time.perf_counter() - t0
                elif method == "turn/completed":
                    break
            assert lines == n, lines
            if i:
                through.append(elapsed)
                notes.append(chunks)
        c.close()
    mp, mt = statistics.median(pipe), statistics.median(through)
    print(f"bash `seq 1 {n}` delivered to a client, median of {runs}:")
    print(f"  seq | cat (pipe)       {n / mp / 1e6:6.2f} M lines/s ({mp * 1000:.0f} ms)")
    print(f"  through turnstoned     {n / mt / 1e6:6.2f} M lines/s ({mt * 1000:.0f} ms, "
          f"{statistics.median(notes):.0f} notifications)")
    print(f"  ratio                  {mp / mt:6.2f}   (goal >= 0.50)")


def bench_mcp_startup(runs: int, env: dict[str, str], workdir: str) -> None:
    """`initialize` with five configured MCP servers vs none; and when all five are up."""
    cfg = Path(workdir, "five.toml")
    script = ROOT / "tests" / "mcp_servers" / "everything.py"
    cfg.write_text("".join(
        f'[mcp.servers.s{i}]\ncommand = "{sys.executable}"\nargs = ["{script}", "--name", "s{i}"]\n'
        for i in range(5)))
    daemon = [sys.executable, "-m", "turnstoned"]
    five_env = {**env, "TURNSTONED_CONFIG": str(cfg)}
    Path(workdir, "none.toml").write_text("")
    none_env = {**env, "TURNSTONED_CONFIG": str(Path(workdir, "none.toml"))}
    none, five = [], []
    for _ in range(runs):
        none.append(cold_start(daemon, none_env))
        five.append(cold_start(daemon, five_env))
    d = RawDaemon(five_env)
    t0 = time.perf_counter()
    d.initialize()
    while True:
        servers = d.result("mcpServer/list")["servers"]
        if len(servers) == 5 and all(s["status"] == "connected" for s in servers):
            break
        time.sleep(0.02)
    ready = time.perf_counter() - t0
    d.close()
    mn, mf = statistics.median(none), statistics.median(five)
    print(f"initialize with MCP servers configured, median of {runs}:")
    print(f"  no servers        {mn * 1000:7.1f} ms")
    print(f"  five servers      {mf * 1000:7.1f} ms   (ratio {mf / mn:.3f}x, goal: not slower)")
    print(f"  all five connected {ready * 1000:6.0f} ms after spawn (in the background)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _direct_stream(base_url: str) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk", max_retries=0)
    t0 = time.perf_counter()
    stream = await client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "go"}], stream=True,
        stream_options={"include_usage": True})
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    elapsed = time.perf_counter() - t0
    await client.close()
    assert len("".join(parts)) > 1000
    return elapsed


def bench_stream(runs: int, env: dict[str, str], workdir: str) -> None:
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.model_server", "--port", str(port),
                               "--text-tokens", "2000"], cwd=ROOT, stderr=subprocess.PIPE)
    assert server.stderr is not None
    server.stderr.readline()  # "serving on ..."
    base = f"http://127.0.0.1:{port}/v1"
    try:
        direct = [asyncio.run(_direct_stream(base)) for _ in range(runs + 1)][1:]
        c = _LeanClient({**env, "OPENAI_BASE_URL": base})
        c.call("initialize", {"processId": None, "capabilities": {}})
        c.send("initialized", {}, request=False)
        through, deltas = [], 0
        for i in range(runs + 1):
            sid = c.call("session/start", {"cwd": workdir})["sessionId"]
            t0 = time.perf_counter()
            c.send("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "go"}]})
            while (f := c.frame()).get("method") != "turn/completed":
                deltas += f.get("method") == "item/agentMessage/delta"
            if i:
                through.append(time.perf_counter() - t0)
        deltas //= runs + 1
        c.close()
    finally:
        server.terminate()
        server.wait(5)
    md, mt = statistics.median(direct), statistics.median(through)
    print(f"2,000-token streamed answer, median of {runs}:")
    print(f"  openai SDK direct          {md * 1000:7.1f} ms")
    print(f"  through turnstoned (turn)  {mt * 1000:7.1f} ms   ({deltas:.0f} delta notifications)")
    print(f"  ratio                      {mt / md:7.3f}x   (goal <= 1.05x)")


def bench_seam(runs: int, env: dict[str, str], workdir: str) -> None:
    Path(workdir, "small.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    arrivals: list[float] = []

    def follow_up(request: dict[str, Any]) -> Any:
        arrivals.append(time.monotonic())
        return text("ok")

    with ScriptedModel() as model:
        d = RawDaemon({**env, "OPENAI_BASE_URL": model.base_url})
        d.initialize()
        seams, extra = [], []
        for i in range(runs + 1):
            sid = d.result("session/start", {"cwd": workdir})["sessionId"]
            # the same turn without the tool call, for the round-trip difference
            model.push(text("ok"))
            t0 = time.perf_counter()
            tid = d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "x"}]})["turnId"]
            d.wait_for("turn/completed", lambda p, tid=tid: p["turnId"] == tid)
            plain = time.perf_counter() - t0
            sid = d.result("session/start", {"cwd": workdir})["sessionId"]
            model.push(tool_calls([(f"r{i}", "read_file", '{"path": "small.txt"}')]), follow_up)
            t0 = time.perf_counter()
            tid = d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "x"}]})["turnId"]
            started = d.wait_for("item/started", lambda p, sid=sid: p["sessionId"] == sid
                                 and p["item"]["type"] == "toolCall")
            seen = time.monotonic()
            d.wait_for("turn/completed", lambda p, tid=tid: p["turnId"] == tid)
            total = time.perf_counter() - t0
            assert started
            if i:
                seams.append(arrivals[-1] - seen)
                extra.append(total - plain)
        d.close()
    print(f"auto-approved read_file round trip, median of {runs}:")
    print(f"  tool seam (item/started seen -> next model request)  {statistics.median(seams) * 1000:6.1f} ms")
    print(f"  whole extra round trip vs a text-only turn           {statistics.median(extra) * 1000:6.1f} ms")


def bench_requests(runs: int, env: dict[str, str], n: int = 2000) -> None:
    c = _LeanClient(env)
    c.call("initialize", {"processId": None, "capabilities": {}})
    c.send("initialized", {}, request=False)
    c.call("daemon/health", None)
    rates = []
    for _ in range(runs):
        assert c.proc.stdin is not None
        batch = b"".join(_frame({"jsonrpc": "2.0", "id": 1_000_000 + i, "method": "daemon/health"})
                         for i in range(n))
        t0 = time.perf_counter()
        c.proc.stdin.write(batch)
        answered = 0
        while answered < n:
            answered += "result" in c.frame()
        rates.append(n / (time.perf_counter() - t0))
    c.close()
    print(f"{n:,} pipelined daemon/health requests, median of {runs}:")
    print(f"  {statistics.median(rates):9.0f} requests/s")


def bench_first_run(runs: int, env: dict[str, str]) -> None:
    first_env = {k: v for k, v in env.items() if k != "TURNSTONED_MODEL"}
    with ScriptedModel() as model:
        first_env["OPENAI_BASE_URL"] = model.base_url
        init, named = [], []
        for _ in range(runs + 1):
            t0 = time.perf_counter()
            c = _LeanClient(first_env)
            c.call("initialize", {"processId": None, "capabilities": {}})
            init.append(time.perf_counter() - t0)
            c.send("initialized", {}, request=False)
            assert c.call("daemon/health", None)["model"] == "scripted"
            named.append(time.perf_counter() - t0)
            c.close()
    print(f"first run, only OPENAI_BASE_URL set, median of {runs}:")
    print(f"  spawn -> initialize answered            {statistics.median(init[1:]) * 1000:7.1f} ms")
    print(f"  spawn -> daemon/health names the model  {statistics.median(named[1:]) * 1000:7.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="cold,stream,seam,requests,first,bash,mcp",
                        help="comma-separated subset of the benchmarks")
    args = parser.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "TURNSTONED_HOME": home, "TURNSTONED_MODEL": "scripted",
               "OPENAI_API_KEY": "sk-bench"}
        if "cold" in only:
            bench_cold_start(args.runs, env)
        if "stream" in only:
            bench_stream(args.runs, env, work)
        if "seam" in only:
            bench_seam(args.runs, env, work)
        if "requests" in only:
            bench_requests(args.runs, env)
        if "first" in only:
            bench_first_run(args.runs, env)
        if "bash" in only:
            bench_bash_stream(args.runs, env, work)
            bench_bash_stream(3, env, work, n=10_000_000)
        if "mcp" in only:
            bench_mcp_startup(args.runs, env, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
