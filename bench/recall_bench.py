"""Recall query latency over a large history, against the raw FTS5 query.

Generates N messages (default 100,000) into a temporary database through the
Store API (``create_session`` + ``append_messages``, which index each message in
the same transaction), then times, per query class:

- ``raw``    the bare FTS5 query on its own connection:
             ``SELECT rowid, snippet(...) FROM messages_fts WHERE messages_fts MATCH ?
             ORDER BY rank LIMIT 20``;
- ``search`` ``turnstoned.store.recall.search``: the same match joined to messages
             and sessions, the running turn excluded, highlight/snippet chosen per row;
- ``tool``   the ``recall`` tool's ``execute`` (worker thread, current-turn lookup,
             rendering of the result text).

It also reports the write throughput of indexed appends and the time to index
an existing database from scratch (what the first start after an upgrade does).

    python bench/recall_bench.py [--messages 100000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnstoned.core import messages as m
from turnstoned.store import SessionRow, Store
from turnstoned.store import recall as index
from turnstoned.tools import recall as tool
from turnstoned.tools.base import Services, SessionEnv, ToolContext

COMMON = ["the", "file", "test", "function", "error", "value", "return", "code", "change",
          "line", "run", "build", "config", "path", "module", "import", "class", "update",
          "fix", "check", "output"]
MEDIUM = [f"{a}{b}" for a in ("parse", "render", "load", "save", "index", "merge", "fetch",
                              "query", "cache", "route")
          for b in ("er", "ing", "ed", "or", "able")]
RARE = [f"zq{n:04d}" for n in range(2000)]
PER_SESSION = 100
QUERIES = {
    "rare word": lambda r: r.choice(RARE),
    "medium word": lambda r: r.choice(MEDIUM),
    "common word": lambda r: r.choice(COMMON),
    "2 words": lambda r: f"{r.choice(MEDIUM)} {r.choice(COMMON)}",
    "2 words, hostile": lambda r: f'"{r.choice(MEDIUM)} ({r.choice(COMMON)}*',
}


def sentence(r: random.Random, words: int) -> str:
    out = []
    for _ in range(words):
        x = r.random()
        out.append(r.choice(RARE) if x < 0.02 else r.choice(MEDIUM) if x < 0.25
                   else r.choice(COMMON))
    return " ".join(out)


def message(r: random.Random, i: int, turn: str) -> tuple[str, str, str]:
    kind = i % 4
    if kind == 0:
        msg = m.Message(role="user", content=sentence(r, r.randint(5, 30)), turn_id=turn)
    elif kind == 1:
        call = m.ToolCall(id=f"c{i}", name="bash",
                          arguments=json.dumps({"command": sentence(r, 6)}))
        msg = m.Message(role="assistant", content=sentence(r, 10), tool_calls=[call],
                        turn_id=turn)
    elif kind == 2:
        msg = m.Message(role="tool", name="bash", tool_call_id=f"c{i - 1}",
                        content=sentence(r, r.randint(20, 400)), turn_id=turn)
    else:
        msg = m.Message(role="assistant", content=sentence(r, r.randint(10, 80)), turn_id=turn)
    return msg.role, turn, m.encode(msg)


def fill(store: Store, total: int) -> tuple[float, str]:
    """Write ``total`` messages; returns (seconds, id of the last session)."""
    r = random.Random(7)
    started = time.perf_counter()
    sid = ""
    for s in range(0, total, PER_SESSION):
        sid = f"session{s // PER_SESSION:05d}"
        store.create_session(SessionRow(
            id=sid, kind="interactive", cwd="/tmp", workspace=None, model=None,
            title=sentence(r, 5), skip_permissions=False, grants=(), state={}, closed=True,
            created_at=time.time(), updated_at=time.time()))
        for t in range(0, PER_SESSION, 4):  # one commit per 4-message turn, as a session does
            turn = f"{sid}-t{t}"
            store.append_messages(sid, [message(r, s + t + k, turn) for k in range(4)])
    return time.perf_counter() - started, sid


def timed(fn: Callable[[str], object], items: list[str]) -> list[float]:
    """Milliseconds of ``fn(item)`` for each item."""
    out = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - started) * 1000)
    return out


def figures(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"{statistics.median(samples):8.2f} {p95:8.2f}"


RAW_SQL = (f"SELECT rowid, snippet({index.FTS_TABLE}, 0, '«', '»', '…', 48) "
           f"FROM {index.FTS_TABLE} WHERE {index.FTS_TABLE} MATCH ? ORDER BY rank LIMIT 20")


def bench_queries(store: Store, db_file: Path, current: str, repeat: int) -> None:
    raw = sqlite3.connect(db_file)
    env = SessionEnv(session_id=current, kind="interactive", cwd=Path("/tmp"),
                     services=Services(store=store))
    ctx = ToolContext(env=env)
    loop = asyncio.new_event_loop()
    r = random.Random(99)
    print(f"{'query class':<18} {'matches':>8} | {'raw FTS5 ms':>17} | {'search ms':>17} | "
          f"{'tool ms':>17}")
    print(f"{'':<18} {'':>8} | {'median':>8} {'p95':>8} | {'median':>8} {'p95':>8} | "
          f"{'median':>8} {'p95':>8}")
    for label, make in QUERIES.items():
        queries = [make(r) for _ in range(repeat)]
        match = [index.quote_query(q) for q in queries]
        count = statistics.median(raw.execute(
            f"SELECT count(*) FROM {index.FTS_TABLE} WHERE {index.FTS_TABLE} MATCH ?",
            (q,)).fetchone()[0] for q in match[:5])
        raw_ms = timed(lambda q: raw.execute(RAW_SQL, (q,)).fetchall(), match)
        search_ms = timed(lambda q: index.search(store, q, limit=20, exclude=(current, None)),
                          queries)

        def via_tool(q: str) -> None:
            call = tool.prepare(tool.Args(query=q), ctx)
            loop.run_until_complete(tool.execute(call, ctx))

        tool_ms = timed(via_tool, queries)
        print(f"{label:<18} {count:>8.0f} | {figures(raw_ms)} | {figures(search_ms)} | "
              f"{figures(tool_ms)}")
    loop.close()
    raw.close()


def bench_backfill(db_file: Path) -> None:
    db = sqlite3.connect(db_file)
    db.execute(f"DROP TABLE {index.FTS_TABLE}")
    db.commit()
    db.close()
    started = time.perf_counter()
    Store(db_file).close()
    print(f"indexing the existing messages on open: {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db_file = Path(tmp) / "bench.sqlite3"
        store = Store(db_file)
        seconds, last = fill(store, args.messages)
        size = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
        print(f"{args.messages:,} messages written through Store.append_messages in "
              f"{seconds:.1f} s ({args.messages / seconds:,.0f} msg/s, indexed in the same "
              f"transaction); database {size:.0f} MB")
        print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, "
              f"{args.repeat} queries per class, limit 20")
        bench_queries(store, db_file, last, args.repeat)
        store.close()
        bench_backfill(db_file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
