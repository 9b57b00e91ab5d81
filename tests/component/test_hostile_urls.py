"""A corpus of hostile URLs: none is connected to without the opt-in, metadata never.

Each entry runs the way web_fetch runs it: screened at prepare (its verdict
decides whether the approval is a private-network one), then fetched. The
hostile addresses are known by construction (not by asking the classifier), and
every connection the fetcher makes is recorded by the address it dialed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import pytest

from tests.fakes.web import Internet, redirect
from tests.unit.test_net_addresses import wrappers
from turnstoned.net.fetch import FetchError, GuardedFetcher
from turnstoned.net.screen import Screened, decide

PUBLIC_IPS = ("93.184.216.34", "1.1.1.1")
PRIVATE_V4 = ("10.0.0.5", "127.0.0.1", "192.168.1.20", "172.16.0.9", "100.64.0.3", "192.0.2.1")
NEVER_V4 = ("169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16",
            "192.0.0.192", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1")
PRIVATE_V6 = ("::1", "fd00::20", "fc00::1", "fec0::1")
NEVER_V6 = ("fe80::1", "fd00:ec2::254", "::", "ff02::1", "100::1")
METADATA_NAMES = ("metadata.google.internal", "METADATA.GOOGLE.INTERNAL.", "metadata.goog",
                  "metadata", "instance-data")


def _spellings(v4: str) -> list[str]:
    """Ways to write ``v4`` as a URL host that a resolver-free reader turns into ``v4``."""
    n = int(IPv4Address(v4))
    a, b, c, d = (int(x) for x in v4.split("."))
    return [v4, str(n), hex(n), f"0{n:o}", f"{a}.{(b << 16) | (c << 8) | d}",
            f"{a}.{b}.{(c << 8) | d}", f"0{a:o}.0{b:o}.0{c:o}.0{d:o}",
            f"{hex(a)}.{hex(b)}.{hex(c)}.{hex(d)}", f"{v4}.", "%2e".join(v4.split("."))]


def _canon(address: str) -> str:
    bare = address.split("%", 1)[0].strip("[]")
    return str(IPv6Address(bare)) if ":" in bare else str(IPv4Address(bare))


@dataclass(frozen=True)
class Case:
    name: str
    url: str
    lane: str  # "private" or "never": the worst address the URL can reach, by construction
    answers: tuple[str, ...] = ()  # what the URL's host name resolves to
    rebind: tuple[str, ...] = ()  # the host's second answer (its first is public)
    redirect_to: str = ""  # the URL that pub.test answers this one with a redirect to


def _literals() -> list[Case]:
    hosts: list[tuple[str, str]] = []  # (host as written in a URL, lane)
    for lane, v4s in (("private", PRIVATE_V4), ("never", NEVER_V4)):
        for v4 in v4s:
            hosts += [(s, lane) for s in _spellings(v4)]
            hosts += [(f"[{w.strip('[]').replace('%', '%25')}]", lane)
                      for w in wrappers(v4).values()]
    for lane, v6s in (("private", PRIVATE_V6), ("never", NEVER_V6)):
        hosts += [(f"[{v6}]", lane) for v6 in v6s]
    cases = []
    for host, lane in hosts:
        cases.append(Case(f"literal {host}", f"http://{host}/", lane))
        cases.append(Case(f"literal {host} behind user info", f"http://pub.test@{host}:80/", lane))
    return cases


def _names() -> list[Case]:
    answers: list[tuple[str, str, str]] = []  # (label, answer, lane)
    for lane, v4s in (("private", PRIVATE_V4), ("never", NEVER_V4)):
        for v4 in v4s:
            answers.append((f"a {v4}", v4, lane))
            answers += [(f"{form} {w}", w, lane) for form, w in wrappers(v4).items()
                        if "bracketed" not in form]
    for lane, v6s in (("private", PRIVATE_V6), ("never", NEVER_V6)):
        answers += [(f"aaaa {v6}", v6, lane) for v6 in v6s]
    cases = [Case(f"name answering {label}", f"http://n{i}.test/", lane, (answer,))
             for i, (label, answer, lane) in enumerate(answers)]
    cases += [Case(f"name answering public and {v4}", f"http://mixed{i}.test/",
                   "never" if v4 in NEVER_V4 else "private", (PUBLIC_IPS[0], v4))
              for i, v4 in enumerate(PRIVATE_V4 + NEVER_V4)]
    cases += [Case(f"metadata name {n}", f"http://{n}/computeMetadata/v1/", "never")
              for n in METADATA_NAMES]
    return cases + [Case("localhost", "http://localhost/", "private"),
                    Case("localhost subdomain", "http://admin.localhost:8080/", "private"),
                    Case("unresolvable", "http://nowhere.invalid/", "never")]


def corpus() -> list[Case]:
    direct = _literals() + _names()
    redirects = [Case(f"redirect to {c.name}", f"http://pub.test/to/{i}", c.lane,
                      redirect_to=c.url) for i, c in enumerate(direct) if "user info" not in c.name]
    rebinds = [Case(f"rebinding to {c.name}", f"http://rebind{i}.test/", c.lane, rebind=c.answers)
               for i, c in enumerate(direct) if c.answers]
    return direct + redirects + rebinds


CORPUS = corpus()


class World:
    def __init__(self) -> None:
        self.internet = Internet()
        self.pub = self.internet.site("pub", *PUBLIC_IPS)
        self.internet.name("pub.test", PUBLIC_IPS[0])
        for case in CORPUS:
            host = case.url.split("/")[2]
            if case.answers:
                self.internet.name(host, *case.answers)
            if case.rebind:
                self.internet.name(host, rebind=[[PUBLIC_IPS[0]], list(case.rebind)])
            if case.redirect_to:
                self.pub.routes["/" + case.url.split("/", 3)[3]] = redirect(case.redirect_to)
        self.fetcher = GuardedFetcher(resolver=self.internet.resolve, dialer=self.internet.dial,
                                      proxies={})

    async def run(self, case: Case, allow_private: bool) -> list[str]:
        """Screen at prepare (deciding the approval), then fetch; the addresses dialed."""
        before = len(self.internet.dials)
        screened = self.fetcher.screen_url(case.url)
        decision = decide(screened, allow_private) if isinstance(screened, Screened) else None
        if decision is not None and decision.allowed:
            try:
                await self.fetcher.fetch(case.url, allow_private=allow_private,
                                         private_origin=decision.private, max_bytes=1 << 20,
                                         timeout=10)
            except FetchError:
                pass
        return [_canon(d) for d in self.internet.dials[before:]]


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    yield w
    w.internet.close()


NEVER_ADDRESSES = {_canon(a) for a in NEVER_V4 + NEVER_V6} | {
    _canon(w) for v4 in NEVER_V4 for w in wrappers(v4).values()}


def test_corpus_is_large_and_covers_every_family() -> None:
    names = " ".join(c.name for c in CORPUS)
    for family in ("literal", "nat64", "6to4", "teredo", "mapped", "compatible", "metadata name",
                   "redirect to", "rebinding to", "public and", "localhost"):
        assert family in names, family
    assert len(CORPUS) > 500


async def test_no_hostile_url_is_connected_to_without_the_opt_in(world: World) -> None:
    for case in CORPUS:
        dialed = await world.run(case, allow_private=False)
        assert set(dialed) <= set(PUBLIC_IPS), (case, dialed)
    assert not world.internet.elsewhere.requests


async def test_with_the_opt_in_metadata_and_never_lanes_are_still_never_connected_to(
        world: World) -> None:
    private_reached = 0
    for case in CORPUS:
        dialed = set(await world.run(case, allow_private=True))
        assert not dialed & NEVER_ADDRESSES, (case, dialed)
        if case.lane == "never" or case.redirect_to or case.rebind or "public and" in case.name:
            assert dialed <= set(PUBLIC_IPS), (case, dialed)
        private_reached += bool(dialed - set(PUBLIC_IPS))
    assert private_reached > 100  # the opt-in does open the private ones
