"""Benchmark: an MCP tool call through MCPManager vs the SDK's ClientSession directly.

Both sides talk to the same kind of server (tests/mcp_servers/everything.py over
stdio, each its own process) with the same protocol (initialize, 2025-11-25)
and call the trivial ``echo`` tool. Calls alternate in blocks so machine noise
hits both sides alike. Also reports how long ``start()`` takes to return with
5 configured servers and how long until all 5 are connected.

    .venv/bin/python bench/mcp_bench.py [--calls 2000] [--block 100]

Goal: manager mean <= 1.1x direct mean.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SERVER = ROOT / "tests" / "mcp_servers" / "everything.py"

from turnstoned.mcp.config import ServerSpec
from turnstoned.mcp.manager import MCPManager


async def _timed_block(call: Callable[[], Awaitable[object]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t0)
    return out


async def bench_calls(calls: int, block: int) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    spec = ServerSpec(name="bench", type="stdio", command=sys.executable, args=[str(SERVER)])
    manager = MCPManager([spec])
    await manager.start()
    await manager.wait_ready(60)
    direct: list[float] = []
    managed: list[float] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()

        async def direct_call() -> object:
            return await session.call_tool("echo", {"text": "ping"}, read_timeout_seconds=120.0)

        async def managed_call() -> object:
            return await manager.call_tool("mcp__bench__echo", {"text": "ping"})

        await _timed_block(direct_call, 50)  # warm both paths
        await _timed_block(managed_call, 50)
        for _ in range(max(1, calls // block)):
            direct += await _timed_block(direct_call, block)
            managed += await _timed_block(managed_call, block)
    await manager.close()
    _report("direct ClientSession.call_tool", direct)
    _report("MCPManager.call_tool", managed)
    ratio = statistics.fmean(managed) / statistics.fmean(direct)
    median_ratio = statistics.median(managed) / statistics.median(direct)
    print(f"ratio manager/direct: mean {ratio:.3f}x, median {median_ratio:.3f}x (goal <= 1.1x)")


def _report(label: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    p95 = sorted(ms)[int(len(ms) * 0.95)]
    mean, median = statistics.fmean(ms), statistics.median(ms)
    print(f"{label:32s} n={len(ms)} mean {mean:.3f} ms  median {median:.3f} ms  p95 {p95:.3f} ms")


async def bench_startup(servers: int) -> None:
    specs = [
        ServerSpec(
            name=f"s{i}", type="stdio", command=sys.executable, args=[str(SERVER), "--no-resources"]
        )
        for i in range(servers)
    ]
    manager = MCPManager(specs)
    t0 = time.perf_counter()
    await manager.start()
    returned = time.perf_counter() - t0
    await manager.wait_ready(120)
    ready = time.perf_counter() - t0
    connected = sum(1 for s in manager.status() if s.status == "connected")
    await manager.close()
    print(f"start() with {servers} servers returned in {returned * 1000:.2f} ms;", end=" ")
    print(f"{connected} connected after {ready:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--servers", type=int, default=5)
    opts = parser.parse_args()
    t0 = time.perf_counter()
    import turnstoned.mcp.manager  # noqa: F401  (already imported: shows the package import is cheap)

    print(f"SDK imported by 'import turnstoned.mcp.manager': {'mcp' in sys.modules}")
    asyncio.run(bench_startup(opts.servers))
    asyncio.run(bench_calls(opts.calls, opts.block))
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
