"""File-change proposals: what write_file and edit_file would do, for an editor's diff view.

The approval shows a unified diff against absolute, resolved paths (capped, so a
huge rewrite does not travel in every notification); the whole old and new text
is computed only when an editor asks for it (``fileChange/read``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from turnstoned.protocol import FileChangeKind
from turnstoned.tools._files import collect, split_keepends, unified_diff
from turnstoned.tools.base import FileProposal

DIFF_CAP = 262_144  # chars of the unified diff carried by items and approvals


def exact_text(data: bytes) -> str:
    """File bytes as an editor shows them: UTF-8 (BOM dropped), line endings kept."""
    return data.decode("utf-8-sig", errors="replace")


def read_text(path: Path) -> str:
    """The file's current text ("" when it is missing or unreadable)."""
    try:
        return exact_text(path.read_bytes())
    except OSError:
        return ""


def propose(path: Path, old: str | None, new: str, *, exists: bool,
            texts: Callable[[], tuple[str, str]]) -> FileProposal:
    """A proposal for changing ``path`` from ``old`` to ``new`` (LF-normalised texts).

    ``old`` is None when the current text cannot be diffed (binary, too large):
    the diff is then empty and marked truncated.
    """
    real = os.path.realpath(path)
    kind: FileChangeKind = "modify" if exists else "create"
    if exists and old is None:
        return FileProposal(real, kind, "", True, texts)
    before = split_keepends(old or "")
    after = split_keepends(new.replace("\r\n", "\n"))
    lines = unified_diff(before, after, fromfile=real if exists else "/dev/null", tofile=real)
    diff, kept, total = collect(lines, DIFF_CAP)
    return FileProposal(real, kind, diff, kept < total, texts)
