"""A coordinator session's task list: ordered items with a status, a note and a child."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

STATUSES = ("pending", "in_progress", "done", "blocked", "needs_user")
_DDL = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    note TEXT NOT NULL DEFAULT '',
    child_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks(session_id, position);
"""
_COLUMNS = "id, session_id, position, title, status, note, child_id, created_at, updated_at"


def install(db: sqlite3.Connection) -> None:
    db.executescript(_DDL)


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    session_id: str
    position: int
    title: str
    status: str
    note: str
    child_id: str | None
    created_at: float
    updated_at: float


def _task(r: tuple[Any, ...]) -> Task:
    return Task(*r)


class TaskStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def of(self, session_id: str) -> list[Task]:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM tasks WHERE session_id = ? "
                             "ORDER BY position", (session_id,))
        return [_task(r) for r in rows]

    def add(self, task_id: str, session_id: str, title: str, status: str, note: str,
            child_id: str | None) -> None:
        now = time.time()
        with self.db.transaction() as db:
            last, = db.execute("SELECT COALESCE(MAX(position), -1) FROM tasks WHERE "
                               "session_id = ?", (session_id,)).fetchone()
            db.execute(f"INSERT INTO tasks ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                       (task_id, session_id, last + 1, title, status, note, child_id, now, now))

    def update(self, session_id: str, task_id: str, **fields: Any) -> bool:
        """Set ``title``, ``status``, ``note`` or ``child_id``; False when there is no such task."""
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.db.transaction() as db:
            cur = db.execute(f"UPDATE tasks SET {sets}, updated_at = ? WHERE id = ? AND "
                             "session_id = ?", (*fields.values(), time.time(), task_id, session_id))
            return cur.rowcount > 0

    def remove(self, session_id: str, task_id: str) -> bool:
        with self.db.transaction() as db:
            cur = db.execute("DELETE FROM tasks WHERE id = ? AND session_id = ?",
                             (task_id, session_id))
            return cur.rowcount > 0

    def reorder(self, session_id: str, order: list[str]) -> None:
        """Put the tasks in ``order`` (the caller checked it is a permutation of the list)."""
        with self.db.transaction() as db:
            for position, task_id in enumerate(order):
                db.execute("UPDATE tasks SET position = ? WHERE id = ? AND session_id = ?",
                           (position, task_id, session_id))
