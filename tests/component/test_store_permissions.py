"""The history is the user's alone: the data folder is 0700 and the database files 0600,
also for an install that an older version left readable by others."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from turnstoned.store import SessionRow, Store


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def row() -> SessionRow:
    now = time.time()
    return SessionRow(id="a" * 32, kind="interactive", cwd="/", workspace=None, model=None,
                      title=None, skip_permissions=False, grants=(), state={}, closed=False,
                      created_at=now, updated_at=now, parent_id=None)


def test_a_new_database_and_its_folder_are_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "turnstoned.sqlite3"
    old = os.umask(0o022)  # what a typical login shell gives
    try:
        store = Store(path)
        store.create_session(row())
    finally:
        os.umask(old)
    files = [p for p in path.parent.iterdir() if p.name.startswith(path.name)]
    assert {p.name for p in files} >= {path.name, f"{path.name}-wal"}
    assert mode(path.parent) == 0o700
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    store.close()


def test_an_existing_readable_install_is_tightened_on_start(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    path = folder / "turnstoned.sqlite3"
    Store(path).close()
    os.chmod(folder, 0o755)
    for p in folder.iterdir():
        os.chmod(p, 0o644)
    store = Store(path)
    assert mode(folder) == 0o700
    assert all(mode(p) == 0o600 for p in folder.iterdir() if p.name.startswith(path.name))
    store.close()
