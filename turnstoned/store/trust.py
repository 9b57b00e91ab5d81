"""The user's decisions about project MCP configs, per workspace and content hash."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

Decision = Literal["trusted", "denied"]

_DDL = """
CREATE TABLE IF NOT EXISTS mcp_trust (
    workspace TEXT NOT NULL,
    hash TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('trusted', 'denied')),
    config_path TEXT NOT NULL,
    decided_at REAL NOT NULL,
    PRIMARY KEY (workspace, hash)
);
"""


def install(db: sqlite3.Connection) -> None:
    """Create the trust table if it is missing."""
    db.executescript(_DDL)


class TrustStore:
    """``trusted``/``denied`` for one version (sha256) of one workspace's ``.mcp.json``."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def decision(self, workspace: str, digest: str) -> Decision | None:
        rows = self._store.query(
            "SELECT decision FROM mcp_trust WHERE workspace = ? AND hash = ?", (workspace, digest))
        if not rows:
            return None
        return "trusted" if rows[0][0] == "trusted" else "denied"

    def record(self, workspace: str, config_path: str, digest: str, decision: Decision) -> None:
        with self._store.transaction() as db:
            db.execute(
                "INSERT INTO mcp_trust (workspace, hash, decision, config_path, decided_at) "
                "VALUES (?,?,?,?,?) ON CONFLICT (workspace, hash) DO UPDATE SET "
                "decision = excluded.decision, config_path = excluded.config_path, "
                "decided_at = excluded.decided_at",
                (workspace, digest, decision, config_path, time.time()))

    def revoke(self, workspace: str) -> None:
        """Forget every trusted version of the workspace's config."""
        with self._store.transaction() as db:
            db.execute("DELETE FROM mcp_trust WHERE workspace = ? AND decision = 'trusted'",
                       (workspace,))

    def ever_trusted(self, workspace: str) -> bool:
        return bool(self._store.query(
            "SELECT 1 FROM mcp_trust WHERE workspace = ? AND decision = 'trusted' LIMIT 1",
            (workspace,)))
