"""Which workspace snapshot belongs to which turn, and what each undo did (for redo).

A turn that changed (or may have changed) the workspace has a row: the snapshot before its
first change, the one after it ended, and the files the snapshots leave out that its file
tools touched (their bytes before, as blob ids; null: the file did not exist). An undo
remembers the turns it took back, the tree it restored, the workspace just before it (what
a redo brings back) and just after it, and whether it rewound the conversation.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

_DDL = """
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    before_tree TEXT NOT NULL,
    after_tree TEXT,
    ignored TEXT NOT NULL DEFAULT '{}',
    undone_by TEXT,
    created_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS checkpoints_by_turn ON checkpoints(session_id, turn_id);
CREATE TABLE IF NOT EXISTS undos (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_ids TEXT NOT NULL,
    workspace TEXT NOT NULL,
    target_tree TEXT NOT NULL,
    redo_tree TEXT NOT NULL,
    after_tree TEXT NOT NULL,
    ignored TEXT NOT NULL DEFAULT '{}',
    rewound INTEGER NOT NULL,
    redone INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);
"""


def install(db: sqlite3.Connection) -> None:
    db.executescript(_DDL)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    session_id: str
    turn_id: str
    workspace: str
    before_tree: str
    after_tree: str | None
    ignored: dict[str, str | None]  # path -> blob of its bytes before the turn (None: absent)
    undone_by: str | None
    seq: int


@dataclass(frozen=True, slots=True)
class Undo:
    id: str
    session_id: str
    turn_ids: list[str]
    workspace: str
    target_tree: str
    redo_tree: str
    after_tree: str
    ignored: dict[str, str | None]  # the files left out of snapshots, as they were before it
    rewound: bool
    redone: bool


_CHECKPOINT = ("session_id, turn_id, workspace, before_tree, after_tree, ignored, undone_by, "
               "seq")
_UNDO = ("id, session_id, turn_ids, workspace, target_tree, redo_tree, after_tree, ignored, "
         "rewound, redone")


def _checkpoint(r: tuple[Any, ...]) -> Checkpoint:
    return Checkpoint(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7])


def _undo(r: tuple[Any, ...]) -> Undo:
    return Undo(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], json.loads(r[7]),
                bool(r[8]), bool(r[9]))


class CheckpointStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self.db.transaction() as c:
            for sql, args in statements:
                c.execute(sql, args)

    def begin(self, session_id: str, turn_id: str, workspace: str, tree: str) -> None:
        self._write([(("INSERT OR IGNORE INTO checkpoints (session_id, turn_id, workspace, "
                         "before_tree, created_at) VALUES (?,?,?,?,?)"),
                         (session_id, turn_id, workspace, tree, time.time()))])

    def record_ignored(self, session_id: str, turn_id: str, path: str, blob: str | None) -> None:
        """A file snapshots leave out, as it was before the turn first touched it."""
        found = self.get(session_id, turn_id)
        if found is None or path in found.ignored:
            return
        ignored = {**found.ignored, path: blob}
        self._write([(("UPDATE checkpoints SET ignored = ? WHERE session_id = ? AND "
                         "turn_id = ?"), (json.dumps(ignored), session_id, turn_id))])

    def finish(self, session_id: str, turn_id: str, tree: str) -> None:
        self._write([(("UPDATE checkpoints SET after_tree = ? WHERE session_id = ? AND "
                         "turn_id = ?"), (tree, session_id, turn_id))])

    def get(self, session_id: str, turn_id: str) -> Checkpoint | None:
        rows = self.db.query(f"SELECT {_CHECKPOINT} FROM checkpoints WHERE session_id = ? AND "
                             "turn_id = ?", (session_id, turn_id))
        return _checkpoint(rows[0]) if rows else None

    def live_from(self, session_id: str, seq: int) -> list[Checkpoint]:
        """The session's checkpoints from ``seq`` on that no undo took back, oldest first."""
        rows = self.db.query(f"SELECT {_CHECKPOINT} FROM checkpoints WHERE session_id = ? AND "
                             "seq >= ? AND undone_by IS NULL ORDER BY seq", (session_id, seq))
        return [_checkpoint(r) for r in rows]

    def add_undo(self, session_id: str, turn_ids: list[str], workspace: str, target: str,
                 redo: str, after: str, ignored: dict[str, str | None], rewound: bool,
                 whole: bool = True) -> str:
        """Record an undo; ``whole``: it took the turns back (not some of their files), so
        they are undone until a redo."""
        undo_id = "undo_" + secrets.token_hex(8)
        marks = [("UPDATE checkpoints SET undone_by = ? WHERE session_id = ? AND turn_id = ?",
                  (undo_id, session_id, t)) for t in turn_ids] if whole else []
        self._write([(("INSERT INTO undos (id, session_id, turn_ids, workspace, target_tree, "
                         "redo_tree, after_tree, ignored, rewound, created_at) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?)"),
                         (undo_id, session_id, json.dumps(turn_ids), workspace, target, redo,
                          after, json.dumps(ignored), int(rewound), time.time())), *marks])
        return undo_id

    def last_live(self, session_id: str) -> str | None:
        """The turn of the session's newest checkpoint that no undo took back."""
        rows = self.db.query("SELECT turn_id FROM checkpoints WHERE session_id = ? AND "
                             "undone_by IS NULL ORDER BY seq DESC LIMIT 1", (session_id,))
        return rows[0][0] if rows else None

    def last_undo(self, session_id: str) -> str | None:
        """The session's newest undo that was not redone."""
        rows = self.db.query("SELECT id FROM undos WHERE session_id = ? AND redone = 0 "
                             "ORDER BY created_at DESC, rowid DESC LIMIT 1", (session_id,))
        return rows[0][0] if rows else None

    def get_undo(self, undo_id: str) -> Undo | None:
        rows = self.db.query(f"SELECT {_UNDO} FROM undos WHERE id = ?", (undo_id,))
        return _undo(rows[0]) if rows else None

    def redone(self, undo_id: str) -> None:
        self._write([("UPDATE undos SET redone = 1 WHERE id = ?", (undo_id,)),
                        ("UPDATE checkpoints SET undone_by = NULL WHERE undone_by = ?",
                         (undo_id,))])
