"""kill_shell: stop a background shell and everything it started."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools import _shells
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


class Args(msgspec.Struct, kw_only=True):
    """kill_shell arguments; checked in ``prepare``."""

    id: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Check that an id was given; whether it exists is decided at execute time."""
    shell_id = str(args.id).strip() if isinstance(args.id, (str, int)) else ""
    header = f"⚙ kill_shell: {shell_id or '(no id)'}"
    if not shell_id:
        return PreparedCall(header=header, error='Error: missing id (e.g. id="bash_1")')
    return PreparedCall(header=header, data=shell_id)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """Terminate the shell's process group (SIGTERM, then SIGKILL) and report."""
    shell_id: str = call.data
    shells = _shells.registry(ctx.env)
    shell = shells.get(shell_id)
    if shell is None:
        return ToolOutput(shells.unknown_id_error(shell_id), is_error=True)
    if shell.proc.exited.is_set():
        await shells.kill(shell)  # only waits for the exit bookkeeping to finish
    if shell.status != "running":
        return ToolOutput(
            f"Background shell {shell_id} had already exited (status: {shell.describe()}); "
            "nothing to kill.",
            summary="already exited",
        )
    if await shells.kill(shell):
        return ToolOutput(
            f"Killed background shell {shell_id}. Output produced before the kill remains "
            f'readable via bash_output(id="{shell_id}").',
            summary="killed",
        )
    return ToolOutput(
        f"SIGKILL sent to background shell {shell_id}, but it has not exited yet; check "
        f'its status with bash_output(id="{shell_id}").',
        is_error=True,
        summary="kill pending",
    )
