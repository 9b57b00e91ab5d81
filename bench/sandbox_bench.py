"""Cost of the command sandbox: `true` and `seq 1000000` through procs.start_script, sandboxed vs not.

Spawn: wall time from ``start_script`` to the process reaped and its pipes closed, for
``true``, the variants interleaved run by run; median, min and max. With a sandbox,
``preexec_fn`` makes CPython fork() instead of vfork(), and fork copies the parent's page
tables: so the spawn is also timed with the process grown to ``--rss`` MB (the daemon with
pygls, openai and mcp loaded is ~100 MB), and through subprocess directly: with a no-op
``preexec_fn`` (the fork's share), the sandbox's, and from a thread that confined itself
(``Sandbox.confine_this_thread``: vfork kept, no preexec_fn).

Streaming: ``seq 1 N`` with every chunk counted as it arrives (what bash hands the editor),
lines per second from the spawn and from the first chunk (the flow alone), medians of
``--stream-runs``.

    .venv/bin/python bench/sandbox_bench.py [--runs 200] [--rss 100] [--lines 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turnstoned.sandbox import Profile, Sandbox, prepare, status
from turnstoned.tools.procs import start_script

ENV = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8"}


def rss_mb() -> int:
    with open("/proc/self/status") as handle:
        return int(handle.read().split("VmRSS:")[1].split()[0]) // 1024


async def _spawn(cwd: Path, sandbox: Sandbox | None) -> float:
    start = time.perf_counter()
    proc = await start_script("true", stop_on_error=False, cwd=cwd, env=ENV,
                              on_stdout=lambda _: None, on_stderr=lambda _: None,
                              sandbox=sandbox)  # fmt: skip
    await proc.wait_exit(10)
    await proc.finish()
    assert proc.returncode == 0, proc.returncode
    return time.perf_counter() - start


async def _stream(cwd: Path, sandbox: Sandbox | None, lines: int) -> tuple[float, float]:
    """(spawn to the last line, first chunk to the last line) in seconds."""
    count = 0
    first = 0.0

    def on_stdout(chunk: str) -> None:
        nonlocal count, first
        if not count:
            first = time.perf_counter()
        count += chunk.count("\n")

    start = time.perf_counter()
    proc = await start_script(f"seq 1 {lines}", stop_on_error=False, cwd=cwd, env=ENV,
                              on_stdout=on_stdout, on_stderr=lambda _: None,
                              sandbox=sandbox)  # fmt: skip
    await proc.wait_exit(60)
    await proc.wait_output_closed(10)
    end = time.perf_counter()
    await proc.finish()
    assert count == lines, (count, lines)
    return end - start, end - first


def _popen(preexec: Callable[[], None] | None) -> float:
    start = time.perf_counter()
    subprocess.run(["true"], preexec_fn=preexec, start_new_session=True, check=True)
    return time.perf_counter() - start


def _figures(label: str, times: list[float]) -> str:
    ms = [t * 1000 for t in times]
    return (f"  {label:<40} median {statistics.median(ms):6.2f} ms   "
            f"min {min(ms):6.2f}   max {max(ms):7.2f}")


async def _spawns(cwd: Path, sandbox: Sandbox, runs: int) -> None:
    for _ in range(10):  # warm-up
        await _spawn(cwd, None)
        await _spawn(cwd, sandbox)
    plain, boxed = [], []
    for _ in range(runs):
        plain.append(await _spawn(cwd, None))
        boxed.append(await _spawn(cwd, sandbox))
    print(_figures("start_script true, unsandboxed", plain))
    print(_figures("start_script true, sandboxed", boxed))
    print(f"  {'sandbox adds (median)':<40} "
          f"{(statistics.median(boxed) - statistics.median(plain)) * 1000:6.2f} ms")
    bare, noop, full = [], [], []
    for _ in range(runs // 2):
        bare.append(_popen(None))
        noop.append(_popen(lambda: None))
        full.append(_popen(sandbox.preexec))
    print(_figures("subprocess true (vfork)", bare))
    print(_figures("subprocess true, no-op preexec (fork)", noop))
    print(_figures("subprocess true, sandbox preexec", full))
    print(_figures("subprocess true, confined thread", _from_confined_thread(sandbox, runs // 2)))


def _from_confined_thread(sandbox: Sandbox, runs: int) -> list[float]:
    """``true`` started (vfork, no preexec_fn) from a thread that confined itself."""
    times: list[float] = []

    def spawner() -> None:
        sandbox.confine_this_thread()
        for _ in range(runs):
            times.append(_popen(None))

    thread = threading.Thread(target=spawner)
    thread.start()
    thread.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rss", type=int, default=100, help="MB to grow to for the 2nd round")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--stream-runs", type=int, default=7)
    opts = parser.parse_args()
    state = status()
    print(f"sandbox: {state.detail}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   "
          f"cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        sandbox = prepare(Profile(cwd))
        print(f"\nspawn, {opts.runs} runs each, process RSS {rss_mb()} MB:")
        asyncio.run(_spawns(cwd, sandbox, opts.runs))
        ballast = bytearray(max(0, opts.rss - rss_mb()) << 20)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1  # touch every page: resident, as a daemon's heap is
        print(f"\nspawn, {opts.runs} runs each, process RSS {rss_mb()} MB:")
        asyncio.run(_spawns(cwd, sandbox, opts.runs))
        del ballast
        print(f"\nstreaming seq 1 {opts.lines}, median of {opts.stream_runs}:")

        async def streams() -> dict[str, list[tuple[float, float]]]:
            found: dict[str, list[tuple[float, float]]] = {"unsandboxed": [], "sandboxed": []}
            await _stream(cwd, None, 1000)
            for _ in range(opts.stream_runs):
                found["unsandboxed"].append(await _stream(cwd, None, opts.lines))
                found["sandboxed"].append(await _stream(cwd, sandbox, opts.lines))
            return found

        for label, runs in asyncio.run(streams()).items():
            whole = statistics.median(t for t, _ in runs)
            flow = statistics.median(f for _, f in runs)
            print(f"  {label:<12} spawn→EOF {whole * 1000:6.1f} ms ({opts.lines / whole:11,.0f} "
                  f"lines/s)   first chunk→EOF {flow * 1000:6.1f} ms "
                  f"({opts.lines / flow:11,.0f} lines/s)")
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
