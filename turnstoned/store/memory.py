"""Structured memories: named notes kept in SQLite, each in one scope.

A memory is identified by ``(scope, scope_key, name)``. The scope says who
shares it; the key says which instance of the scope it lives in:

========== =================================== ===========================
scope      shared by                           key
========== =================================== ===========================
global     every session                       ``""``
workstream one session                         the session id
user       the OS user's sessions              the OS user name
coordinator the OS user's coordinator sessions the OS user name
project    sessions in one workspace           the workspace root path
========== =================================== ===========================

The project root is the session's workspace folder, else the nearest
directory at or above its cwd that holds ``.git``.
"""

from __future__ import annotations

import getpass
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnstoned.store.db import Store

SCOPES = ("global", "workstream", "user", "coordinator", "project")
TYPES = ("user", "general", "feedback", "reference")
KIND_SCOPES: dict[str, tuple[str, ...]] = {
    "interactive": ("global", "workstream", "user", "project"),
    "coordinator": ("global", "coordinator", "user", "project"),
}
# What an editor sees without naming a session: the scopes that do not depend on one.
SESSIONLESS_SCOPES = ("global", "user", "coordinator")

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


class ScopeError(ValueError):
    """A scope that does not exist, or that this session cannot use; the text says why."""


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """One concrete place a memory can live."""

    scope: str
    key: str


@dataclass(frozen=True, slots=True)
class Memory:
    scope: str
    scope_key: str
    name: str
    type: str
    description: str
    content: str
    created_at: float
    updated_at: float
    access_count: int


def os_user() -> str:
    """The OS user name (the uid when the system cannot name it)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid{os.getuid()}"


def project_root(cwd: Path, workspace: Path | None) -> Path | None:
    """The workspace folder, else the nearest directory at or above ``cwd`` holding ``.git``."""
    if workspace is not None:
        return workspace
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


@dataclass(frozen=True, slots=True)
class Scopes:
    """The memory scopes one session may use, and the key of each."""

    kind: str
    session_id: str
    user: str
    project: str | None

    @classmethod
    def for_session(cls, session_id: str, kind: str, cwd: Path,
                    workspace: Path | None) -> Scopes:
        root = project_root(cwd, workspace)
        return cls(kind=kind, session_id=session_id, user=os_user(),
                   project=str(root) if root is not None else None)

    def allowed(self) -> tuple[str, ...]:
        """The scopes this session's kind may name."""
        return KIND_SCOPES.get(self.kind, KIND_SCOPES["interactive"])

    def default(self) -> str:
        """Where an unscoped save/get/delete goes."""
        if self.project is not None:
            return "project"
        return "coordinator" if self.kind == "coordinator" else "global"

    def ref(self, scope: str | None) -> ScopeRef:
        """The one place ``scope`` (None: the default) means; ``ScopeError`` if unusable."""
        name = self.default() if scope is None else scope
        if name not in SCOPES:
            raise ScopeError(f"Error: invalid scope '{name}'. Valid: {', '.join(self.allowed())}")
        if name not in self.allowed():
            raise ScopeError(f"Error: scope '{name}' is unavailable to {self.kind} sessions. "
                             f"Available: {', '.join(self.allowed())}")
        if name == "project" and self.project is None:
            raise ScopeError("Error: scope 'project' is unavailable: this session has no "
                             "workspace folder and its directory is not inside a git repository.")
        return ScopeRef(name, self.key(name))

    def key(self, scope: str) -> str:
        if scope == "workstream":
            return self.session_id
        if scope in ("user", "coordinator"):
            return self.user
        if scope == "project":
            return self.project or ""
        return ""

    def visible(self) -> list[ScopeRef]:
        """Every place this session can see, in display order (the search/list union)."""
        return [ScopeRef(s, self.key(s)) for s in self.allowed()
                if s != "project" or self.project is not None]


def sessionless_refs() -> list[ScopeRef]:
    """The session-independent scopes, for editors that name no session."""
    user = os_user()
    return [ScopeRef(s, user if s in ("user", "coordinator") else "") for s in SESSIONLESS_SCOPES]


def _memory(row: Sequence[object]) -> Memory:
    return Memory(*row)  # type: ignore[arg-type]


class MemoryStore:
    """Memories in the daemon's store."""

    def __init__(self, store: Store) -> None:
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
