"""The guarded fetcher against a small internet on 127.0.0.1 (see tests/fakes/web.py).

Public addresses (93.184.216.34, 1.1.1.1, ...) and private ones (10.0.0.5,
192.168.1.20) belong to loopback sites through the fetcher's test-only
resolver and dialer; every connection is recorded by the address it was
screened as, and every site records the requests it saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.web import (
    ForwardProxy,
    Internet,
    Reply,
    Site,
    deflate,
    gzip_bomb,
    page,
    redirect,
    tls_pair,
)
from turnstoned.net.fetch import FetchError, GuardedFetcher

PUB, CDN, LAN, LAN2, META = "93.184.216.34", "1.1.1.1", "10.0.0.5", "192.168.1.20", "169.254.169.254"
MB = 1 << 20


class Net:
    def __init__(self) -> None:
        self.internet = Internet()
        i = self.internet
        self.pub = i.site("pub", PUB)
        self.cdn = i.site("cdn", CDN)
        self.lan = i.site("lan", LAN, "::ffff:a00:5")
        self.lan2 = i.site("lan2", LAN2)
        self.meta = i.site("metadata", META)
        i.name("pub.test", PUB)
        i.name("cdn.test", CDN)
        i.name("lan.test", LAN)
        i.name("lan2.test", LAN2)
        i.name("mixed.test", PUB, LAN)
        i.name("nat64.test", "64:ff9b::a00:5")
        self.fetcher = GuardedFetcher(resolver=i.resolve, dialer=i.dial, proxies={})

    async def get(self, url: str, **kw: object) -> object:
        kw.setdefault("max_bytes", 4 * MB)
        kw.setdefault("timeout", 10.0)
        return await self.fetcher.fetch(url, **kw)  # type: ignore[arg-type]

    def hostile_untouched(self) -> bool:
        return not (self.lan.requests or self.lan2.requests or self.meta.requests
                    or self.internet.elsewhere.requests)


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    yield n
    n.internet.close()


async def refused(net: Net, url: str, says: str, **kw: object) -> FetchError:
    with pytest.raises(FetchError) as info:
        await net.get(url, **kw)
    assert says in info.value.message, info.value.message
    return info.value


async def test_public_page_is_fetched_from_the_screened_address(net: Net) -> None:
    net.pub.routes["/doc"] = page("<h1>Hello</h1>")
    got = await net.get("http://user:secret@pub.test/doc?x=1#frag")
    assert got.status == 200 and got.text() == "<h1>Hello</h1>"  # type: ignore[attr-defined]
    assert got.url == "http://pub.test/doc?x=1"  # type: ignore[attr-defined]
    req = net.pub.requests[0]
    assert req["host"] == "pub.test" and req["path"] == "/doc?x=1"
    assert "Authorization" not in req["headers"] and "secret" not in str(req)
    assert req["headers"]["User-Agent"].startswith("turnstoned/")
    assert net.internet.dials == [PUB]


@pytest.mark.parametrize("location", [f"http://{LAN}/admin", "http://lan.test/admin",
                                      "http://0xa.0.0.5/admin", "http://167772165/",
                                      "http://[::ffff:a00:5]/", "http://nat64.test/",
                                      "http://mixed.test/", f"http://{META}/latest/meta-data/",
                                      "http://metadata.google.internal/",
                                      "http://[::ffff:169.254.169.254]/"])
async def test_public_to_private_hop_is_refused_before_it_is_requested(
        net: Net, location: str) -> None:
    net.pub.routes["/go"] = redirect(location)
    err = await refused(net, "http://pub.test/go", "Blocked", allow_private=True)
    assert err.blocked
    assert net.internet.dials == [PUB] and net.hostile_untouched()


async def test_private_chain_needs_the_opt_in_and_an_approved_private_origin(net: Net) -> None:
    net.lan.routes["/a"] = redirect(f"http://{LAN2}/b")
    await refused(net, "http://lan.test/a", "allow_private_network")
    await refused(net, "http://lan.test/a", "allow_private_network", allow_private=True)
    assert net.internet.dials == [] and net.hostile_untouched()
    got = await net.get("http://lan.test/a", allow_private=True, private_origin=True)
    assert got.text() == "<html><body><p>lan2</p></body></html>"  # type: ignore[attr-defined]
    assert net.internet.dials == [LAN, LAN2]


async def test_a_public_hop_revokes_private_access_for_the_rest_of_the_chain(net: Net) -> None:
    net.lan.routes["/a"] = redirect("http://pub.test/b")
    net.pub.routes["/b"] = redirect("http://lan2.test/c")
    await refused(net, "http://lan.test/a", "private", allow_private=True, private_origin=True)
    assert net.internet.dials == [LAN, PUB] and not net.lan2.requests


async def test_metadata_is_refused_even_from_an_approved_private_origin(net: Net) -> None:
    net.lan.routes["/a"] = redirect("http://169.254.169.254/latest/meta-data/")
    await refused(net, "http://lan.test/a", "never allowed", allow_private=True,
                  private_origin=True)
    assert not net.meta.requests and net.internet.dials == [LAN]


async def test_redirect_loops_stop_after_five_redirects(net: Net) -> None:
    net.pub.routes["/loop"] = redirect("/loop")
    await refused(net, "http://pub.test/loop", "more than 5 redirects")
    assert len(net.pub.requests) == 6


async def test_five_redirects_are_followed(net: Net) -> None:
    for n in range(5):
        net.pub.routes[f"/r{n}"] = redirect(f"http://cdn.test/r{n + 1}" if n % 2 == 0 else
                                            f"/r{n + 1}", status=(301, 302, 303, 307, 308)[n])
        net.cdn.routes[f"/r{n}"] = redirect(f"http://pub.test/r{n + 1}")
    net.cdn.routes["/r5"] = page("end of the chain")
    got = await net.get("http://pub.test/r0")
    assert got.redirects == 5 and got.url == "http://cdn.test/r5"  # type: ignore[attr-defined]


async def test_redirect_bodies_are_never_read(net: Net) -> None:
    net.pub.routes["/moved"] = redirect("/here", endless_body=True)
    net.pub.routes["/here"] = page("arrived")
    got = await asyncio.wait_for(net.get("http://pub.test/moved"), 10)
    assert got.text() == "arrived"  # type: ignore[attr-defined]


@pytest.mark.parametrize("reply", [
    Reply(200, b"x" * (2 * MB), {"Content-Type": "text/plain"}),
    Reply(200, b"y" * 4096, {"Content-Type": "text/plain"}, endless=True),
    gzip_bomb(64 * MB),
], ids=["declared", "chunked-endless", "gzip-bomb"])
async def test_body_cap_holds_for_decoded_bytes(net: Net, reply: Reply) -> None:
    net.pub.routes["/big"] = reply
    await refused(net, "http://pub.test/big", "exceeded the 1,048,576-byte fetch limit",
                  max_bytes=MB)


async def test_compressed_bodies_are_decoded(net: Net) -> None:
    text = b"compressed page " * 1000
    net.pub.routes["/z"] = Reply(200, deflate(text), {"Content-Encoding": "deflate"})
    net.pub.routes["/g"] = gzip_bomb(100_000)
    assert (await net.get("http://pub.test/z")).body == text  # type: ignore[attr-defined]
    assert (await net.get("http://pub.test/g")).body == b"\0" * 100_000  # type: ignore[attr-defined]


async def test_rebinding_cannot_move_a_pinned_connection(net: Net) -> None:
    net.internet.name("rebind.test", rebind=[[PUB], [LAN]])
    got = await net.get("http://rebind.test/")
    assert got.status == 200  # type: ignore[attr-defined]
    assert net.internet.lookups.count("rebind.test") == 1  # screened once, never re-resolved
    assert net.internet.dials == [PUB] and net.pub.requests[0]["host"] == "rebind.test"
    await refused(net, "http://rebind.test/", "private")  # the next lookup says private
    assert net.hostile_untouched()


async def test_unresolvable_and_mixed_names_are_refused(net: Net) -> None:
    await refused(net, "http://nowhere.test/", "cannot be resolved", allow_private=True)
    await refused(net, "http://mixed.test/", "also resolves to a public address",
                  allow_private=True, private_origin=True)
    assert net.internet.dials == []


async def test_failed_address_falls_through_to_the_next_screened_one(net: Net) -> None:
    dead = Site("dead")
    port = dead.port
    dead.close()
    net.internet.owners["1.0.0.1"] = dead  # its port no longer listens
    net.internet.name("multi.test", "1.0.0.1", PUB)
    assert dead.port == port
    got = await net.get("http://multi.test/")
    assert got.status == 200 and net.internet.dials == ["1.0.0.1", PUB]  # type: ignore[attr-defined]


async def test_errors_and_timeouts(net: Net) -> None:
    net.pub.routes["/missing"] = page("nope", status=404)
    net.pub.routes["/hang"] = Reply(hang=True)
    net.pub.routes["/odd"] = Reply(302, b"no location")
    await refused(net, "http://pub.test/missing", "HTTP 404")
    await refused(net, "http://pub.test/hang", "timed out after 0.5s", timeout=0.5)
    got = await net.get("http://pub.test/odd")
    assert got.status == 302 and got.body == b"no location"  # type: ignore[attr-defined]
    await refused(net, "ftp://pub.test/", "Blocked: URL must start with http")


async def test_tls_is_verified_for_the_name_while_connected_to_the_address(
        net: Net, tmp_path: Path) -> None:
    server_ctx, client_ctx = tls_pair(tmp_path, "secure.test")
    names: list[str | None] = []
    server_ctx.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment]
    secure = net.internet.site("secure", "93.184.216.40", tls=server_ctx)
    secure.routes["/"] = page("over tls")
    net.internet.name("secure.test", "93.184.216.40")
    net.internet.name("impostor.test", "93.184.216.40")
    fetcher = GuardedFetcher(resolver=net.internet.resolve, dialer=net.internet.dial,
                             ssl_context=client_ctx, proxies={})
    got = await fetcher.fetch("https://secure.test/", max_bytes=MB, timeout=10)
    assert got.text() == "over tls" and names == ["secure.test"]
    assert secure.requests[0]["host"] == "secure.test"
    with pytest.raises(FetchError) as info:
        await fetcher.fetch("https://impostor.test/", max_bytes=MB, timeout=10)
    assert "certificate" in info.value.message.lower() and len(secure.requests) == 1


async def test_environment_proxy_is_used_for_public_targets_only(net: Net) -> None:
    proxy = ForwardProxy()
    try:
        fetcher = GuardedFetcher(resolver=net.internet.resolve, dialer=net.internet.dial,
                                 proxies={"http": proxy.url, "no": "cdn.test"})
        got = await fetcher.fetch("http://pub.test/via", max_bytes=MB, timeout=10)
        assert got.text() == "<p>answered by the proxy</p>"
        line = proxy.requests[0]["line"]
        assert line.startswith(f"GET http://127.0.0.1:{net.pub.port}/via ")  # the pinned address
        assert proxy.requests[0]["host"] == "pub.test" and not net.pub.requests
        await fetcher.fetch("http://cdn.test/", max_bytes=MB, timeout=10)  # no_proxy
        await fetcher.fetch("http://lan.test/", max_bytes=MB, timeout=10, allow_private=True,
                            private_origin=True)
        assert len(proxy.requests) == 1 and net.cdn.requests and net.lan.requests
    finally:
        proxy.close()
