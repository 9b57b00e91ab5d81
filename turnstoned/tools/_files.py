"""Shared plumbing for the file tools: paths, decoding, atomic writes, unified diffs.

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


def from_buffer(text: str, disk: bytes) -> bytes:
    """An editor buffer's text as the file's bytes: its BOM and CRLF line endings kept
    (editors hand buffers over with plain newlines)."""
    if b"\r\n" in disk and "\r\n" not in text:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8", errors="surrogatepass")
    bom = "\ufeff".encode()
    return bom + data if disk.startswith(bom) and not data.startswith(bom) else data


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
    """A file decoded for editing: raw text, its LF view, and how to write it back.

    ``style`` is "lf" (no CRLF), "crlf" (every newline is CRLF) or "mixed"; only a
    mixed file needs the per-newline map ``crlf_at`` (indices in ``text`` of the
    newlines that are CRLF on disk).
    """

    raw: str
    text: str
    bom: bool
    style: str
    crlf_at: list[int]

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
        crlf = raw.count("\r\n")
        if not crlf:
            return cls(raw=raw, text=raw, bom=bom, style="lf", crlf_at=[])
        text = raw.replace("\r\n", "\n")
        if crlf == raw.count("\n"):
            return cls(raw=raw, text=text, bom=bom, style="crlf", crlf_at=[])
        crlf_at: list[int] = []
        pos = raw.find("\r\n")
        while pos != -1:
            crlf_at.append(pos - len(crlf_at))
            pos = raw.find("\r\n", pos + 2)
        return cls(raw=raw, text=text, bom=bom, style="mixed", crlf_at=crlf_at)

    def apply(self, spans: Sequence[tuple[int, int, str]]) -> tuple[str, str]:
        """Replace sorted, disjoint ``(start, end, new)`` spans of ``text``.

        Returns the new LF text and the new raw text. In a mixed file each
        replacement takes the line ending of the region it replaces (or the
        file's usual one); elsewhere the file's one ending is used throughout.
        """
        if self.style == "mixed":
            return self._apply_mixed(spans)
        parts: list[str] = []
        prev = 0
        for start, end, new in spans:
            parts += (self.text[prev:start], new.replace("\r\n", "\n"))
            prev = end
        parts.append(self.text[prev:])
        text = "".join(parts)
        return text, (text.replace("\n", "\r\n") if self.style == "crlf" else text)

    def _raw_index(self, i: int) -> int:
        return i + bisect_left(self.crlf_at, i)

    def _usual_ending(self) -> str:
        bare_lf = self.text.count("\n") - len(self.crlf_at)
        return "\r\n" if len(self.crlf_at) > bare_lf else "\n"

    def _apply_mixed(self, spans: Sequence[tuple[int, int, str]]) -> tuple[str, str]:
        text_parts: list[str] = []
        raw_parts: list[str] = []
        t_prev = r_prev = 0
        usual = self._usual_ending()
        for start, end, new in spans:
            new = new.replace("\r\n", "\n")
            r_start, r_end = self._raw_index(start), self._raw_index(end)
            segment = self.raw[r_start:r_end]
            crlf = segment.count("\r\n")
            lf = segment.count("\n") - crlf
            ending = usual if crlf == lf else ("\r\n" if crlf > lf else "\n")
            text_parts += (self.text[t_prev:start], new)
            raw_parts += (self.raw[r_prev:r_start], new.replace("\n", ending))
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
    a: Sequence[str], b: Sequence[str], bases: tuple[int, int], context: int
) -> Iterator[str]:
    """Unified-diff hunks for two windows of lines whose first lines are ``bases`` (0-based).

    Everything outside the windows must be equal on both sides.
    """
    a_base, b_base = bases
    matcher = difflib.SequenceMatcher(None, a, b)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        yield f"@@ -{_range(a_base + i1, i2 - i1)} +{_range(b_base + j1, j2 - j1)} @@\n"
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                yield from (_emit(" ", line) for line in a[x1:x2])
                continue
            yield from (_emit("-", line) for line in a[x1:x2])
            yield from (_emit("+", line) for line in b[y1:y2])


def changed_window(a: Sequence[str], b: Sequence[str], context: int) -> tuple[int, int, int, int]:
    """The smallest window (a_lo, a_hi, b_lo, b_hi) holding every difference plus context."""
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
    a_lo, a_hi, b_lo, b_hi = changed_window(a, b, context)
    yield from hunks(a[a_lo:a_hi], b[b_lo:b_hi], (a_lo, b_lo), context)


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
    """A diff for an approval prompt, cut after ``max_chars``.

    Stops consuming ``lines`` at the cap, so a lazy diff is not computed further.
    """
    kept: list[str] = []
    size = 0
    for line in lines:
        if size >= max_chars:
            return "".join(kept).rstrip("\n") + "\n... (preview truncated; the change goes on)"
        kept.append(line)
        size += len(line)
    return "".join(kept).rstrip("\n")
