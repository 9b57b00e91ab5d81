"""The engine's side of the web tools: services from config, the side call, previews."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import TYPE_CHECKING, Any

from turnstoned import paths
from turnstoned import protocol as p
from turnstoned.config import Config, resolve_model
from turnstoned.core.errors import EngineError
from turnstoned.llm.types import ModelError
from turnstoned.protocol import ErrorCode

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine
    from turnstoned.store.previews import PreviewRecord

log = logging.getLogger(__name__)


def attach(engine: Engine, config: Config) -> None:
    """Give the tools web access, previews and a side call to the session's model."""
    from turnstoned.net.services import from_config
    from turnstoned.store.previews import PreviewStore

    services = engine.services
    services.web = from_config(config)
    services.previews = PreviewStore(paths.data_dir() / "previews")

    async def ask_model(session_id: str, messages: list[dict[str, Any]]) -> str:
        from turnstoned.llm.openai_chat import complete

        live = engine.sessions.get(session_id)
        model = resolve_model(engine.config.model, live.model if live else None)
        if isinstance(model, str):
            raise ModelError("notConfigured", model)
        return await complete(model, messages, live.spend() if live else None)

    def preview_opened(session_id: str, call_id: str, record: PreviewRecord, csp: str) -> None:
        engine.sink.notify(p.PreviewOpen(
            session_id=session_id, call_id=call_id, preview_id=record.id,
            kind=record.kind,  # type: ignore[arg-type]
            title=record.title, source=record.source, content_type=record.content_type,
            size=record.size, csp=csp))

    services.ask_model = ask_model
    services.preview_opened = preview_opened


async def read_preview(engine: Engine, params: p.PreviewReadParams) -> p.PreviewReadResult:
    """``preview/read``: the bytes of a preview of a session the daemon knows."""
    store = engine.services.previews
    engine.get(params.session_id)  # unknown or closed sessions are protocol errors
    found = store.get(params.session_id, params.preview_id) if store is not None else None
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


def remove_previews(engine: Engine, session_id: str) -> None:
    if engine.services.previews is not None:
        engine.services.previews.remove_session(session_id)


def sweep_previews(engine: Engine) -> None:
    """Drop the previews of sessions that are closed or gone (e.g. after a crash)."""
    store = engine.services.previews
    if store is None:
        return

    def keep(session_id: str) -> bool:
        row = engine.store.get_session(session_id)
        return row is not None and not row.closed

    gone = store.sweep(keep)
    if gone:
        log.info("removed the previews of %d closed sessions", len(gone))


async def close(engine: Engine) -> None:
    if engine.services.web is not None:
        await engine.services.web.aclose()
