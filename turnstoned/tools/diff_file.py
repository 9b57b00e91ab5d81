"""diff_file: a unified diff of two files, or of a file against a string.

With ``content_b`` the string is the *old* side (``--- (provided content)``)
and the file the new one, i.e. "what changed relative to this baseline".
Both files count as read for edit_file's guard.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import msgspec

from turnstoned.tools._files import (
    FileProblem,
    collect,
    decode_lenient,
    read_bytes,
    split_keepends,
    unified_diff,
)
from turnstoned.tools._lenient import as_int
from turnstoned.tools._paths import place, read_gate
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

DEFAULT_CONTEXT = 3
MAX_CONTEXT = 20


class Args(msgspec.Struct, kw_only=True):
    path_a: str = ""
    path_b: str | None = None
    content_b: str | None = None
    context_lines: int | float | str | None = None


@dataclass(slots=True)
class _Diff:
    a: Path
    a_display: str
    b: Path | None
    b_display: str
    content_b: str | None
    context: int
    added: list[str]  # read-set keys this call added (taken out again if it fails)


def _context(raw: float | str | None) -> int:
    value = as_int(raw) if raw is not None else None
    return DEFAULT_CONTEXT if value is None else max(0, min(MAX_CONTEXT, value))


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    a_display = args.path_a.strip()
    if not a_display:
        return prepare_error("Error: path_a is required")
    b_display = (args.path_b or "").strip()
    if b_display and args.content_b is not None:
        return prepare_error("Error: provide path_b or content_b, not both")
    if not b_display and args.content_b is None:
        return prepare_error(
            "Error: provide path_b (another file) or content_b (string to compare against)"
        )
    a = ctx.env.resolve(a_display)
    b = ctx.env.resolve(b_display) if b_display else None
    a_place = place(ctx.env, a_display)
    b_place = place(ctx.env, b_display) if b_display else None
    places = [a_place] if b_place is None else [a_place, b_place]
    gate = read_gate(places)
    added = [k for k in dict.fromkeys(p.real for p in places) if k not in ctx.env.read_set]
    if not gate["needs_approval"]:  # one that must be approved first marks them when it runs
        ctx.env.read_set.update(added)
    other = f"{b_display}{b_place.note()}" if b_place is not None else "provided content"
    return PreparedCall(
        header=f"⚙ diff_file: {a_display}{a_place.note()} ↔ {other}",
        **gate,
        data=_Diff(a, a_display, b, b_display, args.content_b, _context(args.context_lines), added),
    )


def _sides(diff: _Diff) -> tuple[tuple[str, str], tuple[str, str], bool]:
    """(old name, old text), (new name, new text), and whether the raw bytes differ."""
    a_data = read_bytes(diff.a, diff.a_display)
    a_text = decode_lenient(a_data)
    if diff.b is None:
        baseline = (diff.content_b or "").replace("\r\n", "\n")
        return ("(provided content)", baseline), (diff.a_display, a_text), False
    b_data = read_bytes(diff.b, diff.b_display)
    b_text = decode_lenient(b_data)
    return (diff.a_display, a_text), (diff.b_display, b_text), a_data != b_data


def _run(diff: _Diff, cap: int) -> ToolOutput:
    (old_name, old), (new_name, new), raw_differs = _sides(diff)
    lines = unified_diff(
        split_keepends(old),
        split_keepends(new),
        fromfile=old_name,
        tofile=new_name,
        context=diff.context,
    )
    text, kept, total = collect(lines, cap)
    if total == 0:
        if raw_differs:
            return ToolOutput(
                content="(no differences — the files differ only in line endings or a "
                "byte-order mark)",
                summary="identical text",
            )
        return ToolOutput(content="(no differences)", summary="identical")
    text = text.rstrip("\n")
    if kept < total:
        text += (
            f"\n... [diff truncated: {kept} of {total} diff lines shown — output exceeded "
            f"{cap} char limit]"
        )
    return ToolOutput(content=text, summary=f"{total} diff lines")


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    diff: _Diff = call.data
    ctx.env.read_set.update(diff.added)
    try:
        return await asyncio.to_thread(_run, diff, ctx.env.output_cap())
    except FileProblem as exc:
        for key in diff.added:
            ctx.env.read_set.discard(key)
        return ToolOutput(content=str(exc), is_error=True)
