"""Kill a real daemon while every kind of child runs, then count what outlived it.

Shared by tests/e2e/test_orphans.py and bench/orphan_bench.py. One daemon runs,
at once: a background shell, a foreground bash with a job in its group and a
double-forked ``setsid`` escapee, a search whose rg/grep blocks on a FIFO, and
an MCP stdio server with a helper process of its own. Every process the test expects carries a tag in its
command line (a unique ``sleep`` duration, the FIFO's path) or is named by the
MCP server's own pid file.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"
START_TIMEOUT = 30.0


@dataclass
class Outcome:
    """What was running at the kill and what was still alive afterwards."""

    children: set[int] = field(default_factory=set)
    survivors: set[int] = field(default_factory=set)
    scripts_left: list[str] = field(default_factory=list)


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def tagged(tags: tuple[str, ...]) -> set[int]:
    """Live processes whose command line contains one of ``tags`` as a whole word."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            words = _cmdline(int(entry))
            if any(tag in words for tag in tags) and _alive(int(entry)):
                found.add(int(entry))
    return found


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait (on pidfds) until every process exited; the ones still alive after ``timeout``."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fds[os.pidfd_open(pid)] = pid
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    try:
        while fds and time.monotonic() < deadline:
            for fd, _ in poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                poller.unregister(fd)
                os.close(fd)
                del fds[fd]
    finally:
        for fd in fds:
            os.close(fd)
    return {pid for pid in pids if _alive(pid)}


def _wait_until(what: str, check: Callable[[], object], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never saw {what}")
        time.sleep(0.02)


class Scene:
    """A daemon with every kind of child running, ready to be killed."""

    def __init__(self, model: ScriptedModel, work: Path) -> None:
        self.model = model
        self.work = work
        self.tmp = work / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.markers = work / "markers"
        self.markers.mkdir(exist_ok=True)
        self.fifo = work / "blocked.fifo"
        if not self.fifo.exists():
            os.mkfifo(self.fifo)
        self.sleep = f"{random.randint(40000, 49999)}.{random.randint(100, 999)}"
        # The MCP server starts a helper of its own, as npx- or uvx-launched servers do.
        server = f"sleep {self.sleep} & exec {sys.executable} {SERVERS / 'everything.py'} --name ev"
        config = work / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"ev": {"command": "sh", "args": ["-c", server]}}}))
        env = {"TURNSTONED_HOME": str(work / "home"), "OPENAI_BASE_URL": model.base_url,
               "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted", "TMPDIR": str(self.tmp),
               "MARKER_DIR": str(self.markers)}
        self.daemon = RawDaemon(env, args=("--mcp-config", str(config), "--tool-search", "off"))

    def _session(self) -> str:
        return str(self.daemon.result("session/start", {"cwd": str(self.work),
                                                        "skipPermissions": True})["sessionId"])

    def _turn(self, sid: str) -> str:
        return str(self.daemon.result("turn/start", {
            "sessionId": sid, "input": [{"type": "text", "text": "go"}]})["turnId"])

    def start(self, stages: int = 4) -> set[int]:
        """Start the children, stage by stage; returns their pids once the stages run.

        1: the MCP server (and its helper), 2: + a background shell, 3: + a foreground
        bash, 4: + a search blocked on a FIFO.
        """
        d = self.daemon
        d.initialize()
        s = self.sleep
        _wait_until("the MCP server", lambda: (self.markers / "starts").exists()
                    and len(tagged((s,))) == 1)
        if stages >= 2:
            bg = json.dumps({"command": f"sleep {s}", "run_in_background": True})
            self.model.push(tool_calls([("bg", "bash", bg)]), text("started"))
            tid = self._turn(self._session())
            d.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        if stages >= 3:
            fg = json.dumps({"command": f"sleep {s} & (setsid sleep {s} &); sleep {s}"})
            self.model.push(tool_calls([("fg", "bash", fg)]))
            self._turn(self._session())
            _wait_until("the foreground sleeps", lambda: len(tagged((s,))) == 2 + 3)
        if stages >= 4:
            query = json.dumps({"query": "needle", "path": str(self.fifo)})
            self.model.push(tool_calls([("se", "search", query)]))
            self._turn(self._session())
            _wait_until("the search child", lambda: tagged((str(self.fifo),)))
        return self._ours()

    def _ours(self) -> set[int]:
        starts = self.markers / "starts"
        mcp = {int(line) for line in starts.read_text().split()} if starts.exists() else set()
        return tagged((self.sleep, str(self.fifo))) | {pid for pid in mcp if _alive(pid)}

    def kill(self, sig: int, stages: int = 4, delay: float = 0.0,
             grace: float = 10.0) -> Outcome:
        """Signal the daemon ``delay`` seconds after the stages run; count what survives."""
        children = self.start(stages)
        if delay:
            time.sleep(delay)
        os.kill(self.daemon.proc.pid, sig)
        self.daemon.proc.wait(15)
        survivors = wait_gone(children | self._ours(), grace) | self._ours()
        scripts = sorted(p.name for p in self.tmp.iterdir() if p.name.startswith("turnstoned"))
        return Outcome(children, survivors, scripts)

    def clean_up(self, outcome: Outcome | None) -> None:
        """SIGKILL whatever this scene started and left alive (by pid)."""
        if self.daemon.proc.poll() is None:
            self.daemon.proc.kill()
            self.daemon.proc.wait()
        for pid in self._ours() | (outcome.survivors if outcome else set()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
