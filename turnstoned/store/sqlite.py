"""One SQLite file (WAL), shared by threads: the connection, its lock, its transactions."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class Database:
    """Thread-safe access to one SQLite file; every write is one transaction."""

    fts_enabled = False  # the store's message index (SQLite built with FTS5)

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.execute("PRAGMA busy_timeout=5000")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> None:
        with self.transaction() as db:
            for sql, args in statements:
                db.execute(sql, args)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one write transaction (committed unless the block raises)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only statement."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()
