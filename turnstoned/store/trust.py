"""The user's decisions about a project's own configuration files, per workspace and content
hash: its ``.mcp.json`` (subject ``mcp``) and its ``.turnstone/policies.toml``
(subject ``policies``). Each subject is decided on its own."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

Decision = Literal["trusted", "denied"]
Subject = Literal["mcp", "policies"]

_DDL = """
CREATE TABLE IF NOT EXISTS project_trust (
    subject TEXT NOT NULL,
    workspace TEXT NOT NULL,
    hash TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('trusted', 'denied')),
    config_path TEXT NOT NULL,
    decided_at REAL NOT NULL,
    PRIMARY KEY (subject, workspace, hash)
);
"""
# The table of earlier versions held MCP decisions only.
_MIGRATE = """
INSERT OR IGNORE INTO project_trust (subject, workspace, hash, decision, config_path, decided_at)
    SELECT 'mcp', workspace, hash, decision, config_path, decided_at FROM mcp_trust;
DROP TABLE mcp_trust;
"""


def install(db: sqlite3.Connection) -> None:
    """Create the trust table if it is missing (taking over an older MCP-only table)."""
    db.executescript(_DDL)
    old = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mcp_trust'")
    if old.fetchone():
        db.executescript(f"BEGIN IMMEDIATE; {_MIGRATE} COMMIT;")


class TrustStore:
    """``trusted``/``denied`` for one version (sha256) of one workspace's file of ``subject``."""

    def __init__(self, store: Database, subject: Subject = "mcp") -> None:
        self._store = store
        self.subject = subject

    def decision(self, workspace: str, digest: str) -> Decision | None:
        rows = self._store.query(
            "SELECT decision FROM project_trust WHERE subject = ? AND workspace = ? AND hash = ?",
            (self.subject, workspace, digest))
        if not rows:
            return None
        return "trusted" if rows[0][0] == "trusted" else "denied"

    def record(self, workspace: str, config_path: str, digest: str, decision: Decision) -> None:
        with self._store.transaction() as db:
            db.execute(
                "INSERT INTO project_trust (subject, workspace, hash, decision, config_path, "
                "decided_at) VALUES (?,?,?,?,?,?) ON CONFLICT (subject, workspace, hash) DO "
                "UPDATE SET decision = excluded.decision, config_path = excluded.config_path, "
                "decided_at = excluded.decided_at",
                (self.subject, workspace, digest, decision, config_path, time.time()))

    def revoke(self, workspace: str) -> None:
        """Forget every trusted version of the workspace's file."""
        with self._store.transaction() as db:
            db.execute("DELETE FROM project_trust WHERE subject = ? AND workspace = ? AND "
                       "decision = 'trusted'", (self.subject, workspace))

    def ever_trusted(self, workspace: str) -> bool:
        return bool(self._store.query(
            "SELECT 1 FROM project_trust WHERE subject = ? AND workspace = ? AND "
            "decision = 'trusted' LIMIT 1", (self.subject, workspace)))
