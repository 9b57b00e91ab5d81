"""read_file: numbered lines of a text file, or an image for models that can see.

Text is streamed line by line, so a window of a huge file costs only that
window (plus a fast newline count of the rest for the summary). Reading marks
the file, by real path, as read for edit_file's guard.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import io
import threading
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from turnstoned.tools._files import (
    IMAGE_MAX_BYTES,
    IMAGE_MIME,
    SNIFF_BYTES,
    FileProblem,
    binary_error,
    is_binary,
    not_found,
)
from turnstoned.tools._lenient import as_int
from turnstoned.tools._paths import place, read_gate
from turnstoned.tools.base import (
    PreparedCall,
    ToolContext,
    ToolOutput,
    prepare_error,
    truncation_notice,
)

_CHECK_EVERY = 65_536  # lines between looks at the stop flag
_COUNT_CHUNK = 1 << 20
_KEY_LINES_MAX = 1024  # a private key block is far shorter; longer runs are not one


class Args(msgspec.Struct, kw_only=True):
    path: str = ""
    offset: int | float | str | None = None
    limit: int | float | str | None = None


@dataclass(slots=True)
class _Request:
    path: Path
    display: str
    key: str
    added: bool  # this call put the path in the read set (so a failure takes it out again)
    start: int
    limit: int | None
    buffer: str | None = None  # the editor's unsaved text of the file, read instead of it


class HeadTail:
    """Lines joined by ``\\n`` and cut like ``base.truncate_middle``, in bounded memory.

    Feeding a million lines keeps only ``limit`` characters: the head, a tail
    window and the total length, which is all truncate_middle's result needs.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.half = limit // 2
        self.size = 0
        self.count = 0
        self._full: list[str] | None = []
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_len = 0

    def add(self, line: str) -> None:
        piece = line if self.count == 0 else "\n" + line
        self.count += 1
        self.size += len(piece)
        if self._full is not None:
            self._full.append(piece)
            if self.limit <= 0 or self.size <= self.limit:
                return
            joined = "".join(self._full)
            self._full = None
            self._head = joined[: self.half]
            piece = joined[self.half :]
        self._tail.append(piece)
        self._tail_len += len(piece)
        while self._tail and self._tail_len - len(self._tail[0]) >= self.half:
            self._tail_len -= len(self._tail.popleft())

    def text(self) -> str:
        if self._full is not None:
            return "".join(self._full)
        tail = "".join(self._tail)
        tail = tail[len(tail) - self.half :] if self.half else ""
        notice = truncation_notice(self.size - 2 * self.half, self.limit)
        return f"{self._head}\n\n{notice}\n\n{tail}"


def _window(args: Args) -> tuple[int, int | None]:
    offset = None if args.offset is None else as_int(args.offset)
    limit = None if args.limit is None else as_int(args.limit)
    if (args.offset is not None and offset is None) or (args.limit is not None and limit is None):
        raise ValueError(
            f"Error: offset/limit must be integers (got offset={args.offset!r}, "
            f"limit={args.limit!r})"
        )
    if offset is not None and offset < 1:
        raise ValueError(f"Error: offset must be >= 1 (got {offset})")
    if limit is not None and limit < 1:
        raise ValueError(f"Error: limit must be >= 1 (got {limit})")
    return offset or 1, limit


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    display = args.path.strip()
    if not display:
        return prepare_error("Error: missing path")
    try:
        start, limit = _window(args)
    except ValueError as exc:
        return prepare_error(str(exc))
    path = ctx.env.resolve(display)
    where = place(ctx.env, display)
    gate = read_gate([where])
    key = where.real
    added = key not in ctx.env.read_set
    if not gate["needs_approval"]:
        # Marked now, not after execute, so an edit_file later in the same batch passes
        # the guard; a read that must be approved first is marked when it runs.
        ctx.env.read_set.add(key)
    span = ""
    if args.offset is not None or limit is not None:
        span = f" (lines {start}-{start + limit - 1})" if limit else f" (from line {start})"
    return PreparedCall(
        header=f"⚙ read_file: {display}{where.note()}{span}",
        **gate,
        data=_Request(path, display, key, added, start, limit, ctx.env.buffers.get(key)),
    )


def _image(request: _Request, vision: bool) -> ToolOutput:
    try:
        size = request.path.stat().st_size
    except FileNotFoundError as exc:
        raise FileProblem(not_found(request.display)) from exc
    except OSError as exc:
        raise FileProblem(f"Error reading {request.display}: {exc}") from exc
    if not vision:
        return ToolOutput(
            content=f"Binary image file: {request.display} ({size} bytes). "
            "Current model does not support vision.",
            summary=f"image ({size} bytes)",
        )
    if size > IMAGE_MAX_BYTES:
        raise FileProblem(
            f"Error: image {request.display} is {size / (1024 * 1024):.1f} MB, "
            "exceeds 4 MB limit for vision."
        )
    try:
        data = request.path.read_bytes()
    except OSError as exc:
        raise FileProblem(f"Error reading {request.display}: {exc}") from exc
    mime = IMAGE_MIME.get(request.path.suffix.lower(), "image/png")
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": f"Image file: {request.display} ({len(data)} bytes)"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    return ToolOutput(content=parts, summary=f"image ({len(data)} bytes)")


def _open(request: _Request) -> BinaryIO:
    if request.buffer is not None:
        return io.BytesIO(request.buffer.encode("utf-8", errors="surrogatepass"))
    try:
        return open(request.path, "rb")
    except FileNotFoundError as exc:
        raise FileProblem(not_found(request.display)) from exc
    except IsADirectoryError as exc:
        raise FileProblem(f"Error: {request.display} is a directory, not a file") from exc
    except OSError as exc:
        raise FileProblem(f"Error reading {request.display}: {exc}") from exc


def _lines_left(handle: BinaryIO) -> int:
    count, last = 0, b"\n"
    while chunk := handle.read(_COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _held_key_lines(
    held: list[tuple[int, bytes]], number: int, raw: bytes
) -> list[tuple[int, bytes]]:
    """The lines skipped so far since an unclosed private key's BEGIN line (else none)."""
    if b"PRIVATE KEY" in raw and b"-----" in raw:
        if b"-----END " in raw:
            return []
        if b"-----BEGIN " in raw:
            return [(number, raw)]
    if held and len(held) < _KEY_LINES_MAX:
        held.append((number, raw))
        return held
    return []


def _decode(number: int, raw: bytes) -> tuple[str, bool]:
    """The numbered display line and whether the raw bytes were not valid UTF-8."""
    if number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        line, bad = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        line, bad = raw.decode("utf-8", errors="replace"), True
    return f"{number:>4}\t{line.rstrip()}", bad


def _render(request: _Request, handle: BinaryIO, cap: int, stop: threading.Event) -> ToolOutput:
    clip = HeadTail(cap)
    last = request.start - 1 + request.limit if request.limit else None
    total = 0
    first = request.start
    bad_utf8 = False
    held: list[tuple[int, bytes]] = []
    for number, raw in enumerate(handle, 1):
        total = number
        if number < request.start:
            held = _held_key_lines(held, number, raw)
            continue
        if last is not None and number > last:
            total += _lines_left(handle)
            break
        if held:
            # The window opens inside a private key: it starts at the key's BEGIN line
            # instead, so the output guard sees the whole block and hides it.
            first = held[0][0]
            for held_number, held_raw in held:
                line, bad = _decode(held_number, held_raw)
                clip.add(line)
                bad_utf8 |= bad
            held = []
        line, bad = _decode(number, raw)
        clip.add(line)
        bad_utf8 |= bad
        if number % _CHECK_EVERY == 0 and stop.is_set():
            raise FileProblem(f"Error: reading {request.display} was cancelled")
    if not clip.count:
        return ToolOutput(content="(empty file)", summary="0 lines")
    text = clip.text()
    if bad_utf8:
        text += "\n(note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd)"
    shown = clip.count
    if first == 1 and shown == total:
        return ToolOutput(content=text, summary=f"{shown} lines")
    end = first + shown - 1
    return ToolOutput(content=text, summary=f"{shown} lines (lines {first}-{end} of {total})")


def _read(request: _Request, vision: bool, cap: int, stop: threading.Event) -> ToolOutput:
    if request.path.suffix.lower() in IMAGE_MIME:
        return _image(request, vision)
    with _open(request) as handle:
        try:
            head = handle.read(SNIFF_BYTES)
        except OSError as exc:
            raise FileProblem(f"Error reading {request.display}: {exc}") from exc
        if is_binary(head):
            raise FileProblem(binary_error(request.display))
        handle.seek(0)
        try:
            return _render(request, handle, cap, stop)
        except OSError as exc:
            raise FileProblem(f"Error reading {request.display}: {exc}") from exc


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    request: _Request = call.data
    stop = threading.Event()
    vision = ctx.env.settings.supports_vision
    ctx.env.read_set.add(request.key)
    try:
        out = await asyncio.to_thread(_read, request, vision, ctx.env.output_cap(), stop)
    except FileProblem as exc:
        if request.added:
            ctx.env.read_set.discard(request.key)
        return ToolOutput(content=str(exc), is_error=True)
    finally:
        stop.set()
    if request.buffer is not None and isinstance(out.content, str):
        note = (f"[{request.display} has unsaved changes in the editor: this is the text the "
                "user sees, not yet saved to disk]\n")
        out = replace(out, content=note + out.content)
    return out
