"""Checkpoints of the workspace per turn, and undo, redo and review of what a turn changed.

Before the first call of a turn that may change the workspace runs (a file tool, a
command, a task agent, an MCP tool: anything but the tools that only read), the
workspace is snapshotted in its shadow repository (``checkpoint.ShadowRepo``); when
the turn ends it is snapshotted again. Files the snapshots leave out (``.gitignore``,
too big) are kept by their bytes when a file tool is about to write them.

Undoing a turn undoes it and every later turn of the session that no undo took back:
each file any of them changed goes back to what it was before the first of them that
changed it. A file that differs from what the last turn touching it left is the user's
change: it is a conflict, and nothing is done until each conflict has a resolution
(keep mine, or take the checkpoint). An undo remembers the workspace just before it,
so ``redo`` brings that back (with the same conflict rule for files the user changed
since the undo). The conversation follows if asked (``rewind``: the turns leave the
model's view, and come back on redo); otherwise the model is told what was undone.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from turnstoned import protocol as p
from turnstoned.checkpoint import Change, CheckpointError, ShadowRepo
from turnstoned.checkpoint.shadow import DIFF_CAP, MAX_FILE
from turnstoned.core.errors import EngineError
from turnstoned.protocol import ErrorCode
from turnstoned.store import Store
from turnstoned.store.checkpoints import Checkpoint, CheckpointStore, Undo
from turnstoned.tools.base import PreparedCall, SessionEnv

log = logging.getLogger(__name__)

# Built-in tools that change nothing in the workspace: no checkpoint before them.
READ_ONLY_TOOLS = frozenset({
    "read_file", "search", "diff_file", "open_preview", "web_fetch", "web_search", "memory",
    "recall", "notify", "skill", "use_prompt", "read_resource", "tasks", "watch",
    "propose_plan", "update_plan", "bash_output", "list_workstreams", "inspect_workstream",
    "wait_for_workstream", "editor_diagnostics", "editor_open_files", "editor_symbol",
})
_FILE_TOOLS = frozenset({"write_file", "edit_file"})
_KINDS: dict[str, p.FileChangeKind] = {"added": "create", "modified": "modify",
                                       "deleted": "delete"}


@dataclass(slots=True)
class _Plan:
    """What an undo or redo would do: paths to restore from which tree, and conflicts."""

    groups: dict[str, list[str]]  # tree -> paths to take from it
    ignored: dict[str, str | None]  # left-out files: path -> blob to write (None: remove)
    conflicts: list[p.UndoConflict]
    kept: list[str]
    changes: dict[str, Change]


class Checkpoints:
    """The daemon's checkpoints: one shadow repository per workspace, rows in the store."""

    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        self.rows = CheckpointStore(store)
        self.root = root
        self._repos: dict[Path, ShadowRepo] = {}
        # Why a session's workspace cannot be checkpointed (told once per session).
        self.off: dict[str, str] = {}
        self.on_off: Callable[[str, str], None] = lambda session_id, why: None

    def repo(self, workspace: Path | str) -> ShadowRepo:
        key = Path(os.path.realpath(workspace))
        found = self._repos.get(key)
        if found is None:
            found = self._repos[key] = ShadowRepo(self.root, key)
        return found

    @staticmethod
    def workspace_of(env: SessionEnv) -> Path:
        return Path(os.path.realpath(env.workspace or env.cwd))

    # ----------------------------------------------------------- recording

    async def before(self, env: SessionEnv, turn_id: str, calls: Sequence[PreparedCall]) -> None:
        """Record what the workspace is before ``calls`` run (those that may change it)."""
        changing = [c for c in calls if not c.error and c.tool not in READ_ONLY_TOOLS]
        if not changing or env.session_id in self.off:
            return
        workspace = self.workspace_of(env)
        repo = self.repo(workspace)
        try:
            if self.rows.get(env.session_id, turn_id) is None:
                snap = await repo.snapshot()
                self.rows.begin(env.session_id, turn_id, str(workspace), snap.tree)
            await self._keep_left_out(repo, env.session_id, turn_id, workspace, changing)
        except CheckpointError as exc:
            self._turn_off(env.session_id, str(exc))
        except OSError as exc:
            self._turn_off(env.session_id, f"the checkpoint could not be written: {exc}")

    async def _keep_left_out(self, repo: ShadowRepo, session_id: str, turn_id: str,
                             workspace: Path, calls: Sequence[PreparedCall]) -> None:
        """The bytes of files a file tool will write that snapshots leave out."""
        relative = []
        for c in calls:
            if c.tool in _FILE_TOOLS and c.file_change is not None:
                rel = _relative(workspace, c.file_change.path)
                if rel is not None:
                    relative.append(rel)
        if not relative:
            return
        left_out = await repo.ignored(relative)
        left_out |= {r for r in relative if _too_big(workspace / r)}
        row = self.rows.get(session_id, turn_id)
        for rel in sorted(left_out):
            if row is None or rel in row.ignored:
                continue
            try:
                data = (workspace / rel).read_bytes()
            except FileNotFoundError:
                blob = None
            except OSError:
                continue
            else:
                blob = await repo.blob(data)
            self.rows.record_ignored(session_id, turn_id, rel, blob)

    def _turn_off(self, session_id: str, why: str) -> None:
        self.off[session_id] = why
        log.info("checkpoints off for session %s: %s", session_id, why)
        self.on_off(session_id, why)

    async def after(self, env: SessionEnv, turn_id: str) -> p.TurnCheckpoint | None:
        """Snapshot the workspace at the end of a turn that has a checkpoint; what changed."""
        row = self.rows.get(env.session_id, turn_id)
        if row is None:
            why = self.off.get(env.session_id)
            return p.TurnCheckpoint(undoable=False, note=why) if why else None
        repo = self.repo(row.workspace)
        try:
            snap = await repo.snapshot()
            self.rows.finish(env.session_id, turn_id, snap.tree)
            changes = await repo.changes(row.before_tree, snap.tree)
        except CheckpointError as exc:
            return p.TurnCheckpoint(undoable=False, note=str(exc))
        files = [self._file(row.workspace, c) for c in changes]
        files += await self._left_out_files(repo, row, with_diff=False)
        return p.TurnCheckpoint(files=files)

    # ----------------------------------------------------------- review

    async def changes(self, session_id: str, turn_id: str, running: bool) -> p.TurnChangesResult:
        """Every file the turn changed with its diff (a running turn: up to now)."""
        row = self.rows.get(session_id, turn_id)
        if row is None:
            why = self.off.get(session_id)
            return p.TurnChangesResult(files=[], undoable=why is None, note=why)
        repo = self.repo(row.workspace)
        try:
            after = row.after_tree
            if after is None or running:
                after = (await repo.snapshot()).tree
            files = []
            for change in await repo.changes(row.before_tree, after):
                diff, cut = ("", False) if change.binary else await repo.diff(
                    row.before_tree, after, change.path)
                files.append(self._file(row.workspace, change, diff or None, cut))
            files += await self._left_out_files(repo, row, with_diff=True)
        except CheckpointError as exc:
            raise EngineError(ErrorCode.INTERNAL_ERROR, str(exc)) from exc
        return p.TurnChangesResult(files=files, undone_by=row.undone_by)

    async def _left_out_files(self, repo: ShadowRepo, row: Checkpoint,
                              with_diff: bool) -> list[p.ChangedFile]:
        """The files snapshots leave out that the turn's file tools changed."""
        found = []
        for rel, blob in sorted(row.ignored.items()):
            before = await repo.read_blob(blob) if blob else None
            now = _read(Path(row.workspace) / rel)
            if before == now:
                continue
            kind: p.FileChangeKind = ("create" if before is None else
                                      "delete" if now is None else "modify")
            diff, cut = _text_diff(rel, before, now) if with_diff else (None, False)
            found.append(p.ChangedFile(path=str(Path(row.workspace) / rel), kind=kind,
                                       binary=_binary(before) or _binary(now), diff=diff,
                                       truncated=cut))
        return found

    @staticmethod
    def _file(workspace: str, change: Change, diff: str | None = None,
              cut: bool = False) -> p.ChangedFile:
        return p.ChangedFile(path=str(Path(workspace) / change.path), kind=_KINDS[change.kind],
                             binary=change.binary, diff=diff, truncated=cut)

    # ----------------------------------------------------------- undo

    async def undo(self, session_id: str, turn_id: str, paths: Sequence[str] | None,
                   resolutions: dict[str, p.Resolution], rewind: bool) -> p.TurnUndoResult:
        """Put back the files ``turn_id`` and the later live turns changed (only ``paths``,
        absolute, when given), recording the undo (``rewind``: for redo to know the
        conversation followed)."""
        turns = self.store.turns_from(session_id, turn_id)
        if not turns:
            raise EngineError(ErrorCode.TURN_NOT_FOUND, f"no turn {turn_id!r} in this session")
        rows = [r for t in turns if (r := self.rows.get(session_id, t)) is not None
                and r.undone_by is None]
        if not rows:
            return p.TurnUndoResult(applied=True, turn_ids=turns)
        workspace = rows[0].workspace
        repo = self.repo(workspace)
        try:
            current = (await repo.snapshot()).tree
            plan = await self._undo_plan(repo, rows, current, paths, resolutions)
            if plan.conflicts:
                return p.TurnUndoResult(applied=False, turn_ids=turns,
                                        conflicts=plan.conflicts)
            redo_ignored = await self._apply(repo, plan)
            after = (await repo.snapshot()).tree
        except CheckpointError as exc:
            raise EngineError(ErrorCode.INTERNAL_ERROR, str(exc)) from exc
        restored = [self._file(workspace, plan.changes[path]) for group in plan.groups.values()
                    for path in group]
        restored += [p.ChangedFile(path=str(Path(workspace) / rel), kind="modify")
                     for rel in plan.ignored]
        undo_id = self.rows.add_undo(session_id, turns, workspace, rows[0].before_tree,
                                     current, after, redo_ignored, rewound=rewind,
                                     whole=paths is None)
        return p.TurnUndoResult(applied=True, undo_id=undo_id, turn_ids=turns,
                                restored=restored, kept=plan.kept)

    async def _undo_plan(self, repo: ShadowRepo, rows: list[Checkpoint], current: str,
                         only: Sequence[str] | None, resolutions: dict[str, p.Resolution]
                         ) -> _Plan:
        workspace = Path(rows[0].workspace)
        wanted = None if only is None else {_relative(workspace, x) for x in only} - {None}
        earliest: dict[str, tuple[str, Change]] = {}  # path -> (tree before it, the change)
        latest: dict[str, str] = {}  # path -> tree after the last turn that changed it
        ignored: dict[str, str | None] = {}
        for row in rows:
            after = row.after_tree or current
            for change in await repo.changes(row.before_tree, after):
                if wanted is not None and change.path not in wanted:
                    continue
                earliest.setdefault(change.path, (row.before_tree, change))
                latest[change.path] = after
            for rel, blob in row.ignored.items():
                if wanted is None or rel in wanted:
                    ignored.setdefault(rel, blob)
        by_tree: dict[str, list[str]] = {}
        for path, tree in latest.items():
            by_tree.setdefault(tree, []).append(path)
        touched: set[str] = set()  # changed since the agent's turn left them
        for tree, group in by_tree.items():
            if tree != current:
                touched |= {c.path for c in await repo.changes(tree, current)} & set(group)
        differs: set[str] = set()  # not already as the undo would make them
        for before in {tree for tree, _ in earliest.values()}:
            differs |= {c.path for c in await repo.changes(before, current)}
        plan = _Plan(groups={}, ignored=ignored, conflicts=[], kept=[],
                     changes={path: change for path, (_, change) in earliest.items()})
        for path, (before, _) in sorted(earliest.items()):
            if path not in differs:
                continue
            if path in touched:
                full = str(workspace / path)
                choice = resolutions.get(full)
                if choice == "mine":
                    plan.kept.append(full)
                    continue
                if choice is None:
                    diff, cut = await repo.diff(latest[path], current, path)
                    plan.conflicts.append(p.UndoConflict(path=full, diff=diff, truncated=cut))
                    continue
            plan.groups.setdefault(before, []).append(path)
        return plan

    async def _apply(self, repo: ShadowRepo, plan: _Plan) -> dict[str, str | None]:
        """Restore what ``plan`` says; returns the left-out files' bytes before (as blobs)."""
        for tree, group in plan.groups.items():
            await repo.restore(tree, group)
        saved: dict[str, str | None] = {}
        for rel, blob in plan.ignored.items():
            path = repo.workspace / rel
            now = _read(path)
            saved[rel] = await repo.blob(now) if now is not None else None
            await _write(path, await repo.read_blob(blob) if blob else None)
        return saved

    # ----------------------------------------------------------- redo

    async def redo(self, undo: Undo, resolutions: dict[str, p.Resolution]) -> p.TurnUndoResult:
        """Bring back the workspace as it was before ``undo``."""
        repo = self.repo(undo.workspace)
        workspace = Path(undo.workspace)
        try:
            current = (await repo.snapshot()).tree
            changes = {c.path: c for c in await repo.changes(undo.after_tree, undo.redo_tree)}
            touched = {c.path for c in await repo.changes(undo.after_tree, current)}
            plan = _Plan(groups={}, ignored=undo.ignored, conflicts=[], kept=[], changes=changes)
            for path in sorted(changes):
                full = str(workspace / path)
                if path in touched and resolutions.get(full) != "checkpoint":
                    if resolutions.get(full) == "mine":
                        plan.kept.append(full)
                        continue
                    diff, cut = await repo.diff(undo.after_tree, current, path)
                    plan.conflicts.append(p.UndoConflict(path=full, diff=diff, truncated=cut))
                    continue
                plan.groups.setdefault(undo.redo_tree, []).append(path)
            if plan.conflicts:
                return p.TurnUndoResult(applied=False, undo_id=undo.id, turn_ids=undo.turn_ids,
                                        conflicts=plan.conflicts)
            await self._apply(repo, plan)
        except CheckpointError as exc:
            raise EngineError(ErrorCode.INTERNAL_ERROR, str(exc)) from exc
        self.rows.redone(undo.id)
        restored = [self._file(undo.workspace, c) for path, c in changes.items()
                    if path in plan.groups.get(undo.redo_tree, ())]
        return p.TurnUndoResult(applied=True, undo_id=undo.id, turn_ids=undo.turn_ids,
                                restored=restored, kept=plan.kept)


def _relative(workspace: Path, path: str) -> str | None:
    """``path`` relative to the workspace, or None when it is outside."""
    try:
        rel = Path(os.path.realpath(os.path.dirname(path))) / os.path.basename(path)
        return rel.relative_to(workspace).as_posix()
    except ValueError:
        return None


def _too_big(path: Path) -> bool:
    try:
        return path.lstat().st_size > MAX_FILE
    except OSError:
        return False


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def _write(path: Path, data: bytes | None) -> None:
    def write() -> None:
        if data is None:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.turnstoned-undo")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    await asyncio.to_thread(write)


def _binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:8000]


def _text_diff(rel: str, before: bytes | None, now: bytes | None) -> tuple[str | None, bool]:
    if _binary(before) or _binary(now):
        return None, False
    old = (before or b"").decode(errors="replace").splitlines(keepends=True)
    new = (now or b"").decode(errors="replace").splitlines(keepends=True)
    text = "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))
    return (text[:DIFF_CAP], True) if len(text) > DIFF_CAP else (text, False)
