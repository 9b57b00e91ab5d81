"""Helpers for the MCP component tests: server specs, an HTTP server process, bounded waits."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from turnstoned.mcp.config import ServerSpec
from turnstoned.mcp.manager import MCPManager

HERE = Path(__file__).resolve().parent
EVERYTHING = HERE / "everything.py"
HALF_RESOURCES = HERE / "half_resources.py"
PAGED_TOOLS = HERE / "paged_tools.py"
WAIT = 20.0  # generous: the machine is shared; every wait is still bounded

# Fast loops for tests; production defaults are 30 s health, 1 s backoff base.
FAST = {"health_interval": 0.3, "backoff_base": 0.05, "backoff_cap": 0.5, "debounce": 0.05}


def stdio_spec(
    name: str, script: Path = EVERYTHING, *args: str, env: dict[str, str] | None = None
) -> ServerSpec:
    return ServerSpec(
        name=name, type="stdio", command=sys.executable, args=[str(script), *args], env=env or {}
    )


def fast_manager(specs: list[ServerSpec], **kwargs: object) -> MCPManager:
    return MCPManager(specs, **{**FAST, **kwargs})  # type: ignore[arg-type]


@asynccontextmanager
async def running(manager: MCPManager, *, ready: bool = True) -> AsyncIterator[MCPManager]:
    """Start ``manager`` (and wait until every server connected or failed); always close it."""
    await manager.start()
    try:
        if ready:
            await manager.wait_ready(WAIT)
        yield manager
    finally:
        await manager.close()


async def wait_until(
    manager: MCPManager, predicate: Callable[[], bool], timeout: float = WAIT
) -> None:
    """Wait (bounded) until ``predicate()`` holds, re-checking on every catalog or status change."""
    event = asyncio.Event()

    def check(*_: object) -> None:
        if predicate():
            event.set()

    unsubscribe = [manager.add_listener(check), manager.add_status_listener(check)]
    try:
        check()
        await asyncio.wait_for(event.wait(), timeout)
    finally:
        for unsub in unsubscribe:
            unsub()


async def wait_for_file(path: Path, timeout: float = WAIT) -> None:
    """Wait (bounded) for a marker file another process writes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not path.exists():
        if loop.time() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout}s")
        await asyncio.sleep(0.02)


def status_of(manager: MCPManager, name: str) -> str:
    return next(s.status for s in manager.status() if s.name == name)


def tool_names(manager: MCPManager) -> list[str]:
    return [t.name for t in manager.tools()]


def pid_gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def wait_pid_gone(pid: int, timeout: float = WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pid_gone(pid):
        if loop.time() > deadline:
            raise TimeoutError(f"process {pid} still exists after {timeout}s")
        await asyncio.sleep(0.02)


class HttpServer:
    """``everything.py --http`` (or another ``script`` printing "PORT n") as a subprocess on
    127.0.0.1."""

    def __init__(self, *args: str, script: Path = EVERYTHING) -> None:
        self.args = args
        self.script = script
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        argv = [sys.executable, str(self.script), *self.args]
        if self.script == EVERYTHING:
            argv[2:2] = ["--http", "--port", str(self.port)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)  # noqa: ASYNC220
        stdout = self.proc.stdout
        assert stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(stdout.readline), WAIT)
        if not line.startswith("PORT "):
            raise RuntimeError(f"HTTP MCP server did not start: {line!r}")
        self.port = int(line.split()[1])

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


@asynccontextmanager
async def http_server(*args: str, script: Path = EVERYTHING) -> AsyncIterator[HttpServer]:
    server = HttpServer(*args, script=script)
    await server.start()
    try:
        yield server
    finally:
        with suppress(OSError, subprocess.TimeoutExpired):
            server.kill()
