"""editor_open_files: the files open in the user's editor (active, unsaved).

Offered only when an editor following the session serves ``editor/openFiles``.
"""

from __future__ import annotations

import msgspec

from turnstoned.protocol import EditorOpenFilesParams, EditorOpenFilesResult
from turnstoned.tools import _editor
from turnstoned.tools.base import (
    EditorUnavailable,
    PreparedCall,
    SessionEnv,
    ToolContext,
    ToolOutput,
)


class Args(msgspec.Struct, kw_only=True):
    pass


def available(env: SessionEnv) -> bool:
    return _editor.serves(env, "open_files")


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    return PreparedCall(header="⚙ editor_open_files")


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    try:
        result = await _editor.ask(ctx, EditorOpenFilesParams(session_id=ctx.env.session_id),
                                   EditorOpenFilesResult)
    except EditorUnavailable as exc:
        return _editor.unavailable(exc)
    if not result.files:
        return ToolOutput("No files are open in the editor.", summary="none")
    lines = [f"{len(result.files)} file(s) open in the editor:"]
    for f in result.files[:_editor.MAX_LISTED]:
        marks = [m for m, on in (("active", f.active), ("unsaved changes", f.modified)) if on]
        lines.append(f"- {_editor.shown(f.path, ctx.env)}" + (f" ({', '.join(marks)})"
                                                              if marks else ""))
    return ToolOutput("\n".join(lines), summary=f"{len(result.files)} open")
