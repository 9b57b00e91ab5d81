"""The bash tool: run a shell command in the session's working directory.

Foreground commands stream stdout to the editor while they run and return the
collected output; ``run_in_background`` starts a background shell instead (see
``_shells``). Output order for the model: all of stdout, then every stderr line
tagged ``[stderr] `` (a deterministic order; interleaving two pipes is racy
anyway). The editor's live stream carries both, in arrival order, with stderr
lines tagged the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from turnstoned import sandbox
from turnstoned.envscrub import scrub_env
from turnstoned.sandbox import Sandbox
from turnstoned.shell.blocklist import blocked_message, normalize_command
from turnstoned.tools import _shells
from turnstoned.tools._lenient import as_bool, as_int
from turnstoned.tools.base import (
    PreparedCall,
    ToolContext,
    ToolOutput,
    prepare_error,
    truncate_middle,
)
from turnstoned.tools.procs import LineSplitter, OutputCollector, ScriptProcess, start_script

log = logging.getLogger(__name__)

MIN_TIMEOUT, MAX_TIMEOUT = 1, 600
_STREAM_PENDING_MAX = 64 * 1024  # flush a newline-less stretch to the editor past this size
_STDERR_LINE_MAX = 64 * 1024

Outcome = Literal["exited", "timeout", "cancelled"]


class Args(msgspec.Struct, kw_only=True):
    """bash arguments; lenient types are coerced in ``prepare``."""

    command: Any = None
    timeout: Any = None
    stop_on_error: Any = None
    run_in_background: Any = None
    is_background: Any = None  # accepted alias of run_in_background
    escalate: Any = None
    reason: Any = None


@dataclass(slots=True, frozen=True)
class BashPlan:
    """What prepare decided, handed to execute."""

    command: str
    timeout: int
    stop_on_error: bool
    background: bool


def coerce_timeout(value: Any) -> int | None:
    """An int clamped to 1..600, or None when absent or not a number."""
    number = as_int(value)
    return None if number is None else max(MIN_TIMEOUT, min(MAX_TIMEOUT, number))


def _header(command: str, tag: str) -> str:
    lines = command.splitlines() or [""]
    header = f"⚙ bash{tag}: {lines[0]}"
    more = len(lines) - 1
    if more:
        header += f" … ({more} more line{'s' if more != 1 else ''})"
    return header


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Normalise and screen the command, resolve the timeout, build header and preview."""
    raw = args.command if isinstance(args.command, str) else ""
    command = normalize_command(raw).strip()
    if not command:
        return prepare_error("Error: empty command", header="⚙ bash: (empty command)")
    blocked = blocked_message(command)
    if blocked:
        return prepare_error(blocked, header=_header(command, ""))
    background = as_bool(args.run_in_background) or as_bool(args.is_background)
    explicit = coerce_timeout(args.timeout)
    timeout = explicit if explicit is not None else ctx.env.settings.timeout
    tag = " (background)" if background else (f" ({explicit}s)" if explicit is not None else "")
    plan = BashPlan(command, timeout, as_bool(args.stop_on_error), background)
    return PreparedCall(
        header=_header(command, tag),
        preview=command,
        needs_approval=True,
        approval_label="bash",
        data=plan,
        escalation=escalation(ctx, command, args) if as_bool(args.escalate) else None,
    )


DENIALS = "sandbox_denials"  # session state: command -> what the sandbox stopped


def escalation(ctx: ToolContext, command: str, args: Args) -> str:
    """What the user reads when the model asks to leave the sandbox: what the sandbox
    stopped when this command last ran in it, and the model's reason."""
    stopped = ctx.env.state.get(DENIALS, {}).get(command)
    reason = args.reason.strip() if isinstance(args.reason, str) else ""
    parts = [f"the sandbox stopped {stopped}" if stopped else "not run in the sandbox yet"]
    if reason:
        parts.append(f"the model says: {reason[:300]}")
    return "; ".join(parts)


def command_env(ctx: ToolContext) -> dict[str, str]:
    """The daemon's environment with secrets removed (operator passthrough honoured)."""
    return scrub_env(os.environ, passthrough=ctx.env.settings.env_passthrough)


def command_sandbox(call: PreparedCall, ctx: ToolContext) -> Sandbox | None:
    """The sandbox the approval mode put this call in (None: it runs outside); raises
    SandboxError when it cannot be prepared (the command then does not run)."""
    if call.sandbox != "sandboxed":
        return None
    return sandbox.prepare(sandbox.Profile(workspace=Path(ctx.env.workspace_root())))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """Run the command (foreground) or start a background shell."""
    plan: BashPlan = call.data
    try:
        box = command_sandbox(call, ctx)
    except sandbox.SandboxError as exc:
        return ToolOutput(f"Error: the sandbox could not be prepared ({exc}); the command did "
                          "not run. Run it with escalate and a reason to ask the user to run "
                          "it outside the sandbox.", is_error=True, effect_status="none")
    if plan.background:
        return await _shells.start_shell(
            ctx, plan.command, stop_on_error=plan.stop_on_error, env=command_env(ctx),
            sandbox=box)
    return await _run_foreground(plan, ctx, box)


class _ForegroundOutput:
    """Streams output to the editor as it comes and keeps a bounded copy for the model."""

    def __init__(self, ctx: ToolContext, window: int) -> None:
        self._sink = ctx.emit_output
        self.stdout = OutputCollector(window)
        self.stderr = OutputCollector(window)
        self._pending = ""
        self._stderr_lines = LineSplitter(_STDERR_LINE_MAX)

    def _emit(self, chunk: str) -> None:
        try:
            self._sink(chunk)
        except Exception:  # the live stream is best effort; the result still gets everything
            log.exception("streaming bash output failed")

    def on_stdout(self, text: str) -> None:
        self.stdout.add(text)
        data = self._pending + text
        cut = data.rfind("\n")
        if cut < 0:
            self._pending = data
            if len(data) > _STREAM_PENDING_MAX:
                self._emit(data)
                self._pending = ""
            return
        self._emit(data[: cut + 1])
        self._pending = data[cut + 1 :]

    def on_stderr(self, text: str) -> None:
        self._tag_stderr(self._stderr_lines.feed(text))

    def _tag_stderr(self, lines: list[str]) -> None:
        if lines:
            tagged = "".join(f"[stderr] {line}\n" for line in lines)
            self.stderr.add(tagged)
            self._emit(tagged)

    def flush(self) -> None:
        """Deliver what is left once the process is done."""
        if self._pending:
            self._emit(self._pending)
            self._pending = ""
        rest = self._stderr_lines.flush()
        if rest is not None:
            self._tag_stderr([rest])

    def render(self, cap: int) -> str:
        """stdout, then tagged stderr; stripped and cut to ``cap`` keeping head and tail."""
        text = self.stdout.text()
        if self.stderr.total:
            if text and not text.endswith("\n"):
                text += "\n"
            text += self.stderr.text()
        text = text.strip()
        # Memory was bounded while streaming: the notice counts what was dropped.
        dropped = self.stdout.dropped + self.stderr.dropped
        return truncate_middle(text, cap, total=len(text) + dropped)


async def _wait_leader(proc: ScriptProcess, timeout: float, cancel: asyncio.Event) -> Outcome:
    """Wait for the script's own process (never its pipes) to exit, the deadline or a cancel."""
    exit_waiter = asyncio.ensure_future(proc.exited.wait())
    cancel_waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait(
            {exit_waiter, cancel_waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        exit_waiter.cancel()
        cancel_waiter.cancel()
    if proc.exited.is_set():
        return "exited"
    return "cancelled" if cancel.is_set() else "timeout"


async def _run_foreground(plan: BashPlan, ctx: ToolContext, box: Sandbox | None) -> ToolOutput:
    output = _ForegroundOutput(ctx, ctx.env.output_cap())
    try:
        proc = await start_script(
            plan.command,
            stop_on_error=plan.stop_on_error,
            cwd=ctx.env.cwd,
            env=command_env(ctx),
            on_stdout=output.on_stdout,
            on_stderr=output.on_stderr,
            sandbox=box,
        )
    except (OSError, ValueError) as exc:
        return ToolOutput(f"Error executing command: {exc}", is_error=True, summary="spawn failed")
    try:
        outcome = await _wait_leader(proc, plan.timeout, ctx.cancel)
        # Whatever happened, nothing of this command's group may outlive the call.
        await proc.finish()
    except asyncio.CancelledError:
        await proc.finish()
        raise
    output.flush()
    result = _result(plan, outcome, proc.returncode, output.render(ctx.env.output_cap()))
    if box is not None and outcome == "exited" and proc.returncode:
        stopped = box.explain(proc.returncode, result.text())
        if stopped:
            ctx.env.state.setdefault(DENIALS, {})[plan.command] = stopped
            result.content = f"{result.text()}\n{sandbox_note(stopped)}"
    return result


def sandbox_note(stopped: str) -> str:
    """What the model reads under a sandboxed command that the sandbox probably stopped."""
    return (f"[sandbox] This command ran in the sandbox (it writes only the workspace and "
            f"$TMPDIR and has no network), which probably stopped it: {stopped}. If it needs "
            "that, call bash again with the same command, escalate: true and a reason; the "
            "user is asked to let it run outside the sandbox.")


def _result(plan: BashPlan, outcome: Outcome, code: int | None, body: str) -> ToolOutput:
    if outcome != "exited":
        if outcome == "timeout":
            head = (
                f"Command timed out after {plan.timeout}s. Outcome UNKNOWN — the call was "
                "stopped at its deadline and may have done part of its work; check its "
                "effects before running it again."
            )
        else:
            head = (
                "Cancelled by user. Outcome UNKNOWN — the command was stopped while it was "
                "running and may already have had effects. Do not assume it did not run."
            )
        tail = f"Partial output:\n{body}" if body else "(no output before it was stopped)"
        return ToolOutput(
            f"{head}\n\n{tail}", is_error=True, effect_status="unknown", summary=outcome
        )
    rc = code if code is not None else -1
    text = body or "(no output)"
    if rc != 0:
        text += f"\n[exit code: {rc}]"
    is_error = rc != 0 if plan.stop_on_error else rc not in (0, 1)
    return ToolOutput(text, is_error=is_error, summary=f"exit {rc}")
