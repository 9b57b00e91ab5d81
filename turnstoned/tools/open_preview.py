"""open_preview: store content for the editor to show, and tell the editor.

A URL is fetched through the guarded fetcher (and asks, like web_fetch); a
file path and ``attachment:<id>`` (content this session already previewed, by
its id) are local reads and do not ask. The content is classified
(``_preview``), capped per kind, stored content-addressed in the session's
preview store, and announced to the editor as ``preview/open`` with its id;
the editor reads the bytes with ``preview/read``. The model gets one line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import msgspec

from turnstoned.net import html
from turnstoned.net.fetch import FetchError
from turnstoned.tools import _preview
from turnstoned.tools._paths import place, read_gate
from turnstoned.tools._preview import NotPreviewable
from turnstoned.tools._web import UrlPlan, approval, screen_for_call
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

ATTACHMENT = "attachment:"


class Args(msgspec.Struct, kw_only=True):
    target: str = ""
    kind: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    target: str
    kind: str
    title: str
    url: UrlPlan | None = None
    path: Path | None = None
    attachment: str = ""


@dataclass(frozen=True, slots=True)
class Loaded:
    body: bytes
    content_type: str
    source: str
    suffix: str
    text: str | None = None  # the decoded text, when the transport said how to decode it


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    target, kind, title = args.target.strip(), args.kind.strip().lower(), args.title.strip()
    if not target:
        return prepare_error("Error: missing target")
    if kind and kind not in _preview.KINDS:
        return prepare_error(f"Error: kind must be one of {list(_preview.KINDS)} (got {kind!r})")
    if ctx.env.services.previews is None:
        return prepare_error("Error: previews are not available in this daemon.")
    if target.lower().startswith(("http://", "https://")):
        plan = screen_for_call("open_preview", target, ctx)
        if isinstance(plan, PreparedCall):
            return plan
        header, preview = approval("open_preview", plan, f"Shown as: {kind or 'detected'}")
        return PreparedCall(header=header, preview=preview, needs_approval=True,
                            approval_label="open_preview", grantable=not plan.private,
                            data=Plan(target, kind, title, url=plan))
    if target.startswith(ATTACHMENT):
        ident = target[len(ATTACHMENT):].strip()
        if not ident:
            return prepare_error("Error: attachment:<id> requires an id")
        return PreparedCall(header=f"⚙ open_preview: {target[:80]}",
                            data=Plan(target, kind, title, attachment=ident))
    where = place(ctx.env, target)
    if where.credential:  # the editor shows a preview as it is: no redaction could apply
        return prepare_error(f"Error: {target} is in a credential store ({where.real}); "
                             "open_preview does not show credential stores.")
    return PreparedCall(header=f"⚙ open_preview: {target[:80]}{where.note()}",
                        data=Plan(target, kind, title, path=Path(where.real)),
                        **read_gate([where]))


async def _from_url(plan: UrlPlan, ctx: ToolContext) -> Loaded:
    web = ctx.env.services.web
    assert web is not None
    try:
        fetched = await web.fetcher.fetch(
            plan.url, allow_private=web.settings.allow_private_network,
            private_origin=plan.private, max_bytes=_preview.MAX_BYTES,
            timeout=web.settings.timeout)
    except FetchError as exc:
        raise NotPreviewable(f"Error: fetch failed: {exc.message}") from exc
    suffix = PurePosixPath(urlsplit(fetched.url).path).suffix
    text = fetched.text() if _preview.sniff(fetched.body) is None else None
    return Loaded(fetched.body, fetched.content_type, fetched.url, suffix, text)


def _from_path(path: Path, shown: str) -> Loaded:
    try:
        if not path.is_file():
            raise NotPreviewable(f"Error: file not found: {shown}")
        if path.stat().st_size > _preview.MAX_BYTES:
            raise NotPreviewable(f"Error: {shown} is larger than {_preview.MAX_BYTES:,} bytes")
        body = path.read_bytes()
    except OSError as exc:
        raise NotPreviewable(f"Error reading {shown}: {exc.strerror or exc}") from exc
    return Loaded(body, "", str(path), path.suffix)


def _from_attachment(ident: str, ctx: ToolContext) -> tuple[Loaded, str]:
    store = ctx.env.services.previews
    assert store is not None
    found = store.get(ctx.env.session_id, ident)
    if found is None:
        raise NotPreviewable(f"Error: attachment not found: {ident}")
    record, path = found
    return Loaded(path.read_bytes(), record.content_type, record.source,
                  PurePosixPath(record.source).suffix), record.kind


async def _load(plan: Plan, ctx: ToolContext) -> tuple[Loaded, str]:
    if plan.url is not None:
        return await _from_url(plan.url, ctx), plan.kind
    if plan.path is not None:
        return await asyncio.to_thread(_from_path, plan.path, plan.target), plan.kind
    loaded, stored_kind = await asyncio.to_thread(_from_attachment, plan.attachment, ctx)
    return loaded, plan.kind or stored_kind


def _title(plan: Plan, kind: str, text: str | None, source: str) -> str:
    if plan.title:
        return plan.title[:200]
    if kind == "web" and text:
        found = html.title(text)
        if found:
            return found
    name = PurePosixPath(urlsplit(source).path if "://" in source else source).name
    return (name or source)[:200]


def _body(loaded: Loaded, kind: str, from_url: bool) -> bytes:
    """The bytes stored: text kinds as UTF-8, web pages from a URL with their ``<base>``."""
    if kind not in _preview.TEXT_KINDS:
        return loaded.body
    if loaded.text is None:
        return _preview.as_utf8(loaded.body, loaded.content_type)
    text = html.with_base(loaded.text, loaded.source) if kind == "web" and from_url else loaded.text
    return text.encode("utf-8")


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    plan: Plan = call.data
    store = ctx.env.services.previews
    assert store is not None
    try:
        loaded, explicit = await _load(plan, ctx)
        if not loaded.body:
            raise NotPreviewable("Error: nothing to preview (empty content)")
        kinded = _preview.resolve(explicit, loaded.body, loaded.content_type, loaded.suffix)
        _preview.check_cap(kinded.kind, len(loaded.body))
        body = _body(loaded, kinded.kind, plan.url is not None)
        _preview.check_cap(kinded.kind, len(body))
    except NotPreviewable as exc:
        return ToolOutput(str(exc), is_error=True)
    title = _title(plan, kinded.kind, loaded.text, loaded.source)
    record = await asyncio.to_thread(store.put, ctx.env.session_id, body, kind=kinded.kind,
                                     title=title, source=loaded.source,
                                     content_type=kinded.content_type)
    ctx.env.services.preview_opened(ctx.env.session_id, ctx.call_id, record,
                                     _preview.CSP.get(record.kind, _preview.CSP_DEFAULT))
    return ToolOutput(f"Preview shown to the user: {title} ({kinded.kind}, {record.size:,} bytes)",
                      summary=f"{kinded.kind} preview {record.id[:12]}")
