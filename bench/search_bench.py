"""Wall time of the search tool vs ripgrep and grep run directly with the same argv.

The tool runs through ``search.execute`` (spawn, read, parse, sort, format);
the baselines spawn the exact argv the tool builds with ``subprocess.run`` and
read the whole stdout from a pipe. Median of several runs per query, after one
warm-up pass so the tree is in the page cache. Goal: tool(rg) <= 1.1x rg.

    .venv/bin/python bench/search_bench.py [--root DIR] [--runs 7] [--query Q ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turnstoned.tools import search
from turnstoned.tools.base import SessionEnv, ToolContext

DEFAULT_ROOT = Path(__file__).resolve().parents[1] / ".venv/lib/python3.11/site-packages"
QUERIES = ["def __init__", "import asyncio", "class [A-Za-z]+Error", "xyzzy_not_there"]


async def _tool_once(query: str, root: Path) -> tuple[float, str]:
    """One execute() inside an already running loop, as in the daemon."""
    ctx = ToolContext(env=SessionEnv(session_id="bench", kind="interactive", cwd=root))
    call = search.prepare(search.Args(query=query, path=str(root)), ctx)
    start = time.perf_counter()
    out = await search.execute(call, ctx)
    return time.perf_counter() - start, out.summary or out.text()[:60]


def _direct_once(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, len(done.stdout)


def _median(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _hidden_rg_path() -> str:
    """A PATH holding only grep, so that the tool falls back to it."""
    bindir = Path(tempfile.mkdtemp(prefix="grep-only-"))
    grep = shutil.which("grep")
    assert grep is not None
    (bindir / "grep").symlink_to(grep)
    return str(bindir)


async def bench_query(query: str, root: Path, runs: int, grep_path: str) -> None:
    rg, grep = shutil.which("rg"), shutil.which("grep")
    assert rg and grep, "needs both rg and grep on PATH"
    env = dict(os.environ)
    rg_argv = search.rg_argv(rg, query, str(root))
    grep_argv = search.grep_argv(grep, query, str(root))
    rows: dict[str, list[float]] = {"tool(rg)": [], "rg": [], "tool(grep)": [], "grep -rn": []}
    summary, rg_bytes, grep_bytes = "", 0, 0
    await _tool_once(query, root)  # warm-up: page cache, imports
    for _ in range(runs):  # interleaved, so load changes on a shared machine hit every row
        elapsed, summary = await _tool_once(query, root)
        rows["tool(rg)"].append(elapsed)
        elapsed, rg_bytes = _direct_once(rg_argv, env)
        rows["rg"].append(elapsed)
        saved = os.environ["PATH"]
        os.environ["PATH"] = grep_path
        try:
            rows["tool(grep)"].append((await _tool_once(query, root))[0])
        finally:
            os.environ["PATH"] = saved
        elapsed, grep_bytes = _direct_once(grep_argv, {**env, "LC_ALL": "C"})
        rows["grep -rn"].append(elapsed)
    rg_ms = _median(rows["rg"])
    print(f"\nquery {query!r}: tool: {summary!r}; output rg {rg_bytes} B, grep {grep_bytes} B")
    for name, samples in rows.items():
        ms = _median(samples)
        print(f"  {name:<11} {ms:8.1f} ms   {ms / rg_ms:5.2f}x rg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--query", action="append", dest="queries")
    opts = parser.parse_args()
    files = sum(len(names) for _, _, names in os.walk(opts.root))
    print(f"tree: {opts.root} ({files} files); median of {opts.runs} runs; cores: {os.cpu_count()}")
    grep_path = _hidden_rg_path()
    for query in opts.queries or QUERIES:
        asyncio.run(bench_query(query, opts.root, opts.runs, grep_path))


if __name__ == "__main__":
    main()
