"""Running a bash script in its own process group, with streamed output.

Shared by foreground bash and background shells. The script runs as
``bash /dev/fd/N`` in a new session (so it leads its own process group), with
stdin from /dev/null; N is an in-memory file (memfd) that exists on no
filesystem, so no script is ever left behind, whatever happens to the daemon.
Output arrives through an asyncio subprocess protocol in large chunks, decoded
incrementally as UTF-8 with replacement characters, and is handed to callbacks
as it comes. The process is waited on, never its pipes: a
grandchild left behind (``server &``) may hold a pipe open forever, so callers
stop reading when the leader exits and then end the whole group.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import logging
import os
import signal
import tempfile
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnstoned.sandbox import Sandbox

log = logging.getLogger(__name__)

TERM_GRACE = 0.5  # seconds between SIGTERM and SIGKILL to the group
DRAIN_TIMEOUT = 1.0  # how long to wait for pipes to close once the group is gone
REAP_TIMEOUT = 5.0
_PIPE_SIZE = 1 << 20  # fewer wake-ups for chatty commands; capped by pipe-max-size
_F_SETPIPE_SZ: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only

TextSink = Callable[[str], None]


def script_text(command: str, *, stop_on_error: bool, fd: int | None = None) -> str:
    """The script bash runs: ``pipefail`` always, ``errexit`` on request, then the command.

    With ``fd`` the script first closes the descriptor it was handed through
    (bash reads from its own copy), so the command's processes do not inherit it.
    """
    preamble = f"exec {fd}<&-\n" if fd is not None else ""
    preamble += "set -o pipefail\n" + ("set -e\n" if stop_on_error else "")
    return preamble + command + "\n"


def script_file(command: str, *, stop_on_error: bool) -> int:
    """The script in an anonymous file (memfd, else an unlinked temp file), read from its start."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        fd: int = memfd_create("turnstoned-bash", os.MFD_CLOEXEC)
    else:
        fd, name = tempfile.mkstemp(prefix="turnstoned-bash-", suffix=".sh")
        os.unlink(name)
    try:
        data = script_text(command, stop_on_error=stop_on_error, fd=fd)
        view = memoryview(data.encode("utf-8", errors="surrogateescape"))
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Protocol(asyncio.SubprocessProtocol):
    """Decodes stdout/stderr chunks as they arrive and records exit and EOF."""

    def __init__(self, on_stdout: TextSink, on_stderr: TextSink) -> None:
        self._sinks = {1: on_stdout, 2: on_stderr}
        self._decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in (1, 2)}
        self._open = {1, 2}
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()
        self.muted = False

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        text = self._decoders[fd].decode(raw)
        if text and not self.muted:
            self._sinks[fd](text)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd not in self._open:
            return
        self._open.discard(fd)
        tail = self._decoders[fd].decode(b"", final=True)
        if tail and not self.muted:
            self._sinks[fd](tail)
        if not self._open:
            self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


async def _wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds; True when it is set.

    Uses ``asyncio.wait`` rather than ``asyncio.timeout`` so it behaves inside
    cleanup code that runs after the calling task was cancelled.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return event.is_set()


class ScriptProcess:
    """A running script: its process group, exit and output-EOF events, cleanup."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol):
        self._transport = transport
        self._protocol = protocol
        self.pid: int = transport.get_pid()
        self._closed = False

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    @property
    def exited(self) -> asyncio.Event:
        return self._protocol.exited

    async def wait_exit(self, timeout: float | None) -> bool:
        return await _wait_event(self._protocol.exited, timeout)

    async def wait_output_closed(self, timeout: float | None) -> bool:
        return await _wait_event(self._protocol.output_closed, timeout)

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the whole group; False when no member is left."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            log.warning("cannot signal process group %d", self.pid)
            return False
        return True

    def group_alive(self) -> bool:
        return self.signal_group(0)

    def kill(self) -> None:
        """SIGKILL the whole group now."""
        self.signal_group(signal.SIGKILL)

    async def terminate(self, grace: float = TERM_GRACE) -> None:
        """SIGTERM the group, give it ``grace`` seconds, then SIGKILL what is left."""
        if not self.signal_group(signal.SIGTERM):
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        members = live_group_members(self.pid)
        if members is not None and not members:
            return
        while loop.time() < deadline:
            await asyncio.sleep(0.02)
            if members is None:
                if not self.group_alive():
                    return
                continue
            members = {pid for pid in members if _is_live_member(pid, self.pid)}
            # Known members gone: rescan once, something may have forked meanwhile.
            if not members and not (members := live_group_members(self.pid)):
                return
        self.kill()

    async def finish(self, drain_timeout: float = DRAIN_TIMEOUT) -> None:
        """End the group, let the pipes drain, reap the leader and release everything.

        Safe to call on every path; a cancellation arriving meanwhile falls back
        to an immediate SIGKILL before it propagates.
        """
        try:
            await self.terminate()
            await self.wait_output_closed(drain_timeout)
            await self.wait_exit(REAP_TIMEOUT)
        except asyncio.CancelledError:
            self.kill()
            raise
        finally:
            self.close()

    def close(self) -> None:
        """Stop delivering output and close the pipes."""
        if self._closed:
            return
        self._closed = True
        self._protocol.muted = True
        self._transport.close()


async def start_script(
    command: str,
    *,
    stop_on_error: bool,
    cwd: Path,
    env: Mapping[str, str],
    on_stdout: TextSink,
    on_stderr: TextSink,
    sandbox: Sandbox | None = None,
) -> ScriptProcess:
    """Start ``command`` as a bash script in a new session; raises OSError on spawn failure.

    With ``sandbox`` the child applies it before exec (``sandbox.preexec``; a failure ends it
    with 126) and gets its private TMPDIR. That disables CPython's vfork fast path: see
    bench/README.md for the cost.

    A cancellation while the spawn is under way waits for it to finish, then ends the whole
    group and propagates. (Left to asyncio, the cancelled spawn kills only the leader and then
    waits for its pipes, which a grandchild such as ``sleep`` holds open until it ends.)
    """
    script = script_file(command, stop_on_error=stop_on_error)
    loop = asyncio.get_running_loop()
    spawn = asyncio.ensure_future(loop.subprocess_exec(
        lambda: _Protocol(on_stdout, on_stderr),
        "bash",
        f"/dev/fd/{script}",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(cwd),
        env=dict(env) if sandbox is None else sandbox.env(env),
        start_new_session=True,
        pass_fds=(script,),
        preexec_fn=None if sandbox is None else sandbox.preexec,
    ))
    try:
        (transport, protocol), cancelled = await _through_cancel(spawn)
    finally:  # the child has its own copy (or none, when the spawn failed)
        os.close(script)
    proc = ScriptProcess(transport, protocol)
    if cancelled:
        proc.kill()
        proc.close()
        raise asyncio.CancelledError
    _enlarge_pipe(transport)
    return proc


async def _through_cancel(
    spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Protocol]],
) -> tuple[tuple[asyncio.SubprocessTransport, _Protocol], bool]:
    """``spawn``'s result, waited for even when the caller is cancelled meanwhile, and
    whether it was. A spawn that fails after a cancel raises the cancel."""
    cancelled = False
    while not spawn.done():
        try:
            await asyncio.wait({spawn})  # a cancel here leaves the spawn running
        except asyncio.CancelledError:
            cancelled = True
    if cancelled and (spawn.cancelled() or spawn.exception() is not None):
        raise asyncio.CancelledError
    return spawn.result(), cancelled


def _enlarge_pipe(transport: asyncio.SubprocessTransport) -> None:
    pipe = transport.get_pipe_transport(1)
    handle = pipe.get_extra_info("pipe") if pipe is not None else None
    if handle is None or _F_SETPIPE_SZ is None:
        return
    # ValueError: the pipe is already closed (a command that finished at once).
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(handle.fileno(), _F_SETPIPE_SZ, _PIPE_SIZE)


def _stat_fields(pid: int) -> list[str] | None:
    """state, ppid, pgrp, ... from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _is_live_member(pid: int, pgid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z" and fields[2] == str(pgid)


def live_group_members(pgid: int) -> set[int] | None:
    """Non-zombie processes of group ``pgid`` (Linux /proc), or None when /proc is absent.

    A signal to a group whose members are all zombies still succeeds, and an
    orphaned zombie lingers when init is slow to reap; counting zombies as alive
    would make every cleanup wait out its full grace period.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    if not os.path.exists("/proc/self/stat"):
        return None
    return {int(e) for e in entries if e.isdigit() and _is_live_member(int(e), pgid)}


class OutputCollector:
    """Keeps the first and last ``window`` chars of a stream, counting what falls between.

    Memory stays bounded however much a command prints; when nothing was
    dropped, ``text()`` is the whole stream.
    """

    def __init__(self, window: int) -> None:
        self.window = window
        self.total = 0
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if self._head_len < self.window:
            take = text[: self.window - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            text = text[len(take) :]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail and self._tail_len - len(self._tail[0]) >= self.window:
            self._tail_len -= len(self._tail.popleft())

    @property
    def dropped(self) -> int:
        return self.total - self._head_len - self._tail_len

    def text(self) -> str:
        """Head and tail joined (the dropped middle, if any, is simply absent)."""
        return "".join(self._head) + "".join(self._tail)


class LineSplitter:
    """Cuts a text stream into complete lines; a runaway partial line is cut at ``max_line``."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        data = self._pending + text
        lines = data.split("\n")
        self._pending = lines.pop()
        if len(self._pending) > self.max_line:
            lines.append(self._pending)
            self._pending = ""
        return lines

    def flush(self) -> str | None:
        rest, self._pending = self._pending, ""
        return rest or None
