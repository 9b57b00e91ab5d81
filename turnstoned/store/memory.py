"""Structured memories: named notes kept in SQLite, each in one place.

A memory is identified by ``(scope, scope_key, name)``; which scopes exist and
who shares each is ``turnstoned.scopes``. This module only stores and finds.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnstoned.protocol import MemoryScope, MemoryType
from turnstoned.scopes import ScopeRef

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

TYPES: tuple[MemoryType, ...] = ("user", "general", "feedback", "reference")
_DDL = """
CREATE TABLE IF NOT EXISTS memories (
    scope TEXT NOT NULL,
    scope_key TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT 'general',
    description TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    accessed_at REAL,
    access_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, scope_key, name)
);
CREATE INDEX IF NOT EXISTS memories_by_type ON memories(type);
"""

_COLUMNS = ("scope, scope_key, name, type, description, content, created_at, updated_at, "
            "access_count")


def install(db: sqlite3.Connection) -> None:
    """Create the memories table if it is missing."""
    db.executescript(_DDL)


@dataclass(frozen=True, slots=True)
class Memory:
    scope: MemoryScope
    scope_key: str
    name: str
    type: MemoryType
    description: str
    content: str
    created_at: float
    updated_at: float
    access_count: int


def _memory(row: tuple[Any, ...]) -> Memory:
    return Memory(*row)


class MemoryStore:
    """Memories in the daemon's store."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def save(self, ref: ScopeRef, name: str, description: str, content: str,
             type_: str | None) -> tuple[bool, str]:
        """Insert or update: ``(created, stored type)``. ``type_`` None keeps the stored type."""
        now = time.time()
        with self.store.transaction() as db:
            found = db.execute(
                "SELECT 1 FROM memories WHERE scope = ? AND scope_key = ? AND name = ?",
                (ref.scope, ref.key, name)).fetchone()
            db.execute(
                "INSERT INTO memories (scope, scope_key, name, type, description, content, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (scope, scope_key, name) DO UPDATE SET "
                "type = coalesce(?, memories.type), description = excluded.description, "
                "content = excluded.content, updated_at = excluded.updated_at",
                (ref.scope, ref.key, name, type_ or "general", description, content, now, now,
                 type_))
            stored = db.execute("SELECT type FROM memories WHERE scope = ? AND scope_key = ? "
                                "AND name = ?", (ref.scope, ref.key, name)).fetchone()
        return found is None, stored[0]

    def get(self, ref: ScopeRef, name: str, *, touch: bool = True) -> Memory | None:
        """The memory, counting the access when ``touch``."""
        where = "scope = ? AND scope_key = ? AND name = ?"
        args = (ref.scope, ref.key, name)
        if touch:
            with self.store.transaction() as db:
                db.execute(f"UPDATE memories SET access_count = access_count + 1, accessed_at = ? "
                           f"WHERE {where}", (time.time(), *args))
                row = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE {where}", args).fetchone()
        else:
            rows = self.store.query(f"SELECT {_COLUMNS} FROM memories WHERE {where}", args)
            row = rows[0] if rows else None
        return _memory(row) if row else None

    def delete(self, ref: ScopeRef, name: str) -> bool:
        """Remove it; False when there was nothing to remove."""
        with self.store.transaction() as db:
            cur = db.execute("DELETE FROM memories WHERE scope = ? AND scope_key = ? AND name = ?",
                             (ref.scope, ref.key, name))
            return cur.rowcount > 0

    def all_in(self, refs: Sequence[ScopeRef], type_: str | None = None) -> list[Memory]:
        """Every memory in ``refs`` (optionally of one type), newest update first."""
        if not refs:
            return []
        places = " OR ".join("(scope = ? AND scope_key = ?)" for _ in refs)
        args: list[object] = [v for ref in refs for v in (ref.scope, ref.key)]
        sql = f"SELECT {_COLUMNS} FROM memories WHERE ({places})"
        if type_ is not None:
            sql += " AND type = ?"
            args.append(type_)
        rows = self.store.query(sql + " ORDER BY updated_at DESC, scope, name", args)
        return [_memory(r) for r in rows]

    def scopes_holding(self, refs: Sequence[ScopeRef], name: str) -> list[str]:
        """Which of ``refs`` hold a memory called ``name`` (for not-found hints)."""
        return [ref.scope for ref in refs if self.get(ref, name, touch=False) is not None]
