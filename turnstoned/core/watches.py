"""The watch runner: polls due watches inside the daemon and hands final polls to sessions.

It sleeps until the next watch is due (or ``TICK`` seconds, since another
daemon on the same database may add rows), claims each due row in the store
(so a poll runs once however many daemons share the database), and runs at most
``MAX_CONCURRENT`` polls at a time. A poll runs the command like bash does: in
the session's working directory, with a scrubbed environment, in its own
process group that is killed on timeout, cancellation and daemon exit; the
blocklist is checked again before every poll.

A poll is final when its condition held (or failed to evaluate, which the
model must hear about), when the output changed (no condition), or when it was
the last allowed poll. Only final polls are delivered: ``WatchDesk.deliver`` puts
the report into the session as model input and tells the editor; non-final
polls only update the row.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnstoned import protocol as p
from turnstoned import sandbox
from turnstoned.condition import ConditionError, compile_condition, evaluate
from turnstoned.core import wire
from turnstoned.core.errors import EngineError
from turnstoned.core.results import GuardSettings, guard_output
from turnstoned.core.sessions import mode_of
from turnstoned.envscrub import scrub_env
from turnstoned.protocol import ErrorCode
from turnstoned.sandbox import Sandbox, SandboxError
from turnstoned.shell.blocklist import blocked_message
from turnstoned.store.watches import Watch, WatchStore
from turnstoned.tools.base import ToolOutput, truncate_middle
from turnstoned.tools.procs import OutputCollector, ScriptProcess, start_script
from turnstoned.tools.watch import format_duration

if TYPE_CHECKING:
    from turnstoned.core.sessions import Sessions

log = logging.getLogger(__name__)

TICK = 15.0  # seconds between looks at the database when nothing is due sooner
MAX_CONCURRENT = 4
OUTPUT_CAP = 65_536  # characters of a poll's output kept and judged
DELIVERED_CAP = 16_000  # characters of output the model reads in the report
CLOSE_GRACE = 5.0
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Report:
    """A final poll, as the session receives it."""

    text: str  # what the model reads
    data: dict[str, Any]  # what the editor's ``session/notice`` carries besides the text


Deliver = Callable[[Watch, Report], None]


class WatchRunner:
    def __init__(self, watches: WatchStore, *, deliver: Deliver,
                 cwd_of: Callable[[str], Path | None], timeout: float,
                 env: Callable[[], Mapping[str, str]],
                 sandbox_of: Callable[[str], Sandbox | None] = lambda session_id: None) -> None:
        self.watches = watches
        self.deliver = deliver
        self.cwd_of = cwd_of  # a session's working directory; None when it is gone or closed
        self.sandbox_of = sandbox_of  # the sandbox a session's polls run in (None: none)
        self.timeout = timeout
        self.env = env
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._polls: dict[str, asyncio.Task[None]] = {}
        self._procs: set[ScriptProcess] = set()

    def start(self) -> None:
        """Begin polling; call on the running event loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="watch-runner")

    def poke(self) -> None:
        """Look at the database now (a watch was added or ended)."""
        self._wake.set()

    async def close(self) -> None:
        """Stop polling; polls in flight are cancelled and their commands killed."""
        tasks = [t for t in (self._task, *self._polls.values()) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_GRACE)
        self._task = None

    def kill_now(self) -> None:
        """At daemon exit, outside any event loop: kill the commands of polls in flight."""
        for proc in list(self._procs):
            proc.kill()

    # ----------------------------------------------------------- the loop

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                delay = self._start_due(time.time())
            except Exception:  # the database failed: the loop must survive and retry
                log.exception("watch runner: reading due watches failed")
                delay = TICK
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass

    def _start_due(self, now: float) -> float:
        """Start the polls that are due; how long to sleep before looking again."""
        waiting = False
        for watch in self.watches.due(now):
            if watch.id in self._polls or len(self._polls) >= MAX_CONCURRENT:
                waiting = True  # a finishing poll wakes the loop
                continue
            if not self.watches.claim(watch, now + watch.interval):
                continue  # another daemon took it
            task = asyncio.get_running_loop().create_task(self._poll(watch),
                                                          name=f"watch-{watch.name}")
            self._polls[watch.id] = task
            task.add_done_callback(functools.partial(self._finished, watch.id))
        if waiting:
            return TICK
        upcoming = self.watches.next_due()
        return TICK if upcoming is None else min(max(upcoming - time.time(), 0.0), TICK)

    def _finished(self, watch_id: str, _: asyncio.Task[None]) -> None:
        self._polls.pop(watch_id, None)
        self.poke()

    # ----------------------------------------------------------- one poll

    async def _poll(self, watch: Watch) -> None:
        try:
            cwd = self.cwd_of(watch.session_id)
            if cwd is None:
                self.watches.deactivate(watch.id, "its session is closed")
                return
            blocked = blocked_message(watch.command)
            if blocked:
                self.watches.deactivate(watch.id, blocked)
                return
            try:
                box = self.sandbox_of(watch.session_id)
            except SandboxError as exc:
                self.watches.deactivate(watch.id, f"the sandbox could not be prepared: {exc}")
                return
            output, code = await self._run(watch.command, cwd, box)
            self._settle(watch, output, code)
        except asyncio.CancelledError:
            raise
        except Exception:  # one poll's failure must not stop the runner
            log.exception("watch %s: poll failed", watch.id)

    async def _run(self, command: str, cwd: Path,
                   box: Sandbox | None = None) -> tuple[str, int]:
        """The command's output (stdout, then ``[stderr]`` and stderr) and exit code."""
        out, err = OutputCollector(OUTPUT_CAP), OutputCollector(OUTPUT_CAP)
        try:
            proc = await start_script(command, stop_on_error=False, cwd=cwd, env=self.env(),
                                      on_stdout=out.add, on_stderr=err.add, sandbox=box)
        except (OSError, ValueError) as exc:
            return f"[command failed: {exc}]", -1
        self._procs.add(proc)
        try:
            exited = await proc.wait_exit(self.timeout)
        finally:
            await proc.finish()  # the whole group, on every path (a cancel kills it at once)
            self._procs.discard(proc)
        if not exited:
            return f"[command timed out after {self.timeout:g}s]", -1
        return compose_output(out, err), proc.returncode if proc.returncode is not None else -1

    def _settle(self, watch: Watch, output: str, code: int) -> None:
        count = watch.poll_count + 1
        reason = judge(watch, output, code)
        if reason is None and count >= watch.max_polls:
            reason = "max polls reached"
        stored = self.watches.record(watch.id, poll_count=count, output=output, exit_code=code,
                                     polled_at=time.time(), ended=reason)
        if stored and reason is not None:
            self.deliver(watch, report(watch, count, output, code, reason))


def compose_output(out: OutputCollector, err: OutputCollector) -> str:
    stdout, stderr = out.text().rstrip("\n"), err.text().rstrip("\n")
    text = f"{stdout}\n[stderr]\n{stderr}" if stdout and stderr else stdout or stderr
    total = out.total + err.total
    if total > OUTPUT_CAP or len(text) > OUTPUT_CAP:
        text = text[:OUTPUT_CAP] + f"\n[truncated at {OUTPUT_CAP} bytes]"
    return text


def judge(watch: Watch, output: str, code: int) -> str | None:
    """Why this poll fires, or None when it does not."""
    if not watch.stop_on:
        if watch.poll_count == 0:
            return None  # the first poll is the baseline
        return "output changed" if output != watch.last_output else None
    try:
        held = evaluate(compile_condition(watch.stop_on), output, code, watch.last_output)
    except ConditionError as exc:
        return f"condition error: {exc}"
    return f"condition met: {watch.stop_on}" if held else None


def report(watch: Watch, count: int, output: str, code: int, reason: str) -> Report:
    """The final poll as the model reads it, and the editor's notice data."""
    elapsed = format_duration(max(time.time() - watch.created_at, 0))
    mode = f"[condition: {watch.stop_on}]" if watch.stop_on else "[mode: fire on output change]"
    shown = truncate_middle(output, DELIVERED_CAP) or "(no output)"
    text = (f'[Watch "{watch.name}" — poll #{count}/{watch.max_polls}, {elapsed} elapsed]\n'
            f"{mode}\n\n$ {watch.command}\n{shown}\n\n[{reason} — watch auto-cancelled]")
    data = {"watchId": watch.id, "name": watch.name, "command": watch.command,
            "pollCount": count, "maxPolls": watch.max_polls, "exitCode": code,
            "reason": reason}
    return Report(_CONTROL.sub("", text), data)


class WatchDesk:
    """The daemon's side of watches: the runner, reports into sessions, the editor's requests."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.store = WatchStore(sessions.store)
        tools = sessions.config.tools
        self.runner = WatchRunner(
            self.store, deliver=self.deliver, cwd_of=self.cwd_of, timeout=tools.timeout,
            env=lambda: scrub_env(os.environ, passthrough=tools.env_passthrough),
            sandbox_of=self.sandbox_of)

    def sandbox_of(self, session_id: str) -> Sandbox | None:
        """A watch polls as bash runs in its session's mode: in the sandbox in auto (when
        there is one), outside it once approved in the other modes."""
        live = self.sessions.live.get(session_id)
        row = live.row if live is not None else self.sessions.store.get_session(session_id)
        if row is None or not sandbox.status().available:
            return None
        mode = live.policy.mode if live is not None else mode_of(row, self.sessions.config)
        if mode != "auto":
            return None
        workspace = live.env.workspace_root() if live is not None else os.path.realpath(
            row.workspace or row.cwd)
        return sandbox.prepare(sandbox.Profile(workspace=Path(workspace)))

    def cwd_of(self, session_id: str) -> Path | None:
        live = self.sessions.live.get(session_id)
        if live is not None:
            return live.env.cwd
        row = self.sessions.store.get_session(session_id)
        return None if row is None or row.closed else Path(row.cwd)

    def deliver(self, watch: Watch, found: Report) -> None:
        """Tell the editor, queue the report for the model, and wake the session if idle
        (loading it if this daemon has not yet)."""
        row = self.sessions.store.get_session(watch.session_id)
        if row is None or row.closed:
            return
        session = self.sessions.get(watch.session_id)
        self.sessions.notice(session, "watch", self._guarded(watch, found.text), found.data,
                           keep=True)
        self.sessions.wake(session)

    def _guarded(self, watch: Watch, text: str) -> str:
        """The report as the model may read it: command output is untrusted like any tool
        result, so credentials are redacted and injection attempts flagged."""
        tools = self.sessions.config.tools
        out, advisory = guard_output(f'watch "{watch.name}"', ToolOutput(text),
                                     GuardSettings(tools.output_guard, tools.redact_secrets))
        return out.text() + (f"\n\n{advisory.text}" if advisory is not None else "")

    def session_closed(self, session_id: str) -> None:
        if self.store.deactivate_session(session_id, "its session was closed"):
            self.runner.poke()

    def list(self, session_id: str | None) -> list[p.WatchInfo]:
        if session_id is not None:
            self.sessions.row(session_id)
        return [wire.watch_info(w) for w in self.store.active(session_id)]

    def cancel(self, session_id: str, name: str) -> p.WatchCancelResult:
        self.sessions.row(session_id)
        found = self.store.find(session_id, name)
        if found is None:
            raise EngineError(ErrorCode.WATCH_NOT_FOUND, f"session {session_id!r} has no watch "
                                                         f"named {name!r}")
        cancelled = found.active and self.store.deactivate(found.id, "cancelled by the user")
        if cancelled:
            self.runner.poke()
        return p.WatchCancelResult(watch=wire.watch_info(self.store.get(found.id) or found),
                                   cancelled=cancelled)

