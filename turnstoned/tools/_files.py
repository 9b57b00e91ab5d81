"""Shared plumbing for the file tools: paths, decoding, atomic writes, diffs, clipping.

Line endings: the model only ever sees ``\\n``. A file is decoded once into a
:class:`TextDoc` that keeps the raw text (with its CRLFs) next to an
LF-normalised view; edits are located in the normalised view and written back
into the raw text, so untouched bytes stay exactly as they were.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import os
import secrets
import stat
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

SNIFF_BYTES = 8192
PREVIEW_CAP = 16_384  # chars of an approval preview
IMAGE_MAX_BYTES = 4 * 1024 * 1024
IMAGE_MIME: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tiff": "image/tiff",
    ".tif": "image/tiff",
    ".ico": "image/x-icon",
}
_NO_EOL = "\\ No newline at end of file\n"


class FileProblem(Exception):
    """A file cannot be used as asked; ``str(exc)`` is the model-facing error text."""


# -- paths and small coercions -------------------------------------------------


def real_key(path: Path) -> str:
    """The read-set key for ``path``: its real path, symlinks resolved."""
    return os.path.realpath(path)


def symlink_note(path: Path) -> str:
    """`` → target`` when ``path`` is a symlink, else an empty string."""
    return f" → {os.path.realpath(path)}" if path.is_symlink() else ""


def as_int(value: object) -> int | None:
    """``value`` as an int the way the model means it; None when it is not one."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_bool(value: object) -> bool:
    """The lenient boolean dialect: true, or "true"/"1"/"yes"/"on", or a non-zero number."""
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes", "on"}
    if isinstance(value, (bool, int, float)):
        return bool(value)
    return False


# -- reading ------------------------------------------------------------------


def not_found(display: str) -> str:
    return f"Error: {display} not found"


def binary_error(display: str) -> str:
    return (
        f"Error: {display} appears to be a binary file (contains null bytes). "
        "Use bash to inspect binary files."
    )


def is_binary(head: bytes) -> bool:
    """NUL in the first 8 KiB: the same test read_file, diff_file and edit_file use."""
    return b"\0" in head[:SNIFF_BYTES]


def read_bytes(path: Path, display: str) -> bytes:
    """The whole file; raises FileProblem with read_file's texts for the usual failures."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise FileProblem(not_found(display)) from exc
    except IsADirectoryError as exc:
        raise FileProblem(f"Error: {display} is a directory, not a file") from exc
    except OSError as exc:
        raise FileProblem(f"Error reading {display}: {exc}") from exc
    if is_binary(data):
        raise FileProblem(binary_error(display))
    return data


def decode_lenient(data: bytes) -> str:
    """Text for display and diffs: UTF-8 (BOM dropped), bad bytes as U+FFFD, LF endings."""
    text = data.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def split_keepends(text: str) -> list[str]:
    """Lines split on ``\\n`` only (unlike str.splitlines), each keeping its newline."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass(slots=True)
class TextDoc:
    """A file decoded for editing: raw text, its LF view, and how to write it back."""

    raw: str
    text: str
    bom: bool
    crlf_at: list[int]  # indices in ``text`` of the "\n"s that are CRLF on disk

    @classmethod
    def decode(cls, data: bytes, display: str) -> TextDoc:
        """Decode UTF-8 (keeping a BOM); anything else is refused with a clear reason."""
        if is_binary(data):
            raise FileProblem(binary_error(display))
        bom = data.startswith(codecs.BOM_UTF8)
        body = data[len(codecs.BOM_UTF8) :] if bom else data
        try:
            raw = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = exc.start + (3 if bom else 0)
            raise FileProblem(
                f"Error: {display} is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset "
                f"{offset} cannot be decoded). edit_file only edits UTF-8 files; convert it "
                "first (e.g. iconv in bash) or rewrite it with write_file."
            ) from exc
        return cls.from_raw(raw, bom=bom)

    @classmethod
    def from_raw(cls, raw: str, *, bom: bool = False) -> TextDoc:
        if "\r\n" not in raw:
            return cls(raw=raw, text=raw, bom=bom, crlf_at=[])
        crlf_at: list[int] = []
        pos = raw.find("\r\n")
        while pos != -1:
            crlf_at.append(pos - len(crlf_at))
            pos = raw.find("\r\n", pos + 2)
        return cls(raw=raw, text=raw.replace("\r\n", "\n"), bom=bom, crlf_at=crlf_at)

    def raw_index(self, i: int) -> int:
        """Index in ``raw`` of the character at index ``i`` of ``text``."""
        return i + bisect_left(self.crlf_at, i) if self.crlf_at else i

    def usual_ending(self) -> str:
        """The line ending most lines of the file use (LF on a tie)."""
        if not self.crlf_at:
            return "\n"
        bare_lf = self.text.count("\n") - len(self.crlf_at)
        return "\r\n" if len(self.crlf_at) > bare_lf else "\n"

    @staticmethod
    def _ending_for(segment: str, usual: str) -> str:
        crlf = segment.count("\r\n")
        lf = segment.count("\n") - crlf
        if crlf != lf:
            return "\r\n" if crlf > lf else "\n"
        return usual

    def apply(self, spans: Sequence[tuple[int, int, str]]) -> tuple[str, str]:
        """Replace sorted, disjoint ``(start, end, new)`` spans of ``text``.

        Returns the new LF text and the new raw text. Each replacement takes the
        line ending of the region it replaces (or the file's usual one).
        """
        text_parts: list[str] = []
        raw_parts: list[str] = []
        t_prev = r_prev = 0
        usual = self.usual_ending()
        for start, end, new in spans:
            new = new.replace("\r\n", "\n")
            r_start, r_end = self.raw_index(start), self.raw_index(end)
            text_parts += (self.text[t_prev:start], new)
            ending = self._ending_for(self.raw[r_start:r_end], usual) if "\n" in new else "\n"
            raw_new = new.replace("\n", "\r\n") if ending == "\r\n" else new
            raw_parts += (self.raw[r_prev:r_start], raw_new)
            t_prev, r_prev = end, r_end
        text_parts.append(self.text[t_prev:])
        raw_parts.append(self.raw[r_prev:])
        return "".join(text_parts), "".join(raw_parts)

    def encode(self, raw: str) -> bytes:
        """Bytes to write for ``raw``, with the BOM the file had."""
        return (codecs.BOM_UTF8 if self.bom else b"") + raw.encode("utf-8")


# -- writing ------------------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> None:
    """Replace the file at ``path`` (through symlinks) with ``data``, all or nothing.

    Writes a temp file in the target's directory, fsyncs it, then renames it
    over the target, so a crash leaves either the old or the new file. An
    existing file keeps its mode (and owner, where permitted); a new one gets
    the usual umask-derived mode.
    """
    target = Path(os.path.realpath(path))
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    tmp, fd = _open_temp(target, create_mode=0o600 if st else 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if st is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(st.st_mode))
                _keep_owner(handle.fileno(), st)
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _open_temp(target: Path, *, create_mode: int) -> tuple[Path, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, flags, create_mode)
        except FileExistsError:
            continue


def _keep_owner(fd: int, st: os.stat_result) -> None:
    if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()):
        return
    # Not ours to give away (not root): the new file keeps our ownership.
    with contextlib.suppress(PermissionError):
        os.fchown(fd, st.st_uid, st.st_gid)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the rename itself is done
    finally:
        os.close(fd)


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created if missing) and fsync it."""
    with open(path, "ab") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


# -- unified diffs ---------------------------------------------------------------


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _emit(prefix: str, line: str) -> str:
    return f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n{_NO_EOL}"


def hunks(
    a: Sequence[str], b: Sequence[str], window: tuple[int, int, int, int], context: int
) -> Iterator[str]:
    """Unified-diff hunks for ``a[a_lo:a_hi]`` vs ``b[b_lo:b_hi]`` (lines outside are equal)."""
    a_lo, a_hi, b_lo, b_hi = window
    matcher = difflib.SequenceMatcher(None, a[a_lo:a_hi], b[b_lo:b_hi])
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        yield f"@@ -{_range(a_lo + i1, i2 - i1)} +{_range(b_lo + j1, j2 - j1)} @@\n"
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                yield from (_emit(" ", line) for line in a[a_lo + x1 : a_lo + x2])
                continue
            yield from (_emit("-", line) for line in a[a_lo + x1 : a_lo + x2])
            yield from (_emit("+", line) for line in b[b_lo + y1 : b_lo + y2])


def changed_window(a: Sequence[str], b: Sequence[str], context: int) -> tuple[int, int, int, int]:
    """The smallest window holding every difference plus ``context`` lines around it."""
    limit = min(len(a), len(b))
    prefix = 0
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    lo = max(0, prefix - context)
    return lo, min(len(a), len(a) - suffix + context), lo, min(len(b), len(b) - suffix + context)


def unified_diff(
    a: Sequence[str], b: Sequence[str], *, fromfile: str, tofile: str, context: int = 3
) -> Iterator[str]:
    """A unified diff of two line lists (lines keep their newlines); nothing when equal."""
    if list(a) == list(b):
        return
    yield f"--- {fromfile}\n"
    yield f"+++ {tofile}\n"
    yield from hunks(a, b, changed_window(a, b, context), context)


def collect(lines: Iterable[str], max_chars: int) -> tuple[str, int, int]:
    """Join lines until ``max_chars`` is reached, still counting the rest.

    Returns (text, lines kept, lines in total).
    """
    kept: list[str] = []
    size = total = 0
    for line in lines:
        total += 1
        if size < max_chars:
            kept.append(line)
            size += len(line)
    return "".join(kept), len(kept), total


def capped_preview(lines: Iterable[str], max_chars: int = PREVIEW_CAP) -> str:
    """A diff for an approval prompt, cut after ``max_chars`` with a count of what was left."""
    text, kept, total = collect(lines, max_chars)
    text = text.rstrip("\n")
    if kept < total:
        text += f"\n... ({total - kept} more diff lines not shown)"
    return text


# -- clipping a stream of lines like truncate_middle -------------------------------


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
        omitted = self.size - 2 * self.half
        return (
            f"{self._head}\n\n... [{omitted} chars truncated — output exceeded "
            f"{self.limit} char limit] ...\n\n{tail}"
        )
