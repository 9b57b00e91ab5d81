"""edit_file: exact string replacements in a file the model has read, applied atomically.

Everything is decided at prepare: the edits are validated, located in the file
and checked for overlap, the new bytes are computed and the approval preview is
the real unified diff of the change. Execute only re-reads the file, makes sure
it is byte-for-byte what was previewed, and swaps the new content in.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from turnstoned.tools._edit import (
    Edit,
    EditProblem,
    Span,
    check_overlap,
    edit_diff,
    locate,
    locate_all,
)
from turnstoned.tools._files import (
    FileProblem,
    TextDoc,
    atomic_write,
    capped_preview,
    decode_lenient,
    from_buffer,
    read_bytes,
    real_key,
)
from turnstoned.tools._lenient import as_bool, as_int
from turnstoned.tools._paths import place
from turnstoned.tools._proposal import exact_text, propose
from turnstoned.tools.base import FileProposal, PreparedCall, ToolContext, ToolOutput, prepare_error


class Args(msgspec.Struct, kw_only=True):
    path: str = ""
    old_string: str | None = None
    new_string: str | None = None
    near_line: int | float | str | None = None
    replace_all: bool | int | str | None = None
    edits: list[Any] | str | None = None


@dataclass(slots=True)
class _Plan:
    path: Path
    display: str
    edits: list[Edit]
    replace_all: bool
    count: int  # edits applied, or occurrences replaced
    original: bytes  # the file as previewed: execute writes only over exactly this
    new_bytes: bytes
    proposal: FileProposal | None = None
    # Edited from the editor's unsaved buffer (``original`` is its text): the disk as it was
    # then, which execute checks instead; the file gets the buffer's text with the edit.
    disk: bytes | None = None


_EDITS_SHAPE = "Error: edits must be an array of {old_string, new_string} objects"


def _batch(raw: list[Any] | str | None) -> list[Any]:
    if isinstance(raw, str):
        if not raw.strip():
            return []
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise EditProblem(_EDITS_SHAPE) from exc
        if not isinstance(raw, list):
            raise EditProblem(_EDITS_SHAPE)
    return list(raw or [])


def _entry(index: int, entry: Any, total: int) -> Edit:
    where = f"edits[{index}]"
    if not isinstance(entry, dict):
        raise EditProblem(f"Error: {where} must be an object with old_string and new_string")
    old, new = entry.get("old_string"), entry.get("new_string")
    if not isinstance(old, str) or not old:
        raise EditProblem(f"Error: {where}: missing old_string")
    if new is None:
        new = ""
    if not isinstance(new, str):
        raise EditProblem(f"Error: {where}: new_string must be a string")
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if old == new:
        raise EditProblem(f"Error: {where}: old_string and new_string are identical")
    label = f"{where}: " if total > 1 else ""
    return Edit(old, new, as_int(entry.get("near_line")), label)


def _single(args: Args) -> Edit:
    old = (args.old_string or "").replace("\r\n", "\n")
    new = (args.new_string or "").replace("\r\n", "\n")
    if not old:
        raise EditProblem("Error: missing old_string")
    if old == new:
        raise EditProblem("Error: old_string and new_string are identical")
    return Edit(old, new, as_int(args.near_line))


def requested_edits(args: Args) -> tuple[list[Edit], bool]:
    """The edits asked for and whether replace_all applies, in the reference's check order."""
    batch = _batch(args.edits)
    if args.old_string and batch:
        raise EditProblem("Error: provide old_string/new_string or edits array, not both")
    if batch:
        edits = [_entry(i, entry, len(batch)) for i, entry in enumerate(batch)]
    else:
        edits = [_single(args)]
    replace_all = as_bool(args.replace_all)
    if replace_all and batch:
        raise EditProblem("Error: replace_all cannot be used with edits array")
    if replace_all and edits[0].near_line is not None:
        raise EditProblem("Error: replace_all cannot be used with near_line")
    return edits, replace_all


def _spans(doc: TextDoc, edits: list[Edit], replace_all: bool, display: str) -> list[Span]:
    if replace_all:
        return locate_all(doc.text, edits[0], display)
    spans = [locate(doc.text, edit, display) for edit in edits]
    check_overlap(spans)
    return sorted(spans, key=lambda s: s.start)


def _summary_lines(edits: list[Edit], replace_all: bool, spans: list[Span]) -> list[str]:
    lines = [f"(replace_all: {len(spans)} occurrences)"] if replace_all else []
    for edit in edits:
        if not edit.new:
            lines.append(f"({edit.label}deletion — {len(edit.old)} chars removed)")
    return lines


def _plan(args: Args, ctx: ToolContext, display: str) -> tuple[_Plan, str]:
    """Validate, locate and compute the edit; returns the plan and its preview."""
    edits, replace_all = requested_edits(args)
    path = ctx.env.resolve(display)
    if real_key(path) not in ctx.env.read_set:
        raise EditProblem(f"Error: must read_file {display} before editing it")
    data = disk = read_bytes(path, display)
    buffer = ctx.env.buffers.get(os.path.realpath(path))
    if buffer is not None:  # what the user sees, unsaved: the edit is made to that
        data = from_buffer(buffer, disk)
    doc = TextDoc.decode(data, display)
    spans = _spans(doc, edits, replace_all, display)
    new_text, new_raw = doc.apply([(s.start, s.end, s.new) for s in spans])
    try:
        new_bytes = doc.encode(new_raw)
    except UnicodeEncodeError as exc:
        raise EditProblem(f"Error: new_string cannot be written as UTF-8: {exc}") from exc
    diff = capped_preview(edit_diff(doc.text, new_text, spans, name=display))
    preview = "\n".join([*_summary_lines(edits, replace_all, spans), diff])
    count = len(spans) if replace_all else len(edits)
    plan = _Plan(path, display, edits, replace_all, count, data, new_bytes,
                 disk=disk if buffer is not None else None)
    plan.proposal = propose(path, doc.text, new_text, exists=True,
                            texts=lambda: (exact_text(data), exact_text(new_bytes)))
    return plan, preview


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    display = args.path.strip()
    if not display:
        return prepare_error("Error: missing path")
    try:
        plan, preview = _plan(args, ctx, display)
    except (EditProblem, FileProblem) as exc:
        return prepare_error(str(exc))
    batch = f" ({len(plan.edits)} edits)" if len(plan.edits) > 1 else ""
    where = place(ctx.env, display)
    return PreparedCall(
        header=f"⚙ edit_file: {display}{where.note()}{batch}",
        preview=preview,
        needs_approval=True,
        approval_label="edit_file",
        # A standing grant covers the workspace only.
        grantable=not where.guarded,
        data=plan,
        file_change=plan.proposal,
    )


def _changed(plan: _Plan, current: bytes) -> str:
    text = decode_lenient(current)
    advice = "nothing was written — re-read it before retrying."
    for edit in plan.edits:
        if edit.old not in text:
            return (
                f"Error: {edit.label}old_string no longer found in {plan.display} "
                f"(file changed since the edit was prepared); {advice}"
            )
    return f"Error: {plan.display} changed since the edit was prepared (file changed); {advice}"


def _commit(plan: _Plan) -> ToolOutput:
    try:
        current = plan.path.read_bytes()
    except FileNotFoundError:
        return _failed(
            f"Error: {plan.display} not found (deleted after the edit was prepared; "
            "nothing was written)"
        )
    except OSError as exc:
        return _failed(f"Error reading {plan.display}: {exc}")
    if current != (plan.original if plan.disk is None else plan.disk):
        return _failed(_changed(plan, current))
    try:
        atomic_write(plan.path, plan.new_bytes)
    except OSError as exc:
        return _failed(f"Error writing {plan.display}: {exc}")
    if plan.replace_all:
        done = f"replaced {plan.count} occurrences"
    else:
        done = f"applied {plan.count} edit" + ("s" if plan.count != 1 else "")
    return ToolOutput(content=f"Edited {plan.display}: {done}", summary=done)


def _failed(message: str) -> ToolOutput:
    return ToolOutput(content=message, is_error=True, effect_status="none")


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    plan: _Plan = call.data
    result = await asyncio.to_thread(_commit, plan)
    if not result.is_error:
        ctx.env.read_set.add(real_key(plan.path))
    return result
