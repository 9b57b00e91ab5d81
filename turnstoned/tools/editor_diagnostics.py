"""editor_diagnostics: the problems the user's editor shows, for a file or every file.

Offered only when an editor following the session serves ``editor/diagnostics``; the
language servers are the editor's, so the model sees what the user sees.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from turnstoned.protocol import EditorDiagnosticsParams, EditorDiagnosticsResult
from turnstoned.tools import _editor
from turnstoned.tools.base import (
    EditorUnavailable,
    PreparedCall,
    SessionEnv,
    ToolContext,
    ToolOutput,
)

ORDER = {"error": 0, "warning": 1, "information": 2, "hint": 3}


class Args(msgspec.Struct, kw_only=True):
    path: Any = None


def available(env: SessionEnv) -> bool:
    return _editor.serves(env, "diagnostics")


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    given = args.path.strip() if isinstance(args.path, str) else ""
    path = os.path.realpath(ctx.env.resolve(given)) if given else None
    return PreparedCall(header=f"⚙ editor_diagnostics: {given or 'every file'}", data=path)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    path: str | None = call.data
    try:
        result = await _editor.ask(ctx, EditorDiagnosticsParams(
            session_id=ctx.env.session_id, path=path), EditorDiagnosticsResult)
    except EditorUnavailable as exc:
        return _editor.unavailable(exc)
    found = sorted(result.diagnostics, key=lambda d: (ORDER.get(d.severity, 9), d.path,
                                                       d.range.start_line))
    what = _editor.shown(path, ctx.env) if path else "the workspace"
    if not found:
        return ToolOutput(f"The editor shows no problems in {what}.", summary="none")
    counts = {s: sum(d.severity == s for d in found) for s in ORDER}
    head = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
    lines = [f"The editor shows {head} in {what}:"]
    lines += [_editor.diagnostic_line(d, ctx.env) for d in found[:_editor.MAX_LISTED]]
    if len(found) > _editor.MAX_LISTED:
        lines.append(f"… and {len(found) - _editor.MAX_LISTED} more")
    return ToolOutput("\n".join(lines), summary=head)
