"""Content-Length framing, read liberally and resynchronised on the next valid header.

Accepted: any case of ``Content-Length``, any spaces around the colon and after
the number, LF or CRLF line endings, other header lines (``Content-Type``), a
missing blank line before the body, garbage between frames, and a length counted
in characters instead of bytes (the short body is completed up to the next
header). A frame over the size limit is skipped without being buffered.

Resynchronising is safe because a header (``content-length: N`` followed by a
raw line break) cannot occur inside a JSON text: a raw line break is not allowed
inside a JSON string, and outside a string the words are not JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

DEFAULT_MAX_FRAME = 64 << 20

_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n", re.IGNORECASE)
_OTHER_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:[^\n]*\n")
# Where a message's id usually is: the top level, near the start or the end.
_ID = re.compile(rb'"id"[ \t\r\n]*:[ \t\r\n]*(-?\d{1,18}|"(?:[^"\\\r\n]|\\.){0,200}")')
_KEEP = 256  # bytes kept when skipping: a header may be split across reads
_SNIFF = 4096  # bytes of a skipped body searched for its id
_decode = msgspec.json.decode


@dataclass(frozen=True, slots=True)
class Message:
    """A frame whose body is JSON."""

    value: Any


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A frame whose body is not JSON (answer -32700); ``id`` if one could be seen."""

    reason: str
    id: int | str | None = None


@dataclass(frozen=True, slots=True)
class Oversized:
    """A frame over the size limit, skipped (answer -32600); ``id`` if one could be seen."""

    length: int
    id: int | str | None = None


Event = Message | Unreadable | Oversized


def sniff_id(data: bytes) -> int | str | None:
    """The last plausible top-level ``"id"`` in ``data``, for answering what cannot be parsed."""
    found = None
    for match in _ID.finditer(data):
        found = match.group(1)
    if found is None:
        return None
    try:
        value = _decode(found)
    except msgspec.MsgspecError:
        return None
    return value if isinstance(value, int | str) else None


def _try_decode(body: bytes | memoryview) -> tuple[Any, str | None]:
    try:
        return _decode(body), None
    except msgspec.DecodeError as exc:
        return None, str(exc)
    except (msgspec.MsgspecError, RecursionError, ValueError) as exc:
        return None, f"not usable JSON: {exc}"


class FrameReader:
    """Turns bytes into events; ``feed`` as data arrives, ``flush`` when it stalls."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self.garbage = 0  # bytes skipped between frames, for the log
        self._buf = bytearray()
        self._length = -1  # body length of the frame being read; -1: looking for a header
        self._skip = 0  # bytes still to discard of an oversized frame
        self._declared = 0
        self._head = b""  # the start and the end of an oversized body, for its id
        self._tail = b""
        self._stalled = False  # a body that is not JSON yet may be completed by more bytes

    @property
    def waiting(self) -> bool:
        """A short body is waiting for the bytes that may complete it."""
        return self._stalled

    def feed(self, data: bytes) -> list[Event]:
        self._buf += data
        out: list[Event] = []
        self._run(out, final=False)
        return out

    def flush(self) -> list[Event]:
        """Give up waiting: a stalled body is reported as unreadable."""
        out: list[Event] = []
        if self._stalled:
            self._run(out, final=True)
        return out

    def _run(self, out: list[Event], final: bool) -> None:
        pos = 0
        while True:
            if self._skip:
                pos = self._skip_body(pos, out)
                if self._skip:
                    break
            elif self._length < 0:
                pos, found = self._header(pos)
                if not found:
                    break
            else:
                end = self._body(pos, out, final)
                if end is None:
                    break
                pos, final = end, False
        if pos:
            del self._buf[:pos]

    def _header(self, pos: int) -> tuple[int, bool]:
        """Find the next header block: ``(where its body starts, True)``, or
        ``(where to look again, False)`` while no complete header block is buffered."""
        buf = self._buf
        match = _HEADER.search(buf, pos)
        if match is None:
            resume = max(pos, len(buf) - _KEEP)
            self.garbage += resume - pos
            return resume, False
        self.garbage += match.start() - pos
        i = match.end()
        while True:
            if buf.startswith(b"\r\n", i) or buf.startswith(b"\n", i):
                i += 1 if buf[i] == 10 else 2
                break
            other = _OTHER_HEADER.match(buf, i)
            if other is not None:
                i = other.end()
                continue
            rest = bytes(buf[i:i + 1024])
            if rest in (b"", b"\r") or (rest[:1].isalpha() and b"\n" not in rest and len(rest) < 1024):
                return match.start(), False  # the header block is incomplete
            break  # no blank line: the body starts right after the headers
        digits = match.group(1)
        length = int(digits) if len(digits) <= 18 else 1 << 62
        if length > self.max_frame:
            self._skip, self._declared, self._head, self._tail = length, length, b"", b""
        else:
            self._length = length
        return i, True

    def _skip_body(self, pos: int, out: list[Event]) -> int:
        """Discard an oversized body, stopping early at a new header."""
        buf = self._buf
        avail = len(buf) - pos
        take = self._skip if self._skip <= avail else max(0, avail - _KEEP)
        match = _HEADER.search(buf, pos, pos + min(self._skip, avail))
        if match is not None:
            take = match.start() - pos
        if len(self._head) < _SNIFF:
            self._head += bytes(buf[pos:pos + min(take, _SNIFF - len(self._head))])
        self._tail = (self._tail + bytes(buf[max(pos, pos + take - _SNIFF):pos + take]))[-_SNIFF:]
        self._skip = 0 if match is not None else self._skip - take
        if not self._skip:
            found = sniff_id(self._head)
            out.append(Oversized(self._declared, found if found is not None else sniff_id(self._tail)))
            self._head = self._tail = b""
        return pos + take

    def _body(self, pos: int, out: list[Event], final: bool) -> int | None:
        """Decode the body at ``pos``; None when more bytes are needed."""
        end = pos + self._length
        if len(self._buf) < end:
            return None
        value, error = _try_decode(bytes(self._buf[pos:end]))
        if error is None:
            self._length, self._stalled = -1, False
            out.append(Message(value))
            return end
        return self._recover(pos, end, error, out, final)

    def _recover(self, pos: int, end: int, error: str, out: list[Event], final: bool) -> int | None:
        """A body that is not JSON: its length may be counted in characters (too short) or
        overstated (the next frame inside it). Try both before calling it unreadable."""
        buf = self._buf
        nxt = _HEADER.search(buf, end)
        inner = _HEADER.search(buf, pos)
        cuts = [nxt.start() if nxt else len(buf)]
        if inner is not None and inner.start() < end:
            cuts.append(inner.start())
        for cut in cuts:
            if cut in (pos, end):
                continue
            value, failed = _try_decode(bytes(buf[pos:cut]).rstrip())
            if failed is None:
                self._length, self._stalled = -1, False
                out.append(Message(value))
                return cut
        if nxt is None and not final and "truncated" in error:
            self._stalled = True  # the rest of a short body may still be on its way
            return None
        self._length, self._stalled = -1, False
        out.append(Unreadable(error, sniff_id(bytes(buf[pos:min(end, pos + _SNIFF)]))))
        return end
