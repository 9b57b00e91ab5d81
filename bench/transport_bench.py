"""The daemon's stdin path in-process: bytes on a pipe -> messages handed to the protocol.

    .venv/bin/python bench/transport_bench.py [--frames 20000] [--runs 5]

Compares turnstoned's reader (turnstoned.daemon.transport: frames parsed on the event loop)
with pygls' own (pygls.io_.run_async over StdinAsyncReader: a thread hop per header line
and per body), on the same pipe, protocol and frames: typical `turn/start` requests and a
few large ones. The handlers do not run; this is only reading, decoding and dispatch.
Prints frames/s, medians of alternating runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from turnstoned.daemon.server import create
from turnstoned.daemon.transport import Link, served_methods


def frames(n: int) -> bytes:
    out = bytearray()
    for i in range(n):
        text = "x" * (200_000 if i % 1000 == 0 else 60)
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "turn/start", "params": {
            "sessionId": "0123456789abcdef0123456789abcdef",
            "input": [{"type": "text", "text": text}]}}).encode()
        out += b"Content-Length: %d\r\n\r\n" % len(body) + body
    return bytes(out)


def counting_protocol(n: int, done: asyncio.Future[None]) -> Any:
    protocol = create().protocol
    seen = [0]

    def handle_message(_: Any) -> None:
        seen[0] += 1
        if seen[0] == n and not done.done():
            done.set_result(None)

    protocol.handle_message = handle_message
    return protocol


def feed(data: bytes) -> int:
    read, write = os.pipe()

    def pump() -> None:
        with os.fdopen(write, "wb") as out:
            out.write(data)

    threading.Thread(target=pump, daemon=True).start()
    return read


async def ours(data: bytes, n: int) -> float:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    protocol = counting_protocol(n, done)
    t0 = time.perf_counter()
    link = Link(protocol, served_methods())
    await link.start(os.fdopen(feed(data), "rb", buffering=0))  # the transport closes it
    await done
    elapsed = time.perf_counter() - t0
    link.close("done")
    return elapsed


async def pygls_reader(data: bytes, n: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    from pygls.io_ import StdinAsyncReader, run_async

    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    protocol = counting_protocol(n, done)
    stop = threading.Event()
    t0 = time.perf_counter()
    with os.fdopen(feed(data), "rb") as pipe, ThreadPoolExecutor(2) as pool:
        task = asyncio.ensure_future(run_async(stop, StdinAsyncReader(pipe, pool), protocol))
        await done
        elapsed = time.perf_counter() - t0
        stop.set()
        await task
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data = frames(args.frames)
    a, b = [], []
    for _ in range(args.runs):
        a.append(asyncio.run(ours(data, args.frames)))
        b.append(asyncio.run(pygls_reader(data, args.frames)))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{args.frames:,} frames ({len(data) / 1e6:.1f} MB) read and dispatched, median of "
          f"{args.runs}:")
    print(f"  turnstoned.daemon.transport   {args.frames / ma:9.0f} frames/s  ({ma * 1000:.0f} ms)")
    print(f"  pygls run_async        {args.frames / mb:9.0f} frames/s  ({mb * 1000:.0f} ms)")
    print(f"  speed-up               {mb / ma:9.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
