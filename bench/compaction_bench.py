"""A long session against a small context window: it compacts and keeps answering. Prints figures.

    .venv/bin/python bench/compaction_bench.py [--turns 200] [--window 16384] [--output 6000]
                                               [--compare]

A real daemon process (``python -m turnstoned``, raw JSON-RPC client) runs one
session of ``--turns`` turns. In each, the scripted model (tests/fakes/model_server.py,
in this process, on loopback) calls ``read_file`` on a ``--output``-char file, then
answers; a request without tools (the summariser's side call) gets a ~1,500-char
summary. The model server refuses, as llama-server does, any prompt over the window
(prompt tokens counted as a quarter of the request's characters), so a prompt that
did not fit would show as a refusal, and the turn would fail unless compaction saved
it.

Figures: turns completed, compactions (by trigger and mode), the largest prompt the
server saw vs the window (turn calls and summary calls), refusals, the session's
history in the store, tool results cut to fit, the daemon's peak RSS (``VmHWM`` of /proc/<pid>/status) after
10, 50, 100 and all turns, and turn times. ``--compare`` runs the same script with
``compact_at = 0`` (no compaction) and reports where it fails.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, prompt_tokens
from tests.turnkit import Brain

SUMMARY = " ".join(["The user asked for files to be read one at a time; each was read and",
                    "acknowledged. Files f1 to f20 hold numbered lines of filler text."] * 10)
FILES = 20


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def make_files(root: Path, size: int) -> None:
    for n in range(1, FILES + 1):
        lines = [f"f{n} line {i}: the quick brown fox jumps over the lazy dog {n * i}"
                 for i in range(size // 60 + 1)]
        (root / f"f{n}.txt").write_text("\n".join(lines)[:size] + "\n")


def run(turns: int, window: int, output: int, compact_at: float) -> dict[str, Any]:
    """One session of ``turns`` turns in a fresh daemon; its figures."""
    home = Path(tempfile.mkdtemp(prefix="compaction-bench-"))
    work = home / "work"
    work.mkdir()
    make_files(work, output)
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(
        f"[model]\ncontext_window = {window}\n[session]\ncompact_at = {compact_at}\n")
    brain = Brain(SUMMARY)
    sizes: list[tuple[bool, int]] = []  # (summary call, prompt tokens) of every request

    def answer(request: dict[str, Any]) -> Any:
        sizes.append((not request.get("tools"), prompt_tokens(request)))
        return brain(request)

    figures: dict[str, Any] = {"hwm": {}, "times": [], "failed_at": None}
    with ScriptedModel(default=answer, record=False) as model:
        model.max_prompt_tokens = window
        env = {"TURNSTONED_HOME": str(home), "OPENAI_BASE_URL": model.base_url,
               "OPENAI_API_KEY": "sk-bench", "TURNSTONED_MODEL": "scripted",
               "TURNSTONED_LOG": "WARNING"}
        daemon = RawDaemon(env, cwd=str(work))
        try:
            daemon.initialize()
            sid = daemon.result("session/start", {"cwd": str(work)})["sessionId"]
            for n in range(1, turns + 1):
                began = time.perf_counter()
                tid = daemon.result("turn/start", {"sessionId": sid, "input": [
                    {"type": "text", "text": f"read f{(n - 1) % FILES + 1}.txt"}]})["turnId"]
                done = daemon.wait_for("turn/completed", lambda e, t=tid: e["turnId"] == t, 120)
                figures["times"].append(time.perf_counter() - began)
                if done["status"] != "completed":
                    figures["failed_at"] = (n, done["error"]["kind"] if done["error"] else "?")
                    break
                if n in (10, 50, 100) or n == turns:
                    figures["hwm"][n] = status_kib(daemon.proc.pid, "VmHWM")
            figures["rss_end"] = status_kib(daemon.proc.pid, "VmRSS")
            figures["compactions"] = daemon.of("session/compacted")
            figures["completed"] = len(figures["times"]) - (figures["failed_at"] is not None)
        finally:
            daemon.close()
        figures["refused"] = model.refused_for_size
    figures["turn_prompt_max"] = max((t for s, t in sizes if not s), default=0)
    figures["summary_prompt_max"] = max((t for s, t in sizes if s), default=0)
    figures["requests"] = len(sizes)
    with sqlite3.connect(home / "data" / "turnstoned.sqlite3") as db:
        figures["stored"] = db.execute("SELECT COUNT(*), SUM(LENGTH(body)) FROM messages").fetchone()
        figures["cut"] = db.execute(
            "SELECT COUNT(*), SUM(body LIKE '%chars truncated%' OR body LIKE '%result dropped%') "
            "FROM messages WHERE role = 'tool'").fetchone()
    return figures


def report(title: str, f: dict[str, Any], turns: int, window: int) -> None:
    print(title)
    failed = f["failed_at"]
    print(f"  turns completed        {f['completed']} of {turns}"
          + (f"  (turn {failed[0]} failed: {failed[1]})" if failed else ""))
    kinds = Counter((e["trigger"], e["mode"]) for e in f.get("compactions", []))
    print(f"  compactions            {sum(kinds.values())}  "
          + ", ".join(f"{t}/{m}: {c}" for (t, m), c in sorted(kinds.items())))
    print(f"  largest prompt (turns) {f['turn_prompt_max']:,} tokens = "
          f"{f['turn_prompt_max'] / window:.0%} of the {window:,}-token window")
    if f["summary_prompt_max"]:
        print(f"  largest summary call   {f['summary_prompt_max']:,} tokens = "
              f"{f['summary_prompt_max'] / window:.0%} of the window")
    print(f"  prompts refused        {f['refused']} (over the window)")
    results, cut = f["cut"]
    print(f"  tool results cut       {cut or 0} of {results} (to the room left in the window)")
    count, chars = f["stored"]
    print(f"  history in the store   {count:,} messages, {(chars or 0) / 1e6:.1f} MB of JSON")
    hwm = ", ".join(f"{n} turns {kib / 1024:.1f} MiB" for n, kib in sorted(f["hwm"].items()))
    print(f"  daemon peak RSS        {hwm}  (VmRSS at the end {f['rss_end'] / 1024:.1f} MiB)")
    times = sorted(f["times"])
    print(f"  turn time              median {statistics.median(times) * 1000:.0f} ms, "
          f"p95 {times[int(len(times) * 0.95) - 1] * 1000:.0f} ms, total {sum(times):.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=16384)
    parser.add_argument("--output", type=int, default=6000, help="chars of each tool result")
    parser.add_argument("--compare", action="store_true", help="also run without compaction")
    args = parser.parse_args()
    print(f"{args.turns} turns, each a read_file of {args.output:,} chars and an answer; "
          f"window {args.window:,} tokens, the server refuses anything larger\n")
    report("with compaction (compact_at = 0.8):",
           run(args.turns, args.window, args.output, 0.8), args.turns, args.window)
    if args.compare:
        print()
        report("without compaction (compact_at = 0):",
               run(args.turns, args.window, args.output, 0.0), args.turns, args.window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
