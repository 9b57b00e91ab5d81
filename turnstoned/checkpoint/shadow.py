"""A workspace's shadow git repository: snapshots of its files, their differences, restores.

The repository lives in turnstoned's data dir (never in the workspace's own ``.git``)
and is shared by every session working in that folder. A snapshot adds what changed
since the last one (``git status`` first: an unchanged workspace costs one ``git``
process) and commits it, so a snapshot is a tree hash that stays reachable. The
workspace's ``.gitignore`` files apply; nested repositories are recorded as their
commit, not their files. Files over ``MAX_FILE`` bytes are left out (listed in the
snapshot), and a workspace of more than ``MAX_FILES`` files, or a change of more than
``MAX_CHANGE`` bytes at once, is refused with ``TooBig``.

Nothing of the workspace is trusted: the repository has no hooks, no filters and no
configuration but its own (the user's and the system's git config are not read), so a
``.gitattributes`` or a ``.git/config`` in the workspace runs nothing here.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_FILES = 100_000
MAX_FILE = 64 << 20
MAX_CHANGE = 512 << 20
TIMEOUT = 120.0
DIFF_CAP = 64_000  # characters of one file's diff
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

ChangeKind = Literal["added", "modified", "deleted"]


class CheckpointError(Exception):
    """The shadow repository cannot do what was asked (git missing, a git failure)."""


class TooBig(CheckpointError):
    """The workspace (or this change of it) is too big to snapshot; the message says why."""


@dataclass(frozen=True, slots=True)
class Change:
    """One path that differs between two snapshots."""

    path: str
    kind: ChangeKind
    binary: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    tree: str
    left_out: tuple[str, ...] = ()  # files too big to keep


def repo_dir(root: Path, workspace: Path) -> Path:
    """Where the shadow repository of ``workspace`` lives under ``root``."""
    real = os.path.realpath(workspace)
    return root / (hashlib.sha256(real.encode()).hexdigest()[:20] + ".git")


class ShadowRepo:
    def __init__(self, root: Path, workspace: Path) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.git_dir = repo_dir(root, self.workspace)
        self._lock = asyncio.Lock()  # one git at a time per repository (its index)
        self._env = {
            "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.workspace),
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "turnstoned", "GIT_AUTHOR_EMAIL": "turnstoned@localhost",
            "GIT_COMMITTER_NAME": "turnstoned", "GIT_COMMITTER_EMAIL": "turnstoned@localhost",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_TERMINAL_PROMPT": "0",
        }

    # ----------------------------------------------------------- git

    async def _git(self, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)
                   ) -> bytes:
        try:
            proc = await asyncio.create_subprocess_exec(
                "git", *args, cwd=self.workspace, env=self._env,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except FileNotFoundError as exc:
            raise CheckpointError("git is not installed: checkpoints need it") from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT)
        except (TimeoutError, asyncio.CancelledError) as exc:
            proc.kill()
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise CheckpointError(f"git {args[0]} took longer than {TIMEOUT:.0f} s") from exc
            raise
        if proc.returncode not in ok:
            raise CheckpointError(f"git {args[0]} failed: {err.decode(errors='replace')[:500]}")
        return out

    async def _ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        await self._git("init", "-q")
        for key, value in (("core.bare", "false"), ("core.autocrlf", "false"),
                           ("core.symlinks", "true"), ("core.quotePath", "false"),
                           ("gc.auto", "0"), ("core.fsmonitor", "false"),
                           ("core.hooksPath", os.devnull)):
            await self._git("config", key, value)
        (self.git_dir / "info").mkdir(exist_ok=True)

    # ----------------------------------------------------------- snapshots

    async def snapshot(self) -> Snapshot:
        """The workspace's files now, as a tree (committed in the shadow repository)."""
        async with self._lock:
            await self._ensure()
            status = await self._git("status", "--porcelain=v1", "-z", "--untracked-files=all",
                                     "--no-renames", "--ignore-submodules=all")
            head = await self._head()
            if not status and head is not None:
                return Snapshot(await self._tree_of(head))
            left_out = self._check_sizes(status, head is None)
            await self._git("add", "-A", "--ignore-errors", ok=(0, 1))
            tree = (await self._git("write-tree")).decode().strip()
            parents = ["-p", head] if head else []
            commit = (await self._git("commit-tree", tree, *parents, "-m", "checkpoint")
                      ).decode().strip()
            await self._git("update-ref", "HEAD", commit)
            return Snapshot(tree, left_out)

    async def keep(self, name: str, tree: str) -> None:
        """Keep ``tree`` reachable under ``refs/turnstoned/<name>`` (a session's checkpoint)."""
        async with self._lock:
            commit = (await self._git("commit-tree", tree, "-m", name)).decode().strip()
            await self._git("update-ref", f"refs/turnstoned/{name}", commit)

    async def _head(self) -> str | None:
        out = await self._git("rev-parse", "-q", "--verify", "HEAD", ok=(0, 1))
        return out.decode().strip() or None

    async def _tree_of(self, commit: str) -> str:
        return (await self._git("rev-parse", f"{commit}^{{tree}}")).decode().strip()

    def _check_sizes(self, status: bytes, first: bool) -> tuple[str, ...]:
        """Refuse a change too big to keep; leave out (and exclude from now on) single files
        over ``MAX_FILE``."""
        paths = [entry[3:].decode(errors="surrogateescape") for entry in status.split(b"\0")
                 if len(entry) > 3 and entry[1:2] in (b"?", b"M", b"T", b"A")]
        if first and len(paths) > MAX_FILES:
            raise TooBig(f"the workspace has more than {MAX_FILES:,} files (not counting what "
                         ".gitignore leaves out): too many to checkpoint")
        total, left_out = 0, []
        for path in paths:
            try:
                size = os.lstat(self.workspace / path).st_size
            except OSError:
                continue
            if size > MAX_FILE:
                left_out.append(path)
            else:
                total += size
        if total > MAX_CHANGE:
            raise TooBig(f"{total >> 20} MiB changed since the last checkpoint (more than "
                         f"{MAX_CHANGE >> 20} MiB): too much to checkpoint")
        if left_out:
            with (self.git_dir / "info" / "exclude").open("a", encoding="utf-8") as f:
                f.writelines("/" + _escape(p) + "\n" for p in left_out)
        return tuple(left_out)

    # ----------------------------------------------------------- differences

    async def changes(self, a: str | None, b: str) -> list[Change]:
        """The paths that differ from tree ``a`` (None: empty) to tree ``b``."""
        out = await self._git("diff-tree", "-r", "-z", "--no-renames", "--numstat",
                              a or _EMPTY_TREE, b)
        numstat = out.split(b"\0")
        kinds = await self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status",
                                a or _EMPTY_TREE, b)
        fields = kinds.split(b"\0")
        binary = {}
        for entry in numstat:
            parts = entry.split(b"\t", 2)
            if len(parts) == 3:
                binary[parts[2].decode(errors="surrogateescape")] = parts[0] == b"-"
        found = []
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if not status:
                continue
            name = path.decode(errors="surrogateescape")
            kind: ChangeKind = {"A": "added", "D": "deleted"}.get(status.decode()[:1],
                                                                  "modified")  # type: ignore[assignment]
            found.append(Change(name, kind, binary.get(name, False)))
        return found

    async def diff(self, a: str | None, b: str, path: str) -> tuple[str, bool]:
        """The unified diff of ``path`` from ``a`` to ``b``, cut to ``DIFF_CAP`` (and whether
        it was cut)."""
        out = (await self._git("diff-tree", "-p", "--no-renames", "--no-color",
                               a or _EMPTY_TREE, b, "--", _literal(path))).decode(errors="replace")
        return (out[:DIFF_CAP], True) if len(out) > DIFF_CAP else (out, False)

    # ----------------------------------------------------------- restores

    async def restore(self, target: str, paths: Sequence[str]) -> None:
        """Make ``paths`` of the workspace what they are in tree ``target``: written (with
        their modes and symlinks) where it has them, removed where it has not."""
        if not paths:
            return
        async with self._lock:
            listed = await self._git("ls-tree", "-r", "-z", "--name-only", target)
            present = {p.decode(errors="surrogateescape") for p in listed.split(b"\0") if p}
            present &= set(paths)
            for path in paths:
                if path not in present:
                    self._remove(path)
            wanted = [p for p in paths if p in present]
            if wanted:
                spec = b"\0".join(_literal(p).encode(errors="surrogateescape") for p in wanted)
                for path in wanted:  # a directory in the way of a file, or the other way
                    self._clear_for(path)
                await self._git("checkout", target, "--pathspec-from-file=-",
                                "--pathspec-file-nul", stdin=spec)

    def _remove(self, path: str) -> None:
        full = self.workspace / path
        try:
            if full.is_dir() and not full.is_symlink():
                return  # a directory (a nested repository): not a file of the snapshot
            full.unlink()
        except FileNotFoundError:
            pass
        parent = full.parent
        while parent != self.workspace and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent

    def _clear_for(self, path: str) -> None:
        """A file the restore writes may stand where the workspace now has a directory."""
        full = self.workspace / path
        if full.is_dir() and not full.is_symlink() and not any(full.iterdir()):
            full.rmdir()

    async def blob(self, data: bytes) -> str:
        """Store bytes (a file .gitignore leaves out of snapshots) and return their id."""
        async with self._lock:
            await self._ensure()
            return (await self._git("hash-object", "-w", "--stdin", stdin=data)).decode().strip()

    async def read_blob(self, blob: str) -> bytes:
        return await self._git("cat-file", "blob", blob)

    async def ignored(self, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (relative) .gitignore leaves out of snapshots."""
        if not paths:
            return set()
        async with self._lock:
            await self._ensure()
            out = await self._git("check-ignore", "-z", "--stdin", "--no-index", ok=(0, 1),
                                  stdin=b"\0".join(p.encode(errors="surrogateescape")
                                                    for p in paths))
        return {p.decode(errors="surrogateescape") for p in out.split(b"\0") if p}


def _escape(path: str) -> str:
    """A path as a literal gitignore pattern."""
    return "".join("\\" + c if c in "*?[]!#\\ " else c for c in path)


def _literal(path: str) -> str:
    return ":(literal)" + path
