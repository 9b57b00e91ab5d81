"""Previews the tools opened: read back by the editor, removed with their session."""

from __future__ import annotations

import asyncio
import base64
import logging

from turnstoned import protocol as p
from turnstoned.core.errors import EngineError
from turnstoned.core.sessions import Sessions
from turnstoned.protocol import ErrorCode
from turnstoned.store.previews import PreviewStore

log = logging.getLogger(__name__)


class Previews:
    """The previews of the daemon's sessions (``preview/read``)."""

    def __init__(self, store: PreviewStore, sessions: Sessions) -> None:
        self.store = store
        self.sessions = sessions

    async def read(self, params: p.PreviewReadParams) -> p.PreviewReadResult:
        """The bytes of a preview of a session the daemon knows."""
        self.sessions.get(params.session_id)  # unknown or closed sessions are protocol errors
        found = self.store.get(params.session_id, params.preview_id)
        if found is None:
            raise EngineError(ErrorCode.PREVIEW_NOT_FOUND,
                              f"no preview {params.preview_id!r} in session {params.session_id!r}")
        record, path = found

        def read() -> bytes:
            with path.open("rb") as f:
                f.seek(params.offset)
                return f.read() if params.length is None else f.read(params.length)

        data = await asyncio.to_thread(read)  # up to 32 MiB: not on the event loop
        return p.PreviewReadResult(
            preview_id=record.id, kind=record.kind,  # type: ignore[arg-type]
            title=record.title, source=record.source, content_type=record.content_type,
            size=record.size, offset=params.offset, data=base64.b64encode(data).decode("ascii"),
            eof=params.offset + len(data) >= record.size)

    def session_closed(self, session_id: str) -> None:
        self.store.remove_session(session_id)

    def sweep(self) -> None:
        """Drop the previews of sessions that are closed or gone (e.g. after a crash)."""
        def keep(session_id: str) -> bool:
            row = self.sessions.store.get_session(session_id)
            return row is not None and not row.closed

        gone = self.store.sweep(keep)
        if gone:
            log.info("removed the previews of %d closed sessions", len(gone))
