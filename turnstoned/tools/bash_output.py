"""bash_output: read what a background shell printed since the last read.

An optional ``filter`` regex (search semantics, per line) selects lines; the
read consumes every new line either way. A filter that is a plain literal, or
an alternation of literals, runs in-process (it cannot backtrack). Any other
pattern runs in a short-lived ``python -I -S`` child killed after 2 s: CPython's
``re`` holds the GIL while matching, so a catastrophic pattern in a thread would
freeze the whole daemon, and such a thread could not be stopped. Bounding line
length does not bound backtracking either (``(a+)+$`` explodes on 30 chars).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned.envscrub import scrub_env
from turnstoned.tools import _shells
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, truncate_middle

FILTER_MAX_CHARS = 512
FILTER_LINE_WINDOW = 4096  # only this much of each line is visible to the filter
FILTER_TIMEOUT = 2.0
_META = set(".^$*+?{}[]\\|()")
_CHILD = (
    "import json,re,sys\n"
    "p,ls=json.loads(sys.stdin.read())\n"
    "r=re.compile(p)\n"
    "sys.stdout.write(json.dumps([i for i,l in enumerate(ls) if r.search(l)]))\n"
)


class Args(msgspec.Struct, kw_only=True):
    """bash_output arguments; checked in ``prepare``."""

    id: Any = None
    filter: Any = None


@dataclass(slots=True, frozen=True)
class ReadPlan:
    shell_id: str
    pattern: str | None


class FilterError(Exception):
    """The filter could not be applied; nothing is consumed."""


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Validate the id and the filter (length, then compilation) without reading anything."""
    shell_id = str(args.id).strip() if isinstance(args.id, (str, int)) else ""
    header = f"⚙ bash_output: {shell_id or '(no id)'}"
    if not shell_id:
        return PreparedCall(header=header, error="Error: missing id (e.g. id=\"bash_1\")")
    pattern = args.filter
    if pattern is not None and not isinstance(pattern, str):
        return PreparedCall(header=header, error="Error: filter must be a string (a regex)")
    if pattern == "":
        pattern = None
    if pattern is not None:
        if len(pattern) > FILTER_MAX_CHARS:
            return PreparedCall(
                header=header,
                error=f"Error: filter pattern too long ({len(pattern)} chars; max "
                f"{FILTER_MAX_CHARS})",
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            return PreparedCall(header=header, error=f"Error: invalid filter regex: {exc}")
        header += f" (filter: {pattern})"
    return PreparedCall(header=header, data=ReadPlan(shell_id, pattern))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """Return the new lines (optionally filtered) and advance the cursor past all of them."""
    plan: ReadPlan = call.data
    shells = _shells.registry(ctx.env)
    shell = shells.get(plan.shell_id)
    if shell is None:
        return ToolOutput(shells.unknown_id_error(plan.shell_id), is_error=True)
    async with shell.read_lock:
        dropped, new, clipped, end = shell.buffer.snapshot()
        matches: list[int] | None = None
        if plan.pattern is not None and new:
            try:
                matches = await match_lines(plan.pattern, new, ctx)
            except FilterError as exc:
                return ToolOutput(f"Error: {exc} Nothing was consumed.", is_error=True)
        shell.buffer.cursor = end
    text = _render(shell, plan.pattern, dropped, new, clipped, matches, ctx.env.output_cap())
    shown = len(new) if matches is None else len(matches)
    return ToolOutput(text, summary=f"{shown} line(s)")


def _render(
    shell: _shells.Shell,
    pattern: str | None,
    dropped: int,
    new: list[str],
    clipped: int,
    matches: list[int] | None,
    cap: int,
) -> str:
    parts = [f"{shell.id} ({shell.describe()})"]
    if dropped:
        parts.append(f"[{dropped} earlier line(s) dropped from the buffer]")
    if clipped:
        parts.append(f"[{clipped} line(s) longer than {_shells.LINE_CLIP} chars were clipped]")
    if not new:
        parts.append("No new output since the last read.")
        return "\n".join(parts)
    if pattern is None:
        shown = new
        parts.append(f"{len(new)} new line(s):")
    elif not matches:
        parts.append(f"{len(new)} new line(s), none matching the filter.")
        return "\n".join(parts)
    else:
        shown = [new[i] for i in matches]
        parts.append(f"{len(shown)} of {len(new)} new line(s) match the filter:")
    body = "\n".join(shown)
    cut = truncate_middle(body, cap)
    parts.append(cut)
    if cut != body:
        parts.append(
            "[The middle of this output was cut to fit. Those lines were consumed and "
            "cannot be read again.]"
        )
    return "\n".join(parts)


def _literal_alternatives(pattern: str) -> list[str] | None:
    """The alternatives of a pattern made only of literals joined by ``|``, else None."""
    parts = pattern.split("|")
    if any(not part or _META & set(part) for part in parts):
        return None
    return parts


async def match_lines(pattern: str, lines: list[str], ctx: ToolContext) -> list[int]:
    """Indices of the lines the pattern finds a match in (first 4096 chars of each)."""
    window = [line[:FILTER_LINE_WINDOW] for line in lines]
    literals = _literal_alternatives(pattern)
    if literals is not None:
        return [i for i, line in enumerate(window) if any(lit in line for lit in literals)]
    return await _match_in_child(pattern, window, ctx)


async def _match_in_child(pattern: str, lines: list[str], ctx: ToolContext) -> list[int]:
    env = scrub_env(os.environ, passthrough=ctx.env.settings.env_passthrough)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", "-c", _CHILD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise FilterError(f"could not run the filter ({exc}).") from exc
    payload = json.dumps([pattern, lines]).encode()
    runner = asyncio.ensure_future(proc.communicate(payload))
    try:
        done, _ = await asyncio.wait({runner}, timeout=FILTER_TIMEOUT)
    except asyncio.CancelledError:
        _kill(proc)
        runner.cancel()
        raise
    if runner not in done:
        _kill(proc)
        runner.cancel()
        await proc.wait()
        raise FilterError(f"the filter took longer than {FILTER_TIMEOUT:g}s and was stopped.")
    out, _ = runner.result()
    if proc.returncode != 0:
        raise FilterError("the filter failed.")
    try:
        return [int(i) for i in json.loads(out)]
    except (ValueError, TypeError) as exc:
        raise FilterError("the filter returned an unreadable result.") from exc


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
