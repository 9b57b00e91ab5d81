"""What the editor tools share: whether the session's editor serves them, and asking it."""

from __future__ import annotations

from typing import Any

from turnstoned import places
from turnstoned.protocol import EditorDiagnostic, EditorRange, Event
from turnstoned.tools.base import EditorUnavailable, SessionEnv, ToolContext, ToolOutput

MAX_LISTED = 200  # diagnostics or locations listed in one result


def serves(env: SessionEnv, feature: str) -> bool:
    """An editor following the session serves ``feature`` (an EditorCapabilities field)."""
    editor = env.services.editor
    return editor is not None and bool(getattr(editor.features(env.session_id), feature))


async def ask(ctx: ToolContext, params: Event, result: type[Any]) -> Any:
    """The editor's answer; raises EditorUnavailable (the tools turn it into an error)."""
    editor = ctx.env.services.editor
    if editor is None:
        raise EditorUnavailable("no editor is connected to this session")
    return await editor.ask(params, result)


def unavailable(exc: EditorUnavailable) -> ToolOutput:
    return ToolOutput(f"Error: the editor did not answer: {exc}", is_error=True,
                      effect_status="none")


def where(path: str, r: EditorRange, env: SessionEnv) -> str:
    """``path:line:column`` (from 1), relative to the session's cwd when inside it."""
    return f"{shown(path, env)}:{r.start_line + 1}:{r.start_character + 1}"


def shown(path: str, env: SessionEnv) -> str:
    """``path`` relative to the session's cwd when it is inside it."""
    return places.shown(path, env.cwd)


def diagnostic_line(d: EditorDiagnostic, env: SessionEnv) -> str:
    source = f" [{d.source}{' ' + d.code if d.code else ''}]" if d.source or d.code else ""
    return f"{where(d.path, d.range, env)}: {d.severity}: {d.message}{source}"
