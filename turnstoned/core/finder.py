"""Finding files for @-mentions, and what a mention gives the model.

``Finder`` keeps one ``search.fuzzy.FileIndex`` per workspace: the files ripgrep lists
(``.gitignore`` honoured, hidden files and the folders the search tool leaves out; a walk
with the same exclusions when ripgrep is missing), listed again in the background once the
index is older than ``FRESH_SECONDS``. Files the user had open or mentioned rank higher.

A ``mention`` input item names a file (or a line range of it, or a folder): the model
reads its text (a folder: its listing) in a block before the prompt's text, capped, with
secrets redacted; a credential store is never read.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from turnstoned import protocol as p
from turnstoned.guard import check
from turnstoned.places import is_credential
from turnstoned.search.fuzzy import FileIndex
from turnstoned.tools.search import EXCLUDED_DIRS  # what search leaves out, files too

log = logging.getLogger(__name__)

FRESH_SECONDS = 10.0
MAX_FILES = 500_000
LIST_TIMEOUT = 30.0
RECENT_KEPT = 200
MENTION_CHARS = 32_000  # of one mentioned file the model reads
LISTING_ENTRIES = 300


def list_files(root: Path) -> list[str]:
    """The workspace's files, relative, as ripgrep lists them (else a walk)."""
    rg = shutil.which("rg")
    if rg is not None:
        globs = [arg for d in EXCLUDED_DIRS for arg in ("-g", f"!{d}/")]
        try:
            out = subprocess.run([rg, "--files", "--no-config", "--no-messages", *globs],
                                 cwd=root, capture_output=True, timeout=LIST_TIMEOUT,
                                 check=False).stdout
            return [line for line in out.decode("utf-8", "replace").splitlines()
                    if line][:MAX_FILES]
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.info("rg --files in %s failed (%s); walking instead", root, exc)
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not any(fnmatch.fnmatch(d, x) for x in EXCLUDED_DIRS))
        rel = os.path.relpath(folder, root)
        found += [f if rel == "." else f"{rel}/{f}" for f in sorted(files)
                  if not f.startswith(".")]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


class Finder:
    def __init__(self) -> None:
        self._indexes: dict[Path, tuple[float, FileIndex]] = {}
        self._building: dict[Path, asyncio.Task[FileIndex]] = {}
        self._recent: dict[Path, dict[str, float]] = {}

    async def _index(self, root: Path) -> FileIndex:
        found = self._indexes.get(root)
        stale = found is None or time.monotonic() - found[0] > FRESH_SECONDS
        if stale and root not in self._building:
            task = asyncio.get_running_loop().create_task(self._build(root))
            self._building[root] = task
            task.add_done_callback(lambda _: self._building.pop(root, None))
        if found is not None:
            return found[1]  # a stale index answers while the new one is built
        return await asyncio.shield(self._building[root])

    async def _build(self, root: Path) -> FileIndex:
        index = await asyncio.to_thread(lambda: FileIndex(list_files(root)))
        self._indexes[root] = (time.monotonic(), index)
        return index

    def used(self, root: Path, path: str) -> None:
        """The user had ``path`` (absolute or relative to ``root``) open or mentioned it."""
        rel = os.path.relpath(path, root) if os.path.isabs(path) else path
        if rel.startswith(".."):
            return
        recent = self._recent.setdefault(root, {})
        recent.pop(rel, None)
        recent[rel] = 0.0
        while len(recent) > RECENT_KEPT:
            del recent[next(iter(recent))]

    async def find(self, root: Path, query: str, limit: int) -> p.FindFilesResult:
        index = await self._index(root)
        order = list(self._recent.get(root, {}))
        recent = {path: 5.0 * (i + 1) / len(order) for i, path in enumerate(order)}
        hits = await asyncio.to_thread(index.find, query, limit, recent)
        return p.FindFilesResult(root=str(root), indexed=len(index), files=[
            p.FoundFile(path=h.path, positions=list(h.positions)) for h in hits])


# ---------------------------------------------------------------- mentions


def mention_block(item: p.MentionInput, cwd: Path, buffers: dict[str, str]) -> str:
    """What the model reads for one mention (an error line when it cannot be read)."""
    path = Path(item.path) if os.path.isabs(item.path) else cwd / item.path
    real = os.path.realpath(path)
    shown = item.path
    if is_credential(real):
        return f"[Mentioned {shown}: not read, it is in a credential store]"
    if os.path.isdir(real):
        try:
            entries = sorted(os.listdir(real))
        except OSError as exc:
            return f"[Mentioned folder {shown}: cannot be listed: {exc.strerror}]"
        listed = [e + ("/" if os.path.isdir(os.path.join(real, e)) else "")
                  for e in entries[:LISTING_ENTRIES]]
        more = f"\n… and {len(entries) - LISTING_ENTRIES} more" if len(
            entries) > LISTING_ENTRIES else ""
        return f"[Mentioned folder {shown}: {len(entries)} entries]\n" + "\n".join(listed) + more
    text = buffers.get(real)
    if text is None:
        try:
            with open(real, "rb") as f:
                data = f.read(4 * MENTION_CHARS)
        except OSError as exc:
            return f"[Mentioned {shown}: cannot be read: {exc.strerror}]"
        if b"\0" in data[:8192]:
            return f"[Mentioned {shown}: a binary file, not shown]"
        text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    first = max(1, item.start_line or 1)
    last = min(len(lines), item.end_line or len(lines))
    body = "\n".join(lines[first - 1:last])
    cut = len(body) > MENTION_CHARS
    body = check(body[:MENTION_CHARS]).text
    span = f" lines {first}-{last}" if item.start_line or item.end_line else ""
    return (f"[Mentioned {shown}{span}" + (" (unsaved editor text)" if real in buffers else "")
            + "]\n```\n" + body + ("\n… (cut)" if cut else "") + "\n```")
