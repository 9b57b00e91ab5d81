"""What the editor shows, for the model: the state sent with a prompt, unsaved buffers,
and telling the editor which files tools changed.

The editor state (``TurnStartParams.editor``) travels with the prompt, as it is when the
user sends it, and the model reads it as an ``[Editor state]`` block before the prompt's
text (``render``). An editor that serves ``editor/buffers`` is asked, as each tool batch
begins, for its unsaved buffers: file tools then read and edit what the user sees
(``SessionEnv.buffers``). After a batch, ``workspace/filesChanged`` names the files the
tools wrote, so the editor reloads them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from turnstoned import protocol as p
from turnstoned.places import shown
from turnstoned.tools.base import EditorUnavailable, PreparedCall, SessionEnv

log = logging.getLogger(__name__)

SELECTION_CHARS = 8_000  # of the selected text the model reads
DIAGNOSTICS_SHOWN = 50
BUFFER_CHARS = 8 << 20  # an unsaved buffer larger than this is read from the disk instead
# Tools whose calls change files they name (write_file, edit_file: file_change.path).
COMMAND_TOOLS = frozenset({"bash", "watch", "kill_shell"})


def _lines(r: p.EditorRange) -> str:
    first, last = r.start_line + 1, r.end_line + 1
    return f"line {first}" if first == last else f"lines {first}-{last}"


def render(state: p.EditorState, cwd: Path) -> str | None:
    """The ``[Editor state]`` block the model reads with a prompt (None: nothing to say)."""
    if state.active_file is None:
        return None
    name = shown(state.active_file, cwd)
    lang = f" ({state.language_id})" if state.language_id else ""
    lines = ["[Editor state: what the user has open as they send this message]",
             f"Active file: {name}{lang}" + (" — unsaved changes" if state.modified else "")]
    if state.visible is not None:
        lines.append(f"Visible: {_lines(state.visible)}")
    sel = state.selection
    if sel is not None and (sel.text or sel.range.start_line != sel.range.end_line
                            or sel.range.start_character != sel.range.end_character):
        text = sel.text[:SELECTION_CHARS]
        cut = f"\n… ({len(sel.text) - SELECTION_CHARS:,} more characters)" if len(
            sel.text) > SELECTION_CHARS else ""
        lines.append(f"Selection: {_lines(sel.range)}" + (f":\n```\n{text}{cut}\n```"
                                                          if text else ""))
    elif sel is not None:
        lines.append(f"Cursor: line {sel.range.start_line + 1}, column "
                     f"{sel.range.start_character + 1}")
    if state.diagnostics:
        lines.append(f"Problems the editor shows in this file ({len(state.diagnostics)}):")
        for d in state.diagnostics[:DIAGNOSTICS_SHOWN]:
            source = f" [{d.source}]" if d.source else ""
            lines.append(f"- line {d.range.start_line + 1}: {d.severity}: {d.message}{source}")
    lines.append("[End of editor state]")
    return "\n".join(lines)


async def load_buffers(env: SessionEnv) -> None:
    """Ask the editor for its unsaved buffers (when it serves them) before a tool batch."""
    editor = env.services.editor
    env.buffers = {}
    if editor is None or not editor.features(env.session_id).buffers:
        return
    try:
        result = await editor.ask(p.EditorBuffersParams(session_id=env.session_id),
                                  p.EditorBuffersResult)
    except EditorUnavailable as exc:
        log.info("session %s: unsaved buffers not read: %s", env.session_id, exc)
        return
    env.buffers = {os.path.realpath(b.path): b.text for b in result.buffers
                   if len(b.text) <= BUFFER_CHARS}


def files_changed(env: SessionEnv, calls: Sequence[PreparedCall]) -> p.WorkspaceFilesChanged | None:
    """What to tell the editor after a batch ran ``calls`` (None: nothing changed)."""
    files = [p.ChangedPath(path=c.file_change.path, from_buffer=c.file_change.path in env.buffers)
             for c in calls if c.file_change is not None and not c.error]
    commands = any(c.tool in COMMAND_TOOLS and not c.error for c in calls)
    if not files and not commands:
        return None
    return p.WorkspaceFilesChanged(session_id=env.session_id, files=files, commands=commands)
