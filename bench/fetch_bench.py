"""What the guarded fetcher costs over a plain GET of the same local page.

A loopback HTTP server serves one page; every timed request is made from the
same event loop. Compared, per request (median over ``--runs``):

- plain GET, transport per request: the primitive the fetcher is built on, a
  new connection each time, no guard (the baseline: the ratio column);
- plain GET, client per request: ``httpx2.AsyncClient().get`` as most code does;
- plain GET, kept-alive client: one pooled client (no connection set-up at all);
- guarded fetch: ``GuardedFetcher.fetch`` of the address (parse, screen,
  decide, pinned request, bounded read);
- guarded fetch of a name: the same through a resolver (``vm`` from
  /etc/hosts via getaddrinfo, the system resolver);
- and ``screen_url`` alone (what prepare pays), for a name and an address.

    python bench/fetch_bench.py [--runs 300] [--sizes 10000 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2

from tests.fakes.web import Site, page
from turnstoned.net.fetch import GuardedFetcher
from turnstoned.net.screen import system_resolver


async def interleaved(variants: list[tuple[str, Callable[[], Awaitable[object]]]],
                      runs: int) -> list[tuple[str, float]]:
    """Median ms per variant; the variants take turns, so a busy machine slows all alike."""
    samples: dict[str, list[float]] = {label: [] for label, _ in variants}
    for n in range(max(5, runs // 10) + runs):
        for label, fn in variants:
            t0 = time.perf_counter()
            await fn()
            if n >= max(5, runs // 10):
                samples[label].append(time.perf_counter() - t0)
    return [(label, statistics.median(samples[label]) * 1000) for label, _ in variants]


def name_for_loopback() -> str | None:
    """A host name other than ``localhost`` that the system resolves to 127.0.0.1."""
    for name in (socket.gethostname(), "vm", "runsc"):
        try:
            if "127.0.0.1" in system_resolver(name, 80):
                return name
        except OSError:
            continue
    return None


async def one_size(size: int, runs: int) -> None:
    site = Site("bench")
    body = "<html><body>" + "<p>lorem ipsum dolor sit amet</p>" * (size // 32) + "</body></html>"
    site.routes["/page"] = page(body)
    url = f"{site.url}/page"
    fetcher = GuardedFetcher(proxies={})
    kw = {"allow_private": True, "private_origin": True, "max_bytes": 32 << 20, "timeout": 30.0}

    context = httpx2.create_ssl_context()  # built once, as the fetcher does

    async def fresh() -> object:
        async with httpx2.AsyncClient(verify=context, trust_env=False) as client:
            return (await client.get(url)).content

    pooled_client = httpx2.AsyncClient(verify=context, trust_env=False)

    async def raw() -> object:
        transport = httpx2.AsyncHTTPTransport(verify=context, trust_env=False)
        try:
            response = await transport.handle_async_request(httpx2.Request("GET", url))
            return b"".join([chunk async for chunk in response.aiter_raw()])
        finally:
            await transport.aclose()

    async def pooled() -> object:
        return (await pooled_client.get(url)).content

    async def guarded() -> object:
        return (await fetcher.fetch(url, **kw)).body

    variants = [("plain GET, transport per request", raw),
                ("plain GET, client per request", fresh),
                ("plain GET, kept-alive client", pooled),
                ("guarded fetch (address)", guarded)]
    name = name_for_loopback()
    if name:
        named = url.replace("127.0.0.1", name)

        async def guarded_name() -> object:
            return (await fetcher.fetch(named, **kw)).body

        variants.append((f"guarded fetch (name {name!r}, getaddrinfo)", guarded_name))
    rows = await interleaved(variants, runs)
    await pooled_client.aclose()
    site.close()
    base = rows[0][1]
    print(f"\npage of {len(body):,} bytes, median of {runs}:")
    for label, ms in rows:
        print(f"  {label:<46} {ms:8.3f} ms   {ms / base:5.2f}x   {ms - base:+7.3f} ms")


async def screening(runs: int) -> None:
    fetcher = GuardedFetcher(proxies={})
    name = name_for_loopback() or "localhost"
    print(f"\nprepare-time screen_url, median of {runs}:")
    for url in ("http://127.0.0.1/", f"http://{name}/", "http://0x7f.1/"):
        t0 = time.perf_counter()
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fetcher.screen_url(url)
            samples.append(time.perf_counter() - t0)
        print(f"  {url:<28} {statistics.median(samples) * 1000:8.3f} ms")


def html_scaling() -> None:
    """to_text on hostile pages of 1 and 2 MB: linear time means the second takes ~2x."""
    from turnstoned.net.html import to_text

    print("\nhtml.to_text, ms for 1 MB -> 2 MB of input (ratio ~2 = linear):")
    unit = {"ordinary page": "<div><p>Some <b>text</b> &amp; a <a href='x'>link</a></p></div>",
            "bare <": "<", "unclosed <a ": "<a ", "unclosed <!--": "<!--",
            "unclosed <script>": "<script>", 'unclosed quote <a href="': '<a href="',
            "nested <div>": "<div>"}
    for label, piece in unit.items():
        times = []
        for mb in (1, 2):
            text = piece * (mb * (1 << 20) // len(piece))
            t0 = time.perf_counter()
            to_text(text)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"  {label:<30} {times[0]:8.1f} -> {times[1]:8.1f} ms  ({times[1] / times[0]:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    opts = parser.parse_args()
    for size in opts.sizes:
        asyncio.run(one_size(size, opts.runs))
    asyncio.run(screening(opts.runs))
    html_scaling()


if __name__ == "__main__":
    main()
