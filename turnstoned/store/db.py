"""The daemon's SQLite store (WAL): sessions, every committed message, queued input.

Each ``append_messages`` call is one transaction, so a crash (even ``kill -9``)
loses nothing the fold had committed. Input a running turn has not read yet is
kept in ``queued_inputs`` from the moment it is accepted until the commit that
folds it into the conversation (the same transaction) removes it. A compaction
(``compactions``) records where the model's view of a session now starts: its
summary, and the first message still sent word for word; the messages before it
stay where they are (``session/resume`` shows them, ``recall`` finds them).
Message bodies are stored as JSON produced by the caller; the store reads them
only for the role, the id a compaction names, and the text it indexes for
``recall`` (full-text search, in the same transaction).
Memories (``memory``), decisions about a project's own config files (``trust``:
its ``.mcp.json`` and its policies), watches (``watches``) and coordinators' task
lists (``tasks``) live in the same file.
"""

from __future__ import annotations

import bisect
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnstoned.protocol import SessionKind
from turnstoned.store import checkpoints as _checkpoints
from turnstoned.store import memory as _memory
from turnstoned.store import recall as _recall
from turnstoned.store import tasks as _tasks
from turnstoned.store import trust as _trust
from turnstoned.store import watches as _watches
from turnstoned.store.sqlite import Database

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    cwd TEXT NOT NULL,
    workspace TEXT,
    model TEXT,
    title TEXT,
    skip_permissions INTEGER NOT NULL DEFAULT 0,
    grants TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL DEFAULT '{}',
    closed INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    parent_id TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, id);
CREATE TABLE IF NOT EXISTS queued_inputs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS queued_by_session ON queued_inputs(session_id, seq);
CREATE TABLE IF NOT EXISTS compactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    keep_from INTEGER NOT NULL,  -- messages.id of the first message the model still reads
    last_row INTEGER NOT NULL,  -- messages.id of the newest message when it happened
    summary TEXT NOT NULL,  -- the message that stands for everything before keep_from
    event TEXT NOT NULL,  -- the session/compacted notification (JSON)
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS compactions_by_session ON compactions(session_id, seq);
"""


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    kind: SessionKind
    cwd: str
    workspace: str | None
    model: str | None
    title: str | None
    skip_permissions: bool
    grants: tuple[str, ...]
    state: dict[str, Any]
    closed: bool
    created_at: float
    updated_at: float
    parent_id: str | None = None  # the coordinator session that spawned this one


_COLUMNS = (
    "id, kind, cwd, workspace, model, title, skip_permissions, grants, state, closed, "
    "created_at, updated_at, parent_id"
)


def _row(r: sqlite3.Row | tuple[Any, ...]) -> SessionRow:
    return SessionRow(
        id=r[0], kind=r[1], cwd=r[2], workspace=r[3], model=r[4], title=r[5],
        skip_permissions=bool(r[6]), grants=tuple(json.loads(r[7])), state=json.loads(r[8]),
        closed=bool(r[9]), created_at=r[10], updated_at=r[11], parent_id=r[12],
    )


class Store(Database):
    """The daemon's tables: sessions, messages (indexed for recall), memories."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._db.executescript(_SCHEMA)
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(sessions)")}
        if "parent_id" not in columns:  # a database from before coordinator sessions
            self._db.execute("ALTER TABLE sessions ADD COLUMN parent_id TEXT")
        self._db.execute("CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions(parent_id)")
        for table in ("messages", "compactions"):  # a database from before undo
            if "rewound" not in {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN rewound TEXT")
        self._db.execute("CREATE INDEX IF NOT EXISTS messages_rewound ON messages(id) "
                         "WHERE rewound IS NOT NULL")  # recall leaves them out
        _memory.install(self._db)
        _trust.install(self._db)
        _watches.install(self._db)
        _tasks.install(self._db)
        _checkpoints.install(self._db)
        # False when SQLite lacks FTS5: messages are then stored without an index.
        self.fts_enabled = _recall.install(self._db)

    def create_session(self, row: SessionRow) -> None:
        self._write([(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (row.id, row.kind, row.cwd, row.workspace, row.model, row.title,
             int(row.skip_permissions), json.dumps(list(row.grants)), json.dumps(row.state),
             int(row.closed), row.created_at, row.updated_at, row.parent_id),
        )])

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set columns (title, grants, state, closed, model); ``updated_at`` always moves."""
        encode: dict[str, Callable[[Any], Any]] = {
            "grants": lambda v: json.dumps(list(v)), "state": json.dumps, "closed": int}
        sets: list[str] = ["updated_at = ?"]
        args: list[Any] = [time.time()]
        for key, value in fields.items():
            sets.append(f"{key} = ?")
            args.append(encode.get(key, lambda v: v)(value))
        args.append(session_id)
        self._write([(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", args)])

    def get_session(self, session_id: str) -> SessionRow | None:
        with self._lock:
            r = self._db.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _row(r) if r else None

    def delete_session(self, session_id: str) -> None:
        """The session, its messages (and their recall rows), checkpoints and children."""
        children = [r[0] for r in self.query("SELECT id FROM sessions WHERE parent_id = ?",
                                             (session_id,))]
        for child in children:
            self.delete_session(child)
        with self.transaction() as db:
            if self.fts_enabled:
                db.execute(f"DELETE FROM {_recall.FTS_TABLE} WHERE rowid IN "
                           "(SELECT id FROM messages WHERE session_id = ?)", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def list_sessions(self, parent_id: str | None = None) -> list[SessionRow]:
        """Every session (or the children of ``parent_id``), most recently updated first."""
        where, args = ("WHERE parent_id = ?", (parent_id,)) if parent_id else ("", ())
        with self._lock:
            sql = f"SELECT {_COLUMNS} FROM sessions {where} ORDER BY updated_at DESC, created_at DESC"
            rows = self._db.execute(sql, args).fetchall()
        return [_row(r) for r in rows]

    def append_messages(self, session_id: str, messages: Sequence[tuple[str, str | None, str]],
                        dequeue: Sequence[str] = ()) -> None:
        """Commit ``(role, turn_id, json_body)`` rows in one transaction, which also removes
        the queued inputs ``dequeue`` names (the messages fold them in)."""
        if not messages:
            return
        now = time.time()
        statements: list[tuple[str, Sequence[Any]]] = [
            ("DELETE FROM queued_inputs WHERE session_id = ? AND id = ?", (session_id, queued_id))
            for queued_id in dequeue]
        for role, turn_id, body in messages:
            statements.append((
                ("INSERT INTO messages (session_id, turn_id, role, body, created_at) "
                "VALUES (?,?,?,?,?)"), (session_id, turn_id, role, body, now)))
            entry = _recall.index_entry(body) if self.fts_enabled else None
            if entry is not None:  # same transaction: the index never lags the messages
                statements.append((_recall.INSERT_SQL, entry))
        statements.append(("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id)))
        self._write(statements)

    def queue_input(self, session_id: str, input_id: str, body: str) -> None:
        """Keep input a running turn will read at its next seam (until a commit folds it)."""
        sql = "INSERT INTO queued_inputs (session_id, id, body, created_at) VALUES (?,?,?,?)"
        self._write([(sql, (session_id, input_id, body, time.time()))])

    def load_queued(self, session_id: str) -> list[str]:
        """The JSON bodies of a session's queued inputs, oldest first."""
        return [r[0] for r in self.query(
            "SELECT body FROM queued_inputs WHERE session_id = ? ORDER BY seq", (session_id,))]

    def add_compaction(self, session_id: str, first_kept: str | None, summary: str,
                       event: str) -> None:
        """Record a compaction: the model's view now starts with ``summary`` and then the
        message whose body has id ``first_kept`` (None: every message so far is behind it)."""
        with self.transaction() as db:
            last = db.execute("SELECT COALESCE(MAX(id), 0) FROM messages WHERE session_id = ?",
                              (session_id,)).fetchone()[0]
            row = db.execute(
                "SELECT MIN(id) FROM messages WHERE session_id = ? AND json_extract(body, '$.id') = ?",
                (session_id, first_kept)).fetchone()[0] if first_kept else None
            db.execute("INSERT INTO compactions (session_id, keep_from, last_row, summary, event, "
                       "created_at) VALUES (?,?,?,?,?,?)",
                       (session_id, row if row is not None else last + 1, last, summary, event,
                        time.time()))

    def load_view(self, session_id: str) -> tuple[str | None, list[str]]:
        """What the model reads of a session: the latest compaction's summary (None if it was
        never compacted) and the JSON bodies of the messages after it, in commit order."""
        with self._lock:
            latest = self._db.execute(
                "SELECT summary, keep_from FROM compactions WHERE session_id = ? AND "
                "rewound IS NULL ORDER BY seq DESC LIMIT 1", (session_id,)).fetchone()
            summary, start = latest if latest else (None, 0)
            rows = self._db.execute(
                "SELECT body FROM messages WHERE session_id = ? AND id >= ? AND rewound IS NULL "
                "ORDER BY id", (session_id, start)).fetchall()
        return summary, [r[0] for r in rows]

    def load_timeline(self, session_id: str) -> tuple[list[str], list[tuple[int, str]]]:
        """Every message body of a session in commit order, and its compactions as
        ``(number of messages before it, session/compacted JSON)``, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, body FROM messages WHERE session_id = ? AND rewound IS NULL "
                "ORDER BY id", (session_id,)).fetchall()
            marks = self._db.execute(
                "SELECT last_row, event FROM compactions WHERE session_id = ? AND "
                "rewound IS NULL ORDER BY seq", (session_id,)).fetchall()
        ids = [r[0] for r in rows]
        return [r[1] for r in rows], [(bisect.bisect_right(ids, last), ev) for last, ev in marks]

    def rewind(self, session_id: str, turn_ids: Sequence[str], mark: str) -> None:
        """Take the messages of ``turn_ids`` (and compactions since the first of them) out of
        the session's conversation, marked ``mark`` so ``unrewind`` brings them back."""
        marks = ",".join("?" * len(turn_ids))
        with self.transaction() as db:
            first = db.execute(f"SELECT MIN(id) FROM messages WHERE session_id = ? AND turn_id IN "
                               f"({marks}) AND rewound IS NULL", (session_id, *turn_ids)
                               ).fetchone()[0]
            if first is None:
                return
            db.execute("UPDATE messages SET rewound = ? WHERE session_id = ? AND id >= ? AND "
                       "rewound IS NULL", (mark, session_id, first))
            db.execute("UPDATE compactions SET rewound = ? WHERE session_id = ? AND "
                       "last_row >= ? AND rewound IS NULL", (mark, session_id, first))

    def unrewind(self, session_id: str, mark: str) -> None:
        with self.transaction() as db:
            for table in ("messages", "compactions"):
                db.execute(f"UPDATE {table} SET rewound = NULL WHERE session_id = ? AND "
                           "rewound = ?", (session_id, mark))

    def turns_from(self, session_id: str, turn_id: str) -> list[str]:
        """``turn_id`` and the session's turns after it, in order (empty: no such turn)."""
        rows = self.query(
            "SELECT turn_id, MIN(id) AS first FROM messages WHERE session_id = ? AND "
            "turn_id IS NOT NULL AND rewound IS NULL GROUP BY turn_id ORDER BY first",
            (session_id,))
        turns = [r[0] for r in rows]
        return turns[turns.index(turn_id):] if turn_id in turns else []

    def first_body(self, session_id: str, turn_id: str) -> str | None:
        """The JSON body of a turn's first message (the prompt that started it)."""
        rows = self.query("SELECT body FROM messages WHERE session_id = ? AND turn_id = ? "
                          "ORDER BY id LIMIT 1", (session_id, turn_id))
        return rows[0][0] if rows else None

    def copy_before(self, source: str, target: str, turn_id: str) -> None:
        """Give session ``target`` the conversation of ``source`` before ``turn_id`` (the
        messages and compactions the model read, and recall's index of them)."""
        with self.transaction() as db:
            first = db.execute("SELECT MIN(id) FROM messages WHERE session_id = ? AND "
                               "turn_id = ? AND rewound IS NULL", (source, turn_id)).fetchone()[0]
            if first is None:
                return
            rows = db.execute("SELECT id, turn_id, role, body, created_at FROM messages WHERE "
                              "session_id = ? AND id < ? AND rewound IS NULL ORDER BY id",
                              (source, first)).fetchall()
            moved: dict[int, int] = {}
            for old_id, turn, role, body, created in rows:
                cur = db.execute("INSERT INTO messages (session_id, turn_id, role, body, "
                                 "created_at) VALUES (?,?,?,?,?)",
                                 (target, turn, role, body, created))
                assert cur.lastrowid is not None
                moved[old_id] = cur.lastrowid
                entry = _recall.index_entry(body) if self.fts_enabled else None
                if entry is not None:
                    db.execute(_recall.INSERT_SQL, entry)
            marks = db.execute("SELECT keep_from, last_row, summary, event, created_at FROM "
                               "compactions WHERE session_id = ? AND last_row < ? AND "
                               "rewound IS NULL ORDER BY seq", (source, first)).fetchall()
            after = max(moved.values(), default=0) + 1
            for keep_from, last_row, summary, event, created in marks:
                db.execute("INSERT INTO compactions (session_id, keep_from, last_row, summary, "
                           "event, created_at) VALUES (?,?,?,?,?,?)",
                           (target, moved.get(keep_from, after), moved.get(last_row, 0),
                            summary, event, created))

    def load_messages(self, session_id: str) -> list[str]:
        """The JSON bodies of a session's messages, in commit order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT body FROM messages WHERE session_id = ? AND rewound IS NULL ORDER BY id",
                (session_id,)
            ).fetchall()
        return [r[0] for r in rows]
