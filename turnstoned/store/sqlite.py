"""One SQLite file (WAL), shared by threads: the connection, its lock, its transactions.

The file holds every conversation: it and its folder are the user's alone (0600 and
0700), also when an older install left them readable by others.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class Database:
    """Thread-safe access to one SQLite file; every write is one transaction."""

    fts_enabled = False  # the store's message index (SQLite built with FTS5)

    def __init__(self, path: Path) -> None:
        _private(path)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.execute("PRAGMA busy_timeout=5000")

        for extra in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if extra.exists():
                _chmod(extra, 0o600)

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


def _private(path: Path) -> None:
    """The database's folder exists with mode 0700 and the file with mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _chmod(path.parent, 0o700)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600))
    _chmod(path, 0o600)


def _chmod(path: Path, mode: int) -> None:
    """Tighten ``path`` to ``mode`` when it is ours (a folder or file of another user, or
    one on a filesystem without modes, is left as it is)."""
    try:
        st = path.stat()
        if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != mode:
            path.chmod(mode)
    except OSError:
        pass
