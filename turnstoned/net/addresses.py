"""Which lane an IP address is in: public, private, or never.

``PUBLIC`` may always be reached, ``PRIVATE`` only with the user's opt-in
(``[tools] allow_private_network``), ``NEVER`` not at all (cloud metadata,
link-local, multicast, unspecified, broadcast, reserved). The tables below are
explicit rather than the standard library's ``is_global``/``is_private``, whose
answers change between Python versions.

An IPv6 address that carries an IPv4 address — mapped, translated,
IPv4-compatible, 6to4, Teredo, NAT64 (the well-known ``64:ff9b::/96`` and every
RFC 6052 layout of the local-use ``64:ff9b:1::/48``) — is judged by the IPv4
address(es) it routes to, never by the wrapper, and the worst of them wins.
For the translation prefixes (NAT64 and IPv4-compatible) a decoded address
below ``1.0.0.0`` is not a real target and is ignored; when nothing remains the
wrapper is judged by the IPv6 table (so ``::`` and ``::1`` stay themselves).
A NAT64 *network-specific* prefix cannot be told from global unicast; an
address there is judged as the IPv6 address it is.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address


class Lane(enum.IntEnum):
    """Ordered: a host is as bad as its worst address."""

    PUBLIC = 0
    PRIVATE = 1
    NEVER = 2


def _v4(rows: list[tuple[str, Lane, str]]) -> tuple[tuple[IPv4Network, Lane, str], ...]:
    return tuple((IPv4Network(net), lane, label) for net, lane, label in rows)


def _v6(rows: list[tuple[str, Lane, str]]) -> tuple[tuple[IPv6Network, Lane, str], ...]:
    return tuple((IPv6Network(net), lane, label) for net, lane, label in rows)


NEVER, PRIVATE, PUBLIC = Lane.NEVER, Lane.PRIVATE, Lane.PUBLIC

# First match wins: the specific entries come before the ranges that contain them.
IPV4_TABLE = _v4([
    ("169.254.169.254/32", NEVER, "cloud metadata"),
    ("100.100.100.200/32", NEVER, "cloud metadata (Alibaba)"),
    ("168.63.129.16/32", NEVER, "cloud metadata (Azure wire server)"),
    ("192.0.0.192/32", NEVER, "cloud metadata (Oracle)"),
    ("169.254.0.0/16", NEVER, "link-local"),
    ("0.0.0.0/8", NEVER, "unspecified (this network)"),
    ("224.0.0.0/4", NEVER, "multicast"),
    ("255.255.255.255/32", NEVER, "broadcast"),
    ("240.0.0.0/4", NEVER, "reserved"),
    ("127.0.0.0/8", PRIVATE, "loopback"),
    ("10.0.0.0/8", PRIVATE, "private (RFC 1918)"),
    ("172.16.0.0/12", PRIVATE, "private (RFC 1918)"),
    ("192.168.0.0/16", PRIVATE, "private (RFC 1918)"),
    ("100.64.0.0/10", PRIVATE, "carrier-grade NAT"),
    ("192.0.0.0/24", PRIVATE, "IETF protocol assignments"),
    ("192.0.2.0/24", PRIVATE, "documentation"),
    ("198.51.100.0/24", PRIVATE, "documentation"),
    ("203.0.113.0/24", PRIVATE, "documentation"),
    ("198.18.0.0/15", PRIVATE, "benchmarking"),
    ("192.88.99.0/24", PRIVATE, "6to4 relay anycast"),
])

IPV6_TABLE = _v6([
    ("::/128", NEVER, "unspecified"),
    ("::1/128", PRIVATE, "loopback"),
    ("fd00:ec2::/32", NEVER, "cloud metadata (AWS)"),
    ("fe80::/10", NEVER, "link-local"),
    ("ff00::/8", NEVER, "multicast"),
    ("fec0::/10", PRIVATE, "site-local (deprecated)"),
    ("fc00::/7", PRIVATE, "unique local"),
    ("100::/64", NEVER, "discard-only"),
    ("2001:db8::/32", PRIVATE, "documentation"),
    ("3fff::/20", PRIVATE, "documentation"),
    ("2001::/23", PRIVATE, "IETF protocol assignments"),
    ("5f00::/16", PRIVATE, "segment routing"),
    ("2000::/3", PUBLIC, "global unicast"),
    ("::/0", NEVER, "reserved"),
])

MAPPED = IPv6Network("::ffff:0:0/96")
TRANSLATED = IPv6Network("::ffff:0:0:0/96")
COMPATIBLE = IPv6Network("::/96")
SIX_TO_FOUR = IPv6Network("2002::/16")
TEREDO = IPv6Network("2001::/32")
NAT64_WELL_KNOWN = IPv6Network("64:ff9b::/96")
NAT64_LOCAL_USE = IPv6Network("64:ff9b:1::/48")

_LOWEST_REAL_V4 = int(IPv4Address("1.0.0.0"))
# RFC 6052: where the 32 IPv4 bits sit for each prefix length, as (bit offset,
# bit count) runs counted from the most significant bit; bits 64-71 ("u") are
# skipped and must be zero for the layouts that straddle them.
_RFC6052_LAYOUTS: dict[int, tuple[tuple[int, int], ...]] = {
    48: ((48, 16), (72, 16)),
    56: ((56, 8), (72, 24)),
    64: ((72, 32),),
    96: ((96, 32),),
}


@dataclass(frozen=True, slots=True)
class Judgement:
    """The lane of one address, why, and the IPv4 address(es) it routes to if wrapped."""

    address: str
    lane: Lane
    label: str
    via: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.via:
            return f"{self.address} (routes to {', '.join(self.via)}: {self.label})"
        return f"{self.address} ({self.label})"


def _table_v4(ip: IPv4Address) -> tuple[Lane, str]:
    for net, lane, label in IPV4_TABLE:
        if ip in net:
            return lane, label
    return PUBLIC, "public"


def _table_v6(ip: IPv6Address) -> tuple[Lane, str]:
    for net, lane, label in IPV6_TABLE:
        if ip in net:
            return lane, label
    return NEVER, "reserved"  # unreachable: ::/0 matches everything


def _bits(value: int, offset: int, count: int) -> int:
    """``count`` bits of a 128-bit value starting ``offset`` bits from the top."""
    return (value >> (128 - offset - count)) & ((1 << count) - 1)


def _rfc6052(value: int) -> list[int]:
    """Every IPv4 address a local-use NAT64 address can carry, one per valid layout."""
    found = []
    for length, runs in _RFC6052_LAYOUTS.items():
        if length < 96 and _bits(value, 64, 8) != 0:
            continue  # the "u" octet must be zero in these layouts
        v4 = 0
        for offset, count in runs:
            v4 = (v4 << count) | _bits(value, offset, count)
        found.append(v4)
    return found


def embedded_ipv4(ip: IPv6Address) -> list[IPv4Address] | None:
    """The IPv4 address(es) an IPv6 transition address routes to; None if it is not one.

    An empty list means a translation prefix whose payload is no real address
    (below ``1.0.0.0``): the IPv6 address is then judged as itself.
    """
    value = int(ip)
    if ip in MAPPED or ip in TRANSLATED:
        return [IPv4Address(value & 0xFFFFFFFF)]
    if ip in SIX_TO_FOUR:
        return [IPv4Address(_bits(value, 16, 32))]
    if ip in TEREDO:
        server = _bits(value, 32, 32)
        client = _bits(value, 96, 32) ^ 0xFFFFFFFF
        return [IPv4Address(server), IPv4Address(client)]
    if ip in NAT64_WELL_KNOWN or ip in COMPATIBLE:
        candidates = [value & 0xFFFFFFFF]
    elif ip in NAT64_LOCAL_USE:
        candidates = _rfc6052(value)
    else:
        return None
    return [IPv4Address(v) for v in dict.fromkeys(candidates) if v >= _LOWEST_REAL_V4]


def judge(ip: IPAddress) -> Judgement:
    """The lane of one parsed address (wrappers judged by what they carry)."""
    if isinstance(ip, IPv4Address):
        lane, label = _table_v4(ip)
        return Judgement(str(ip), lane, label)
    inner = embedded_ipv4(ip)
    if inner:
        parts = [(v4, *_table_v4(v4)) for v4 in inner]
        worst = max(parts, key=lambda part: part[1])
        return Judgement(str(ip), worst[1], worst[2], tuple(str(v4) for v4, _, _ in parts))
    lane, label = _table_v6(ip)
    return Judgement(str(ip), lane, label)


def parse_ip(text: str) -> IPAddress | None:
    """A resolver's or URL's address text (brackets and a ``%zone`` removed), or None."""
    bare = text.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        return None


def classify(text: str) -> Judgement:
    """The lane of an address given as text; anything unparseable is NEVER."""
    ip = parse_ip(text)
    if ip is None:
        return Judgement(text, NEVER, "not an IP address")
    return judge(ip)
