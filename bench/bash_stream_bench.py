"""Throughput of bash output streaming: `seq 1 N` through bash.execute vs a shell pipe.

Counts the lines delivered to ``emit_output`` while the tool runs (the chunks
the daemon would forward to the editor) and compares the rate with
``seq 1 N | cat > /dev/null`` started and timed the same way (wall clock from
spawn to completion, median of several runs).

    .venv/bin/python bench/bash_stream_bench.py [--lines 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turnstoned.tools import bash
from turnstoned.tools.base import SessionEnv, ToolContext


async def _tool_run(lines: int, cwd: Path) -> tuple[float, int, int]:
    delivered = 0
    calls = 0

    def emit(chunk: str) -> None:
        nonlocal delivered, calls
        delivered += chunk.count("\n")
        calls += 1

    ctx = ToolContext(env=SessionEnv(session_id="bench", kind="interactive", cwd=cwd),
                      call_id="b1", emit_output=emit)  # fmt: skip
    call = bash.prepare(bash.Args(command=f"seq 1 {lines}"), ctx)
    start = time.perf_counter()
    out = await bash.execute(call, ctx)
    elapsed = time.perf_counter() - start
    assert not out.is_error, out.text()[:200]
    return elapsed, delivered, calls


def _pipe_run(lines: int, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["bash", "-c", f"seq 1 {lines} | cat > /dev/null"], cwd=cwd, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        asyncio.run(_tool_run(1000, cwd))  # warm-up: imports, page cache
        _pipe_run(1000, cwd)
        tool_times, chunk_counts = [], []
        for _ in range(opts.runs):
            elapsed, delivered, calls = asyncio.run(_tool_run(opts.lines, cwd))
            assert delivered == opts.lines, (delivered, opts.lines)
            tool_times.append(elapsed)
            chunk_counts.append(calls)
        pipe_times = [_pipe_run(opts.lines, cwd) for _ in range(opts.runs)]
    tool_t, pipe_t = statistics.median(tool_times), statistics.median(pipe_times)
    tool_rate, pipe_rate = opts.lines / tool_t, opts.lines / pipe_t
    print(f"lines per run: {opts.lines:,}   runs: {opts.runs} (medians)")
    print(f"bash.execute -> emit_output: {tool_t * 1000:8.1f} ms  {tool_rate:14,.0f} lines/s  "
          f"({statistics.median(chunk_counts):.0f} emit calls)")  # fmt: skip
    print(f"seq | cat > /dev/null      : {pipe_t * 1000:8.1f} ms  {pipe_rate:14,.0f} lines/s")
    print(f"ratio tool/pipe            : {tool_rate / pipe_rate:8.2f}")


if __name__ == "__main__":
    main()
