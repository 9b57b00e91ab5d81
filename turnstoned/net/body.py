"""Response bodies: decompressed under a byte ceiling, decoded to text.

Decompression is done here, a bounded step at a time, rather than by the HTTP
client: a few kilobytes of gzip can inflate to gigabytes, and the ceiling has
to hold for the decoded bytes, not just the bytes on the wire.
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Iterator

SUPPORTED_ENCODINGS = "gzip, deflate"
_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""",
                      re.IGNORECASE)


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"response body exceeded the {limit:,}-byte fetch limit")


class BadEncoding(Exception):
    """The body's content-encoding is unknown or its data is corrupt."""


class Decoder:
    """Feeds wire bytes in, yields decoded bytes, never more than ``limit`` in all."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise BadEncoding(f"unsupported content-encoding {content_encoding!r}")
        self.coding = codings[0] if codings else ""
        self.limit = limit
        self.total = 0
        self._z: zlib._Decompress | None = None
        self._started = False

    def _new(self, first: bytes) -> zlib._Decompress:
        if self.coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send
            zlib_header = len(first) >= 2 and first[0] & 0x0F == 8 and (
                (first[0] << 8) | first[1]) % 31 == 0
            return zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        return zlib.decompressobj(16 + zlib.MAX_WBITS)

    def _count(self, piece: bytes) -> bytes:
        self.total += len(piece)
        if self.total > self.limit:
            raise BodyTooLarge(self.limit)
        return piece

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self.coding:
            yield self._count(data)
            return
        while data:
            if self._z is None:
                if self._started and not (self.coding != "deflate" and data[:2] == b"\x1f\x8b"):
                    return  # bytes after the end of the stream are ignored
                self._z, self._started = self._new(data), True
            z = self._z
            try:
                # at most one byte past the ceiling per step: enough to know it was crossed
                piece = z.decompress(data, self.limit - self.total + 1)
                while True:
                    if piece:
                        yield self._count(piece)
                    if not z.unconsumed_tail:
                        break
                    piece = z.decompress(z.unconsumed_tail, self.limit - self.total + 1)
            except zlib.error as exc:
                raise BadEncoding(f"corrupt {self.coding} data: {exc}") from exc
            if not z.eof:
                return
            self._z, data = None, z.unused_data  # another gzip member may follow

    def flush(self) -> Iterator[bytes]:
        if self._z is not None:
            piece = self._z.flush()
            if piece:
                yield self._count(piece)


def charset(content_type: str, head: bytes) -> str:
    """The body's charset: the header's, else a ``<meta>`` one, else a BOM's, else UTF-8."""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return _known(value.strip().strip("'\""))
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    m = _CHARSET.search(head[:4096])
    if m:
        return _known(m.group(1).decode("ascii"))
    return "utf-8"


def _known(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def decode_text(body: bytes, content_type: str) -> str:
    """``body`` as text by its charset; undecodable bytes become U+FFFD."""
    return body.decode(charset(content_type, body[:4096]), errors="replace")
