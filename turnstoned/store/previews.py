"""Preview content: content-addressed files in the data dir, one folder per session.

``<data>/previews/<session id>/<id>`` holds the bytes and ``<id>.json`` what
the editor needs to show them (kind, title, source, content type). The id is
``sha256(b"preview:" + bytes)``, so the same content is stored once per
session. A session's folder goes when the session is closed; ``sweep`` removes
the folders of sessions that no longer exist or are closed. Folders are
private to the user (previews may hold anything a page or a file held).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

_ID = re.compile(r"[0-9a-f]{64}")
_SESSION = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True, slots=True)
class PreviewRecord:
    id: str
    kind: str  # web | pdf | image | table | text | markdown
    title: str
    source: str  # the URL (final, after redirects), path or attachment it came from
    content_type: str
    size: int
    created_at: float = 0.0


def content_id(body: bytes) -> str:
    return hashlib.sha256(b"preview:" + body).hexdigest()


class PreviewStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, session_id: str) -> Path:
        if not _SESSION.fullmatch(session_id):
            raise ValueError(f"not a session id: {session_id[:80]!r}")
        return self.root / session_id

    def put(self, session_id: str, body: bytes, *, kind: str, title: str, source: str,
            content_type: str) -> PreviewRecord:
        """Store ``body`` for the session (once) and its description (latest wins)."""
        folder = self._dir(session_id)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.mkdir(exist_ok=True, mode=0o700)
        record = PreviewRecord(content_id(body), kind, title, source, content_type, len(body),
                               time.time())
        data = folder / record.id
        if not data.exists():
            _write(data, body)
        _write(folder / f"{record.id}.json", json.dumps(asdict(record)).encode())
        return record

    def get(self, session_id: str, preview_id: str) -> tuple[PreviewRecord, Path] | None:
        """The record and the file holding its bytes, or None if the session has no such id."""
        if not _ID.fullmatch(preview_id) or not _SESSION.fullmatch(session_id):
            return None
        folder = self._dir(session_id)
        try:
            raw = json.loads((folder / f"{preview_id}.json").read_text(encoding="utf-8"))
            record = PreviewRecord(**raw)
        except (OSError, ValueError, TypeError):
            return None
        data = folder / preview_id
        return (record, data) if data.is_file() else None

    def remove_session(self, session_id: str) -> None:
        if _SESSION.fullmatch(session_id):
            shutil.rmtree(self.root / session_id, ignore_errors=True)

    def sweep(self, keep: Callable[[str], bool]) -> list[str]:
        """Remove the folders of sessions ``keep`` says no to; the ids removed."""
        try:
            folders = [p for p in self.root.iterdir() if p.is_dir()]
        except OSError:
            return []
        gone = [p.name for p in folders if not keep(p.name)]
        for name in gone:
            self.remove_session(name)
        return gone


def _write(path: Path, data: bytes) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
