"""A watchdog that ends every child of the daemon once the daemon is gone, however it died.

The daemon cleans up after itself when it shuts down, but kill -9 (or a crash,
or a signal it does not handle) gives it no chance: its shells, searches and
MCP servers would keep running. So at startup it spawns this module as a tiny
separate process (``python -I -S watchdog.py``: stdlib only, nothing from the
project or the working directory is imported) that holds the read end of a
pipe. The daemon never writes to it; when the daemon dies for any reason the
kernel closes its end and the watchdog's read returns EOF.

Which processes are the daemon's? The daemon puts a random token in its
environment (``TURNSTONED_OWNER``) before starting anything, and every child
inherits it through the scrubbed environment; a process that detaches itself
(``setsid``, a double fork) keeps it. On EOF the watchdog collects the
processes carrying the token, everything in their process groups and sessions
(covering members that cleared their environment), and all their descendants,
and ends them: SIGTERM, a short grace, then SIGSTOP rounds until no new
process appears and SIGKILL for all. Each signal goes through a pidfd opened
and checked against the scanned start time, so a recycled pid is never hit.

Why not PR_SET_PDEATHSIG: it fires when the spawning *thread* exits (asyncio
spawns from worker threads too), reaches only the direct child and not its
group or escapees, and cannot be set for the processes the MCP SDK spawns.

What escapes: a process that changed its environment (``env -i``), left its
group and session, and was re-parented away before the daemon died; or one
running as another user. Temp scripts do not exist on disk (bash reads them
from an in-memory file), so none can be left behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

ENV_NAME = "TURNSTONED_OWNER"
TERM_GRACE = 1.0
_STOP_ROUNDS = 20
_POLL = 0.02


def start() -> subprocess.Popen[bytes] | None:
    """Spawn the watchdog for this process and tag the environment children inherit."""
    if not sys.platform.startswith("linux"):
        return None
    token = os.urandom(16).hex()
    read_end, write_end = os.pipe()  # both close-on-exec: no child holds the daemon's end
    try:
        # The daemon's group and session are the editor's too: the watchdog never
        # expands into them.
        foreign = f"{os.getpgrp()},{os.getsid(0)}"
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), token, foreign],
            stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={}, cwd="/", start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        logging.getLogger(__name__).warning("no watchdog; children may outlive a crash: %s", exc)
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    # Open for the daemon's whole life; the kernel closes it when the daemon ends.
    _running.append((proc, write_end))
    os.environ[ENV_NAME] = token
    return proc


_running: list[tuple[subprocess.Popen[bytes], int]] = []


# ---------------------------------------------------------------- the watchdog


@dataclass(frozen=True, slots=True)
class _Proc:
    ppid: int
    pgrp: int
    sid: int
    started: int  # clock ticks after boot: with the pid, a process's identity


def _stat(pid: int) -> _Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return _Proc(int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))


def _tagged(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in handle.read().split(b"\0")
    except OSError:
        return False


class _Sweep:
    """Finds and ends the daemon's processes."""

    def __init__(self, token: str, foreign: set[int]) -> None:
        self.marker = f"{ENV_NAME}={token}".encode()
        self.foreign = foreign | {os.getpgid(0), os.getsid(0)}
        self.spared = {os.getpid(), 1}
        self._tags: dict[tuple[int, int], bool] = {}

    def targets(self) -> dict[int, _Proc]:
        """Tagged processes, their groups and sessions, and all their descendants."""
        table = {int(e): p for e in os.listdir("/proc") if e.isdigit() and (p := _stat(int(e)))}
        ours = {pid for pid, p in table.items() if self._is_tagged(pid, p)}
        ids = {i for pid in ours for i in (table[pid].pgrp, table[pid].sid)} - self.foreign
        ours |= {pid for pid, p in table.items() if p.pgrp in ids or p.sid in ids}
        while True:
            more = {pid for pid, p in table.items() if p.ppid in ours} - ours
            if not more:
                break
            ours |= more
        return {pid: table[pid] for pid in ours - self.spared}

    def _is_tagged(self, pid: int, proc: _Proc) -> bool:
        key = (pid, proc.started)
        if key not in self._tags:
            self._tags[key] = _tagged(pid, self.marker)
        return self._tags[key]

    def run(self) -> None:
        found = self.targets()
        if not found:
            return
        for pid, proc in found.items():
            _signal(pid, proc, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE
        while found and time.monotonic() < deadline:
            time.sleep(_POLL)
            found = {pid: p for pid, p in found.items() if _same(pid, p)}
        # Freeze what is left (and whatever it forks meanwhile), then kill it all.
        stopped: dict[int, _Proc] = {}
        for _ in range(_STOP_ROUNDS):
            fresh = {pid: p for pid, p in self.targets().items() if pid not in stopped}
            if not fresh:
                break
            for pid, proc in fresh.items():
                _signal(pid, proc, signal.SIGSTOP)
            stopped |= fresh
        for pid, proc in stopped.items():
            _signal(pid, proc, signal.SIGKILL)


def _same(pid: int, proc: _Proc) -> bool:
    """True while ``pid`` is still the live process that was scanned as ``proc``."""
    now = _stat(pid)
    return now is not None and now.started == proc.started


def _signal(pid: int, proc: _Proc, sig: int) -> None:
    """Send ``sig`` to ``pid`` only if it is still the process that was scanned."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfds (Linux < 5.3): check, then signal by pid
        if _same(pid, proc):
            _quietly(os.kill, pid, sig)
        return
    try:
        # Checked after the pidfd is open: the pidfd then names this very process.
        if _same(pid, proc):
            _quietly(signal.pidfd_send_signal, fd, sig)
    finally:
        os.close(fd)


def _quietly(send: Callable[[int, int], None], target: int, sig: int) -> None:
    try:
        send(target, sig)
    except OSError:
        pass  # it has just gone


def main(argv: list[str]) -> int:
    """Wait for the daemon to go (EOF on stdin), then end its processes."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    token, foreign = argv[1], {int(i) for i in argv[2].split(",")}
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    _Sweep(token, foreign).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
