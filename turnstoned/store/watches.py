"""Watches: shell commands a session asked the daemon to poll, kept across restarts.

A row is active until a poll is final (its condition held, the output changed,
or it used its last poll) or it is cancelled. ``next_poll`` is a UNIX time; a
poll first *claims* its row by moving ``next_poll`` forward with a
compare-and-set, so two daemons sharing the database never run the same poll,
and a daemon that was down finds overdue rows simply due (they poll once, with
no catching up of the polls it missed).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

_DDL = """
CREATE TABLE IF NOT EXISTS watches (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    command TEXT NOT NULL,
    interval REAL NOT NULL,
    stop_on TEXT,
    max_polls INTEGER NOT NULL,
    poll_count INTEGER NOT NULL DEFAULT 0,
    last_output TEXT,
    last_exit_code INTEGER,
    last_poll REAL,
    next_poll REAL NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    ended TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS watches_due ON watches(active, next_poll);
CREATE UNIQUE INDEX IF NOT EXISTS watches_active_name ON watches(session_id, name) WHERE active = 1;
"""

_COLUMNS = ("id, session_id, name, command, interval, stop_on, max_polls, poll_count, "
            "last_output, last_exit_code, last_poll, next_poll, active, ended, created_at")


def install(db: sqlite3.Connection) -> None:
    """Create the watches table if it is missing."""
    db.executescript(_DDL)


@dataclass(frozen=True, slots=True)
class Watch:
    id: str
    session_id: str
    name: str
    command: str
    interval: float
    stop_on: str | None
    max_polls: int
    poll_count: int
    last_output: str | None
    last_exit_code: int | None
    last_poll: float | None
    next_poll: float
    active: bool
    ended: str | None
    created_at: float


def _watch(r: tuple[Any, ...]) -> Watch:
    return Watch(id=r[0], session_id=r[1], name=r[2], command=r[3], interval=r[4], stop_on=r[5],
                 max_polls=r[6], poll_count=r[7], last_output=r[8], last_exit_code=r[9],
                 last_poll=r[10], next_poll=r[11], active=bool(r[12]), ended=r[13],
                 created_at=r[14])


class WatchStore:
    """The watches of every session, in the daemon's database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, watch: Watch, max_active: int) -> str | None:
        """Insert ``watch``; the refusal text instead when the session has ``max_active``
        active watches or an active one of the same name (checked in the same transaction)."""
        with self.db.transaction() as db:
            count, = db.execute("SELECT COUNT(*) FROM watches WHERE session_id = ? AND active = 1",
                                (watch.session_id,)).fetchone()
            if count >= max_active:
                return (f"Error: this session already has {count} active watches (the most is "
                        f"{max_active}); cancel one first.")
            same = db.execute("SELECT 1 FROM watches WHERE session_id = ? AND name = ? AND "
                              "active = 1", (watch.session_id, watch.name)).fetchone()
            if same:
                return f'Error: an active watch is already named "{watch.name}".'
            db.execute(f"INSERT INTO watches ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (
                watch.id, watch.session_id, watch.name, watch.command, watch.interval,
                watch.stop_on, watch.max_polls, watch.poll_count, watch.last_output,
                watch.last_exit_code, watch.last_poll, watch.next_poll, int(watch.active),
                watch.ended, watch.created_at))
        return None

    def get(self, watch_id: str) -> Watch | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM watches WHERE id = ?", (watch_id,))
        return _watch(rows[0]) if rows else None

    def active(self, session_id: str | None = None) -> list[Watch]:
        """Active watches (of one session, or all), the next due first."""
        where, args = ("AND session_id = ?", (session_id,)) if session_id else ("", ())
        rows = self.db.query(f"SELECT {_COLUMNS} FROM watches WHERE active = 1 {where} "
                             "ORDER BY next_poll, created_at", args)
        return [_watch(r) for r in rows]

    def find(self, session_id: str, key: str) -> Watch | None:
        """A session's watch by exact name or id prefix; active ones first, then the newest."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM watches WHERE session_id = ? AND (name = ? OR "
            "(length(?) >= 4 AND substr(id, 1, length(?)) = ?)) "
            "ORDER BY active DESC, created_at DESC LIMIT 1", (session_id, key, key, key, key))
        return _watch(rows[0]) if rows else None

    def deactivate(self, watch_id: str, reason: str) -> bool:
        """End an active watch; False when it had already ended."""
        with self.db.transaction() as db:
            cur = db.execute("UPDATE watches SET active = 0, ended = ? WHERE id = ? AND active = 1",
                             (reason, watch_id))
            return cur.rowcount > 0

    def deactivate_session(self, session_id: str, reason: str) -> int:
        """End every active watch of a session; how many there were."""
        with self.db.transaction() as db:
            cur = db.execute("UPDATE watches SET active = 0, ended = ? WHERE session_id = ? AND "
                             "active = 1", (reason, session_id))
            return cur.rowcount

    def due(self, now: float, limit: int = 100) -> list[Watch]:
        """Active watches whose next poll is at or before ``now``, the most overdue first."""
        rows = self.db.query(f"SELECT {_COLUMNS} FROM watches WHERE active = 1 AND next_poll <= ? "
                             "ORDER BY next_poll LIMIT ?", (now, limit))
        return [_watch(r) for r in rows]

    def next_due(self) -> float | None:
        """When the next active watch is due (None: no active watch)."""
        rows = self.db.query("SELECT MIN(next_poll) FROM watches WHERE active = 1")
        return rows[0][0] if rows and rows[0][0] is not None else None

    def claim(self, watch: Watch, next_poll: float) -> bool:
        """Take a due poll: move its next poll to ``next_poll`` unless someone else already did."""
        with self.db.transaction() as db:
            cur = db.execute("UPDATE watches SET next_poll = ? WHERE id = ? AND active = 1 AND "
                             "next_poll = ?", (next_poll, watch.id, watch.next_poll))
            return cur.rowcount > 0

    def record(self, watch_id: str, *, poll_count: int, output: str, exit_code: int,
               polled_at: float, ended: str | None) -> bool:
        """Store a poll's result (and end the watch when ``ended`` says why); False when the
        watch was cancelled while it polled (the result is then dropped)."""
        with self.db.transaction() as db:
            cur = db.execute(
                "UPDATE watches SET poll_count = ?, last_output = ?, last_exit_code = ?, "
                "last_poll = ?, active = ?, ended = ? WHERE id = ? AND active = 1",
                (poll_count, output, exit_code, polled_at, int(ended is None), ended, watch_id))
            return cur.rowcount > 0
