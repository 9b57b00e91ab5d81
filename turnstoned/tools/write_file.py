"""write_file: create, overwrite or append to a file; overwrites are atomic.

The approval preview is a unified diff against what is on disk now (a new
file shows as all-added lines). Overwriting a file the model never read is
labelled ``overwrite_file`` so "always allow" grants can treat it separately.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from turnstoned.tools._files import (
    PREVIEW_CAP,
    append_bytes,
    atomic_write,
    capped_preview,
    decode_lenient,
    is_binary,
    real_key,
    split_keepends,
    unified_diff,
)
from turnstoned.tools._paths import place
from turnstoned.tools._proposal import propose, read_text
from turnstoned.tools.base import (
    EffectStatus,
    FileProposal,
    PreparedCall,
    ToolContext,
    ToolOutput,
    prepare_error,
)

_DIFF_MAX_BYTES = 8 * 1024 * 1024  # larger existing files get a size note instead of a diff


class Args(msgspec.Struct, kw_only=True):
    path: str = ""
    content: str = ""
    mode: str = "overwrite"


@dataclass(slots=True)
class _Write:
    path: Path
    display: str
    content: str
    append: bool


def _old_text(path: Path) -> tuple[str | None, str]:
    """The current text for the diff, or None with a note saying why there is no diff."""
    try:
        size = path.stat().st_size
        if size > _DIFF_MAX_BYTES:
            return None, f"(existing file is {size} bytes; too large to diff)"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"(existing file could not be read for a diff: {exc})"
    if is_binary(data):
        return None, "(existing file is binary; no diff)"
    return decode_lenient(data), ""


def _preview(write: _Write, exists: bool, notes: list[str], old: str | None, why: str) -> str:
    content = write.content.replace("\r\n", "\n")
    if not exists:
        lines = split_keepends(content)
        added = unified_diff([], lines, fromfile="/dev/null", tofile=write.display)
        return "\n".join([*notes, capped_preview(added) if lines else "(empty file)"])
    if old is None:
        return "\n".join([*notes, why])
    new = old + content if write.append else content
    changes = unified_diff(
        split_keepends(old), split_keepends(new), fromfile=write.display, tofile=write.display
    )
    diff = capped_preview(changes, PREVIEW_CAP)
    return "\n".join([*notes, diff or "(no changes: the file already has this content)"])


def _proposal(write: _Write, exists: bool, old: str | None) -> FileProposal:
    def texts() -> tuple[str, str]:
        before = read_text(write.path) if exists else ""
        return before, before + write.content if write.append else write.content

    new = (old or "") + write.content if write.append else write.content
    return propose(write.path, old, new, exists=exists, texts=texts)


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    display = args.path.strip()
    if not display:
        return prepare_error("Error: missing path")
    append = (args.mode or "").strip().lower() == "append"
    path = ctx.env.resolve(display)
    if path.is_dir():
        return prepare_error(f"Error: {display} is a directory, not a file")
    exists = path.exists()
    where = place(ctx.env, display)
    notes: list[str] = []
    label = "append_file" if append else "write_file"
    if exists and not append and where.real not in ctx.env.read_set:
        label = "overwrite_file"
        notes.append("⚠ overwriting existing file not previously read")
    write = _Write(path, display, args.content, append)
    old, why = _old_text(path) if exists else (None, "")
    if exists and where.real in ctx.env.buffers:  # the diff against what the user sees
        old = ctx.env.buffers[where.real]
        notes.append("(the file has unsaved changes in the editor: the diff is against them)")
    return PreparedCall(
        header=f"⚙ write_file ({'append' if append else 'write'}): {display}{where.note()} "
        f"({len(args.content)} chars)",
        preview=_preview(write, exists, notes, old, why),
        needs_approval=True,
        approval_label=label,
        # A standing grant covers the workspace only.
        grantable=not where.guarded,
        data=write,
        file_change=_proposal(write, exists, old),
    )


def _write(write: _Write) -> ToolOutput:
    target = Path(os.path.realpath(write.path))
    try:
        data = write.content.encode("utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        if write.append:
            append_bytes(target, data)
        else:
            atomic_write(target, data)
    except (OSError, UnicodeEncodeError) as exc:
        # An atomic overwrite that fails leaves the old file; a failed append may be partial.
        effect: EffectStatus = "unknown" if write.append else "none"
        return ToolOutput(
            content=f"Error writing {write.display}: {exc}", is_error=True, effect_status=effect
        )
    verb = "Appended" if write.append else "Wrote"
    return ToolOutput(
        content=f"{verb} {len(write.content)} chars to {write.display}",
        summary=f"{verb.lower()} {len(write.content)} chars",
    )


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    write: _Write = call.data
    result = await asyncio.to_thread(_write, write)
    if not result.is_error:
        ctx.env.read_set.add(real_key(write.path))
    return result
