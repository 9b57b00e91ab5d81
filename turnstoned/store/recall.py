"""Full-text search over every persisted message (SQLite FTS5).

``messages_fts`` holds one row per searchable message, with ``rowid`` equal to
the message's id: the text the model and the user saw (user text, assistant
text, tool call names and argument values, tool results) and a short ``kind``
label (``user``, ``notice``, ``assistant``, ``tool:<name>``). The store adds the
row in the same transaction as the message, so the index never lags behind.

Calls of the ``recall`` tool and their results are not indexed: a search would
otherwise find its own earlier queries and results, and every recall would make
the next one noisier.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstoned.store.sqlite import Database

log = logging.getLogger(__name__)

FTS_TABLE = "messages_fts"
SKIPPED_TOOLS = frozenset({"recall"})
HIGHLIGHT = ("«", "»")
WHOLE_TEXT_CHARS = 600  # shorter messages are shown whole, longer ones as a snippet
SNIPPET_TOKENS = 48
_BACKFILL_BATCH = 2000

INSERT_SQL = f"INSERT INTO {FTS_TABLE} (rowid, text, kind) VALUES (last_insert_rowid(), ?, ?)"


class RecallUnavailable(Exception):
    """This Python's SQLite was built without FTS5."""


def quote_query(text: str) -> str:
    """Turn any user text into a safe FTS5 query: an implicit AND of literal terms.

    Each whitespace-separated term becomes a double-quoted string with its inner
    quotes doubled, so ``*``, ``-``, ``NEAR``, ``AND``, ``(`` and ``:`` lose any
    operator meaning. ``hello world`` -> ``"hello" "world"``; empty -> ``""``.
    NUL characters separate terms (SQLite would end the query string at one).
    """
    terms = text.replace("\x00", " ").split()
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return ""


def _call_text(call: dict[str, Any]) -> str:
    """A tool call as searchable text: its name and the values of its arguments."""
    name = str(call.get("name", ""))
    raw = call.get("arguments") or ""
    try:
        args = json.loads(raw)
    except (ValueError, TypeError):
        return f"{name} {raw}"
    if isinstance(args, dict):
        values = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                  for v in args.values()]
        return " ".join([name, *values])
    return f"{name} {raw}"


def index_entry(body: str) -> tuple[str, str] | None:
    """``(text, kind)`` to index for one stored message body, or None to skip it."""
    try:
        msg = json.loads(body)
    except ValueError:
        return None
    if not isinstance(msg, dict):
        return None
    role = msg.get("role")
    if role == "user":
        text, kind = _content_text(msg.get("content")), "notice" if msg.get("notice") else "user"
    elif role == "assistant":
        calls = [c for c in msg.get("tool_calls") or () if isinstance(c, dict)
                 and c.get("name") not in SKIPPED_TOOLS]
        text = "\n".join(filter(None, [_content_text(msg.get("content")),
                                       *(_call_text(c) for c in calls)]))
        kind = "assistant"
    elif role == "tool":
        name = str(msg.get("name") or "")
        if name in SKIPPED_TOOLS:
            return None
        text, kind = _content_text(msg.get("content")), f"tool:{name}" if name else "tool"
    else:
        return None
    return (text, kind) if text.strip() else None


def install(db: sqlite3.Connection) -> bool:
    """Create the index if it is missing (indexing existing messages); False without FTS5."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (FTS_TABLE,)).fetchone()
    if exists:
        return True
    started = time.monotonic()
    db.execute("BEGIN IMMEDIATE")
    try:
        _create(db)
        count = _backfill(db)
    except sqlite3.OperationalError as exc:
        db.execute("ROLLBACK")
        if "fts5" in str(exc).lower():
            log.warning("SQLite has no FTS5: recall is unavailable (%s)", exc)
            return False
        raise
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    if count:
        log.info("indexed %d existing messages for recall in %.1fs", count,
                 time.monotonic() - started)
    return True


def _create(db: sqlite3.Connection) -> None:
    # executescript would commit the open transaction: run the statements one by one.
    db.execute(f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5("
               "text, kind UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute(f"CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages "
               f"BEGIN DELETE FROM {FTS_TABLE} WHERE rowid = old.id; END")


def _backfill(db: sqlite3.Connection) -> int:
    """Index every stored message; returns how many rows went into the index."""
    count, last = 0, 0
    while True:
        rows = db.execute("SELECT id, body FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                          (last, _BACKFILL_BATCH)).fetchall()
        if not rows:
            return count
        batch = []
        for msg_id, body in rows:
            entry = index_entry(body)
            if entry is not None:
                batch.append((msg_id, *entry))
        db.executemany(f"INSERT INTO {FTS_TABLE} (rowid, text, kind) VALUES (?, ?, ?)", batch)
        count += len(batch)
        last = rows[-1][0]


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching message."""

    message_id: int
    session_id: str
    title: str | None
    created_at: float
    kind: str
    text: str  # the whole text (short messages) or a snippet, matches marked «like this»
    chars: int  # length of the whole indexed text
    compacted: bool = False  # its session's model reads a summary instead of it


# Ranking reads only the index; joins and snippets are then made for one page of rows.
_RANK_SQL = f"""
SELECT rowid FROM {FTS_TABLE}
WHERE {FTS_TABLE} MATCH ? AND rowid NOT IN (SELECT value FROM json_each(?))
  AND rowid NOT IN (SELECT id FROM messages WHERE rewound IS NOT NULL)
ORDER BY rank LIMIT ? OFFSET ?
"""
_DETAIL_SQL = f"""
SELECT m.id, m.session_id, s.title, m.created_at, f.kind,
       CASE WHEN length(f.text) <= {WHOLE_TEXT_CHARS}
            THEN highlight({FTS_TABLE}, 0, ?, ?)
            ELSE snippet({FTS_TABLE}, 0, ?, ?, '…', {SNIPPET_TOKENS}) END,
       length(f.text),
       m.id < COALESCE((SELECT MAX(c.keep_from) FROM compactions AS c
                        WHERE c.session_id = m.session_id), 0)
FROM {FTS_TABLE} AS f
JOIN messages AS m ON m.id = f.rowid
JOIN sessions AS s ON s.id = m.session_id
WHERE {FTS_TABLE} MATCH ? AND f.rowid IN (SELECT value FROM json_each(?))
"""


def current_turn(store: Database, session_id: str) -> str | None:
    """The turn of the session's newest message: the one a running tool call belongs to."""
    rows = store.query("SELECT turn_id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                       (session_id,))
    return rows[0][0] if rows else None


def search(store: Database, query: str, *, limit: int = 20, offset: int = 0,
           exclude: tuple[str, str | None] | None = None) -> list[Hit]:
    """Messages matching every term of ``query`` (any text is valid), best first.

    ``exclude`` is ``(session_id, turn_id)``: that turn's messages are left out
    (the model has them in front of it already). Raises ``RecallUnavailable``
    without FTS5.
    """
    if not store.fts_enabled:
        raise RecallUnavailable("full-text search (SQLite FTS5) is not available in this "
                                "Python's SQLite build")
    match = quote_query(query)
    if not match:
        return []
    excluded = [r[0] for r in store.query(
        "SELECT id FROM messages WHERE session_id = ? AND turn_id IS ?", exclude)
    ] if exclude else []
    ranked = [r[0] for r in store.query(_RANK_SQL, (match, json.dumps(excluded), limit, offset))]
    if not ranked:
        return []
    rows = store.query(_DETAIL_SQL, (*HIGHLIGHT, *HIGHLIGHT, match, json.dumps(ranked)))
    hits = {row[0]: Hit(message_id=row[0], session_id=row[1], title=row[2], created_at=row[3],
                        kind=row[4], text=row[5], chars=row[6], compacted=bool(row[7]))
            for row in rows}
    return [hits[i] for i in ranked if i in hits]
