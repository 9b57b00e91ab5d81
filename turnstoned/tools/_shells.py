"""Per-session background shells: start, buffer, kill, exit notices, close.

The registry lives in ``env.state["shells"]``. Ids ``bash_1``, ``bash_2``, …
are never reused within a session. Each shell keeps a rolling buffer of its
output lines (stdout and ``[stderr] ``-tagged stderr in arrival order) and a
read cursor over the logical line stream, so ``bash_output`` can return just
what is new. A task agent runs in its own SessionEnv, so its shells are
invisible to the parent and are closed with it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from turnstoned.tools.base import SessionEnv, ToolContext, ToolOutput
from turnstoned.tools.procs import ScriptProcess, start_script

if TYPE_CHECKING:
    from turnstoned.sandbox import Sandbox

log = logging.getLogger(__name__)

BUFFER_CHARS = 200_000
EXITED_KEPT = 32
LINE_CLIP = 10_000  # longer lines keep their start and say how much was clipped
KILL_JOIN = 3.0  # seconds kill_shell/close_all wait for a shell to be reaped


@dataclass(slots=True)
class _Partial:
    text: str = ""
    clipped: int = 0


class ShellBuffer:
    """A rolling window over a shell's output lines with a read cursor."""

    def __init__(self, limit: int = BUFFER_CHARS) -> None:
        self.limit = limit
        self.lines: deque[str] = deque()
        self.base = 0  # logical index of lines[0]
        self.count = 0  # lines ever appended
        self.cursor = 0  # first logical line not yet read
        self._chars = 0
        self._clipped: deque[int] = deque()  # logical indices of clipped lines
        self._partials = {"": _Partial(), "[stderr] ": _Partial()}

    def feed(self, text: str, prefix: str = "") -> None:
        """Add a chunk of one stream; complete lines enter the buffer."""
        partial = self._partials[prefix]
        pieces = text.split("\n")
        for index, piece in enumerate(pieces):
            if index:
                self._complete(prefix)
            room = max(0, LINE_CLIP - len(partial.text))
            if len(piece) > room:
                partial.clipped += len(piece) - room
                piece = piece[:room]
            partial.text += piece

    def flush(self) -> None:
        """End of output: unterminated last lines enter the buffer too."""
        for prefix, partial in self._partials.items():
            if partial.text or partial.clipped:
                self._complete(prefix)

    def _complete(self, prefix: str) -> None:
        partial = self._partials[prefix]
        line = prefix + partial.text
        if partial.clipped:
            line += f" … [{partial.clipped} more chars clipped]"
            self._clipped.append(self.count)
        partial.text, partial.clipped = "", 0
        self.lines.append(line)
        self.count += 1
        self._chars += len(line) + 1
        while self._chars > self.limit and len(self.lines) > 1:
            self._chars -= len(self.lines.popleft()) + 1
            self.base += 1
        while self._clipped and self._clipped[0] < self.base:
            self._clipped.popleft()

    def unread(self) -> int:
        """Lines still readable that no read has returned yet."""
        return self.count - max(self.cursor, self.base)

    def snapshot(self) -> tuple[int, list[str], int, int]:
        """(lines dropped before they were read, new lines, clipped among them, end index)."""
        start = max(self.cursor, self.base)
        new = list(itertools.islice(self.lines, start - self.base, None))
        clipped = sum(1 for i in self._clipped if i >= start)
        return start - self.cursor, new, clipped, self.count


@dataclass(eq=False)
class Shell:
    """One background shell and what is known about it."""

    id: str
    command: str
    proc: ScriptProcess
    buffer: ShellBuffer
    status: str = "running"  # running | completed | killed
    exit_code: int | None = None
    kill_requested: bool = False
    quiet: bool = False  # no exit notice (killed, or the session is closing)
    watcher: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # Parallel bash_output calls on one shell must not return the same lines twice.
    read_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def describe(self) -> str:
        """``running`` or ``completed, exit code 0`` style status."""
        if self.status == "running":
            return "running"
        code = "" if self.exit_code is None else f", exit code {self.exit_code}"
        return f"{self.status}{code}"

    def first_line(self, width: int = 80) -> str:
        lines = self.command.splitlines()
        return (lines[0] if lines else "")[:width]


class ShellRegistry:
    """The background shells of one session."""

    def __init__(self, env: SessionEnv) -> None:
        self.env = env
        self.shells: dict[str, Shell] = {}
        self._ids = itertools.count(1)
        self._exited: deque[str] = deque()

    def get(self, shell_id: str) -> Shell | None:
        return self.shells.get(shell_id)

    def running(self) -> list[Shell]:
        return [s for s in self.shells.values() if s.status == "running"]

    def unknown_id_error(self, shell_id: str) -> str:
        """The error text for an id this session does not know."""
        if not self.shells:
            return f"Error: No background shell with id '{shell_id}'. No background shells exist."
        known = ", ".join(f"{s.id} ({s.describe()})" for s in self.shells.values())
        return f"Error: No background shell with id '{shell_id}'. Known shells: {known}."

    def add(self, command: str, proc: ScriptProcess, buffer: ShellBuffer) -> Shell:
        shell = Shell(f"bash_{next(self._ids)}", command, proc, buffer)
        self.shells[shell.id] = shell
        shell.watcher = asyncio.get_running_loop().create_task(
            self._watch(shell), name=f"turnstoned-shell-{shell.id}"
        )
        return shell

    async def _watch(self, shell: Shell) -> None:
        """Wait for the leader to exit, end its group, record the exit, announce it."""
        try:
            await shell.proc.exited.wait()
            await shell.proc.finish()
        finally:
            shell.proc.close()
            shell.buffer.flush()
            shell.exit_code = shell.proc.returncode
            shell.status = "killed" if shell.kill_requested else "completed"
            self._exited.append(shell.id)
            self._prune()
            shell.done.set()
        if not shell.quiet and not shell.kill_requested:
            self._announce(shell)

    def _prune(self) -> None:
        while len(self._exited) > EXITED_KEPT:
            self.shells.pop(self._exited.popleft(), None)

    def _announce(self, shell: Shell) -> None:
        if self.env.kind == "task":
            return  # a task agent's shells are reaped with it; it polls instead
        unread = shell.buffer.unread()
        text = (
            f"Background shell {shell.id} ({shell.first_line()}) exited with code "
            f"{shell.exit_code} — {unread} unread line(s); use "
            f'bash_output(id="{shell.id}") to read them.'
        )
        data = {"id": shell.id, "exitCode": shell.exit_code, "unreadLines": unread}
        try:
            self.env.notice("backgroundShell/exited", text, data)
        except Exception:  # a notice sink failing must not break the shell's bookkeeping
            log.exception("background shell exit notice failed")

    async def kill(self, shell: Shell, *, quiet: bool = False) -> bool:
        """End the shell's whole group; True once the shell has been reaped."""
        if shell.status != "running":
            return True
        if shell.proc.exited.is_set():
            return await _wait_done(shell, KILL_JOIN)  # exiting on its own: not a kill
        shell.kill_requested = True
        shell.quiet = shell.quiet or quiet
        await shell.proc.terminate()
        return await _wait_done(shell, KILL_JOIN)

    async def close_all(self) -> None:
        """Kill every running shell without notices (the session is closing)."""
        shells = self.running()
        for shell in shells:
            shell.quiet = True
        await asyncio.gather(*(self.kill(s, quiet=True) for s in shells))
        for shell in shells:
            if shell.watcher is not None and not shell.watcher.done():
                shell.proc.kill()
                shell.watcher.cancel()
        watchers = [s.watcher for s in shells if s.watcher is not None]
        if watchers:
            await asyncio.wait(watchers, timeout=KILL_JOIN)


async def _wait_done(shell: Shell, timeout: float) -> bool:
    if shell.done.is_set():
        return True
    waiter = asyncio.ensure_future(shell.done.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return shell.done.is_set()


def registry(env: SessionEnv) -> ShellRegistry:
    """The session's shell registry, created on first use."""
    found = env.state.get("shells")
    if isinstance(found, ShellRegistry):
        return found
    created = ShellRegistry(env)
    env.state["shells"] = created
    env.on_close(created.close_all, lambda: kill_all_now(env))
    return created


async def close_all(env: SessionEnv) -> None:
    """Kill every background shell of the session (called when the session closes)."""
    found = env.state.get("shells")
    if isinstance(found, ShellRegistry):
        await found.close_all()


def kill_all_now(env: SessionEnv) -> None:
    """SIGKILL every running shell of the session at once; usable outside an event loop.

    The last resort at daemon exit: no waiting, no notices.
    """
    found = env.state.get("shells")
    if not isinstance(found, ShellRegistry):
        return
    for shell in found.running():
        shell.quiet = True
        shell.kill_requested = True
        shell.proc.kill()


async def start_shell(
    ctx: ToolContext, command: str, *, stop_on_error: bool, env: Mapping[str, str],
    sandbox: Sandbox | None = None,
) -> ToolOutput:
    """Start ``command`` in the background and return its handle at once."""
    shells = registry(ctx.env)
    running = shells.running()
    cap = ctx.env.settings.max_background_shells
    if len(running) >= cap:
        names = ", ".join(s.id for s in running)
        return ToolOutput(
            f"Background shell limit reached ({cap} running). In your scope: {names} — "
            "stop one with kill_shell(id=...) or wait for one to exit, then retry.",
            is_error=True,
            summary="shell limit reached",
        )
    buffer = ShellBuffer()
    try:
        proc = await start_script(
            command,
            stop_on_error=stop_on_error,
            cwd=ctx.env.cwd,
            env=env,
            on_stdout=buffer.feed,
            on_stderr=lambda text: buffer.feed(text, "[stderr] "),
            sandbox=sandbox,
        )
    except (OSError, ValueError) as exc:
        return ToolOutput(f"Error executing command: {exc}", is_error=True, summary="spawn failed")
    shell = shells.add(command, proc, buffer)
    return ToolOutput(_started_text(shell, ctx.env.kind), summary=f"{shell.id} started")


def _started_text(shell: Shell, kind: str) -> str:
    text = (
        f"Started background shell {shell.id} (pid {shell.proc.pid}). Read new output with "
        f'bash_output(id="{shell.id}"); stop it with kill_shell(id="{shell.id}"). '
    )
    if kind == "task":
        return text + (
            "It belongs to this task agent and is terminated when the agent finishes."
        )
    return text + "It runs until it exits or is killed; a system notice will announce its exit."
