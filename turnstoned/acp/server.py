"""``turnstoned acp``: the process. ACP on stdin and stdout until the client closes stdin.

What every turnstoned daemon process does first, this one does too: logging to stderr,
the hardening (non-dumpable, no ptrace for children, secrets wiped from the
environment block) and the watchdog, so nothing the engine starts outlives the
process, kill -9 included. Stdout carries ACP messages only (stray prints go to
stderr). The engine is built after ``initialize`` is answered (``engines``), so a
client sees the answer in about the time Python takes to start.

It ends when stdin closes (turns get their receipts, MCP servers and shells stop,
within ``EOF_GRACE`` seconds) or on SIGINT, SIGTERM or SIGHUP (within two seconds).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from turnstoned.acp.rpc import Peer
from turnstoned.daemon.process import claim_stdout, setup_process

if TYPE_CHECKING:
    from turnstoned.acp.agent import Agent

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_GRACE = 1.2  # seconds for turns to write their receipts after a signal
EOF_GRACE = 10.0  # the client closed stdin: turns and MCP servers may take longer


def writer(out: BinaryIO) -> Callable[[bytes], None]:
    """Whole messages to ``out``, however the pipe splits them."""
    lock = threading.Lock()

    def write(data: bytes) -> None:
        view = memoryview(data)
        with lock:
            while view:
                written = out.write(view)
                view = view[written or 0:]

    return write


async def open_stdin() -> asyncio.StreamReader:
    """Stdin as a stream: a pipe or socket directly, anything else (a file) read in a thread."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        return reader
    except (ValueError, OSError):
        pass

    def pump() -> None:
        while data := os.read(0, 1 << 16):
            loop.call_soon_threadsafe(reader.feed_data, data)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return reader


def serve(overrides: dict[str, dict[str, Any]] | None = None) -> NoReturn:
    setup_process()
    out = claim_stdout()
    from turnstoned.acp.agent import Agent

    peer = Peer(writer(out))
    agent = Agent(peer, overrides or {})
    code = 0
    try:
        code = _run_bounded(_serve(agent))
    except KeyboardInterrupt:  # a signal before the loop's handlers were in place
        code = 130
    finally:
        engine = agent.engines.engine
        if engine is not None:
            engine.terminate()
    _finish(code)


async def _serve(agent: Agent) -> int:
    loop = asyncio.get_running_loop()
    stopping: asyncio.Future[str] = loop.create_future()
    budget: list[asyncio.Timeout] = []

    def stop(reason: str) -> None:
        if not stopping.done():
            stopping.set_result(reason)
        for timeout in budget:  # a signal during the shutdown: two seconds at most
            when = timeout.when()
            if when is not None:
                timeout.reschedule(min(when, loop.time() + SIGNAL_GRACE))

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, f"signal {sig.name}")
    reader = await open_stdin()
    reading = loop.create_task(agent.peer.serve(reader))
    reading.add_done_callback(lambda _: stop("eof"))
    reason = await stopping
    log.info("stopping (%s)", reason)
    engine = agent.engines.engine
    if engine is not None:
        try:
            async with asyncio.timeout(EOF_GRACE if reason == "eof" else SIGNAL_GRACE) as t:
                budget.append(t)
                await engine.shutdown()
        except TimeoutError:
            log.warning("engine shutdown incomplete after %s; stopping anyway", reason)
        except OSError as exc:
            log.warning("engine shutdown failed: %s", exc)
    agent.peer.close()
    return 0


def _run_bounded(main: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run`` without its unbounded waits: tasks that ignore cancellation and
    threads blocked in a read (stdin, the default executor) do not hold the process."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=0.5))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _finish(code: int) -> NoReturn:
    """End the process once everything was stopped explicitly (the interpreter's own exit
    would join worker threads, one of which may be blocked in a read for good)."""
    atexit._run_exitfuncs()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)

