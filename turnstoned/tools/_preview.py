"""Preview kinds: which kind content is, the size caps, and the text it is stored as.

Precedence: an explicit kind (image and pdf must pass the magic-byte check,
text kinds must hold no NUL byte); the magic bytes (PNG, JPEG, GIF, WebP,
PDF); the transport's content type; the file extension; valid UTF-8 is text.
Images and PDFs are only ever recognised by their bytes, so a renderer is
never handed something that merely claims to be one.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

KINDS = ("web", "pdf", "image", "table", "text", "markdown")
TEXT_KINDS = frozenset({"web", "table", "text", "markdown"})
KIB, MIB = 1 << 10, 1 << 20
CAPS = {"web": 4 * MIB, "pdf": 32 * MIB, "image": 4 * MIB, "table": 2 * MIB,
        "text": 512 * KIB, "markdown": 512 * KIB}
MAX_BYTES = max(CAPS.values())
# How the editor should render each kind: no scripts and no network loads for pages
# (inline styles and data: images only), nothing at all for the rest. PDFs go to a viewer.
CSP = {"web": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
              "sandbox",
       "pdf": ""}
CSP_DEFAULT = "default-src 'none'; sandbox"

_EXTENSIONS = {".html": "web", ".htm": "web", ".csv": "table", ".tsv": "table",
               ".json": "table", ".md": "markdown", ".markdown": "markdown"}
_TABLE_TYPES = {".csv": "text/csv", ".tsv": "text/tab-separated-values",
                ".json": "application/json"}
_TABLE_MIMES = {"text/csv": "text/csv", "text/tab-separated-values": "text/tab-separated-values",
                "application/json": "application/json", "text/json": "application/json"}


class NotPreviewable(Exception):
    """The content cannot be shown as asked; the message is model-facing."""


@dataclass(frozen=True, slots=True)
class Kinded:
    kind: str
    content_type: str


def sniff(body: bytes) -> Kinded | None:
    """An image or PDF recognised by its first bytes."""
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return Kinded("image", "image/png")
    if body.startswith(b"\xff\xd8\xff"):
        return Kinded("image", "image/jpeg")
    if body.startswith((b"GIF87a", b"GIF89a")):
        return Kinded("image", "image/gif")
    if len(body) >= 12 and body.startswith(b"RIFF") and body[8:12] == b"WEBP":
        return Kinded("image", "image/webp")
    if body.startswith(b"%PDF-"):
        return Kinded("pdf", "application/pdf")
    return None


def _mime(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _text_type(kind: str, mime: str, suffix: str) -> str:
    if kind == "web":
        return "text/html"
    if kind == "markdown":
        return "text/markdown"
    if kind == "table":
        return _TABLE_MIMES.get(mime) or _TABLE_TYPES.get(suffix, "text/csv")
    return "text/plain"


def resolve(explicit: str, body: bytes, content_type: str, suffix: str) -> Kinded:
    """The kind to show ``body`` as; ``NotPreviewable`` says why it cannot be shown."""
    sniffed, mime, suffix = sniff(body), _mime(content_type), suffix.lower()
    has_nul = b"\0" in body
    if explicit:
        if explicit in ("image", "pdf"):
            if sniffed is None or sniffed.kind != explicit:
                raise NotPreviewable(f"Error: the content is not a valid {explicit} "
                                     "(its first bytes say otherwise)")
            return sniffed
        if has_nul:
            raise NotPreviewable(f"Error: binary content cannot be shown as {explicit}")
        return Kinded(explicit, _text_type(explicit, mime, suffix))
    if sniffed is not None:
        return sniffed
    if mime == "application/pdf" or suffix == ".pdf" or (
            mime.startswith("image/") and "svg" not in mime):
        raise NotPreviewable(f"Error: content is not previewable: it claims to be "
                             f"{mime or suffix} but its bytes are not")
    kind = ""
    if "html" in mime:
        kind = "web"
    elif mime in _TABLE_MIMES:
        kind = "table"
    elif mime == "text/markdown":
        kind = "markdown"
    elif mime.startswith("text/"):
        kind = "text"
    if not kind:
        kind = _EXTENSIONS.get(suffix, "")
    if not kind and not has_nul and _is_utf8(body):
        kind = "text"
    if not kind or has_nul:
        shown = content_type or "unknown"
        raise NotPreviewable(f"Error: content is not previewable (content-type {shown}) — "
                             f"supported kinds: {', '.join(KINDS)}")
    return Kinded(kind, _text_type(kind, mime, suffix))


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def as_utf8(body: bytes, content_type: str) -> bytes:
    """Text bytes re-encoded as UTF-8: the declared charset, else UTF-8, else cp1252."""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            try:
                return body.decode(codecs.lookup(value.strip().strip("'\"")).name,
                                   errors="replace").encode("utf-8")
            except LookupError:
                break
    if _is_utf8(body):
        return body.removeprefix(codecs.BOM_UTF8)
    return body.decode("cp1252", errors="replace").encode("utf-8")


def check_cap(kind: str, size: int) -> None:
    cap = CAPS[kind]
    if size > cap:
        raise NotPreviewable(f"Error: {kind} content too large to preview ({size:,} bytes; "
                             f"cap {cap:,})")
