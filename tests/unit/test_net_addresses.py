"""Address lanes: the explicit tables, every IPv6 wrapper form, odd IPv4 spellings, decisions."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pytest

from turnstoned.net.addresses import Lane, classify
from turnstoned.net.screen import Resolver, decide, screen
from turnstoned.net.urls import UrlError, parse_url

PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::200e",
          "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:0808:0808::"]
PRIVATE = ["127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255",
           "192.168.1.5", "100.64.0.1", "100.127.255.255", "192.0.2.1", "198.51.100.7",
           "203.0.113.9", "198.18.0.1", "192.0.0.8", "::1", "fd00::1", "fc00::1", "fec0::1",
           "2001:db8::1", "3fff::1", "2001:2::1", "5f00::1", "::ffff:127.0.0.1",
           "64:ff9b:1:100:a:0:700:0"]
NEVER = ["169.254.169.254", "169.254.170.2", "169.254.0.1", "224.0.0.1", "239.255.255.250",
         "0.0.0.0", "0.1.2.3", "240.0.0.1", "255.255.255.255", "fe80::1", "febf::1", "::",
         "ff02::1", "ff05::2", "fd00:ec2::254", "100.100.100.200", "168.63.129.16",
         "192.0.0.192", "100::1", "::5", "64:ff9b::1", "2001::1", "4000::1", "::ffff:0.0.0.0"]


@pytest.mark.parametrize("addr", PUBLIC)
def test_public(addr: str) -> None:
    assert classify(addr).lane is Lane.PUBLIC


@pytest.mark.parametrize("addr", PRIVATE)
def test_private(addr: str) -> None:
    assert classify(addr).lane is Lane.PRIVATE


@pytest.mark.parametrize("addr", NEVER)
def test_never(addr: str) -> None:
    assert classify(addr).lane is Lane.NEVER


def _rfc6052(v4: str, length: int) -> str:
    """``v4`` embedded in the local-use NAT64 prefix ``64:ff9b:1::/length`` (RFC 6052 layout)."""
    prefix = int(IPv6Address("64:ff9b:1::"))
    bits = int(IPv4Address(v4))
    if length == 96:
        return str(IPv6Address(prefix | bits))
    if length == 64:
        return str(IPv6Address(prefix | (bits << 24)))
    head, tail = (16, 16) if length == 48 else (8, 24)
    high, low = bits >> tail, bits & ((1 << tail) - 1)
    return str(IPv6Address(prefix | (high << (128 - length - head)) | (low << (128 - 72 - tail))))


def _teredo(server: str, client: str) -> str:
    value = (0x2001 << 112) | (int(IPv4Address(server)) << 64) | (
        int(IPv4Address(client)) ^ 0xFFFFFFFF)
    return str(IPv6Address(value))


def wrappers(v4: str) -> dict[str, str]:
    """Every IPv6 form that routes to ``v4``, with more than one spelling of some."""
    n = int(IPv4Address(v4))
    hex_pair = f"{n >> 16:x}:{n & 0xFFFF:x}"
    return {
        "mapped dotted": f"::ffff:{v4}",
        "mapped hex": f"::ffff:{hex_pair}",
        "mapped expanded upper": f"0:0:0:0:0:FFFF:{hex_pair.upper()}",
        "mapped with zone": f"::ffff:{v4}%eth0",
        "mapped bracketed": f"[::ffff:{v4}]",
        "translated": f"::ffff:0:{v4}",
        "compatible": f"::{v4}",
        "compatible hex": f"::{hex_pair}",
        "6to4": f"2002:{hex_pair}::",
        "6to4 with host bits": f"2002:{hex_pair}:1:2:3:4:5",
        "nat64 well-known": f"64:ff9b::{v4}",
        "nat64 well-known hex": f"64:ff9b::{hex_pair}",
        "nat64 local-use /48": _rfc6052(v4, 48),
        "nat64 local-use /56": _rfc6052(v4, 56),
        "nat64 local-use /64": _rfc6052(v4, 64),
        "nat64 local-use /96": _rfc6052(v4, 96),
        "teredo client": _teredo("65.54.227.120", v4),
        "teredo server": _teredo(v4, "8.8.8.8"),
    }


@pytest.mark.parametrize(("v4", "lane"), [("169.254.169.254", Lane.NEVER),
                                          ("100.100.100.200", Lane.NEVER),
                                          ("224.0.0.251", Lane.NEVER),
                                          ("10.0.0.7", Lane.PRIVATE),
                                          ("127.0.0.1", Lane.PRIVATE),
                                          ("192.168.1.1", Lane.PRIVATE),
                                          ("8.8.8.8", Lane.PUBLIC)])
def test_every_wrapper_is_judged_by_its_ipv4(v4: str, lane: Lane) -> None:
    for form, addr in wrappers(v4).items():
        judged = classify(addr)
        assert judged.lane is lane, (form, addr, judged)
        assert v4 in judged.via, (form, addr, judged)


def test_rfc6052_layouts_decode_the_reference_example() -> None:
    judged = classify("64:ff9b:1:100:a:0:700:0")
    assert "10.0.0.7" in judged.via and judged.lane is Lane.PRIVATE
    # a non-zero "u" octet invalidates the /48, /56 and /64 layouts; /96 still applies
    assert classify("64:ff9b:1:0:ff00:0:a00:7").via == ("10.0.0.7",)


def test_translation_payloads_below_one_dot_zero_are_not_targets() -> None:
    assert classify("::").lane is Lane.NEVER and classify("::").via == ()
    assert classify("::1").lane is Lane.PRIVATE and classify("::1").via == ()
    assert classify("64:ff9b::").via == ()


def test_unparseable_is_never() -> None:
    assert classify("not-an-ip").lane is Lane.NEVER
    assert classify("1.2.3").lane is Lane.NEVER


ODD_SPELLINGS = {
    "http://0x7f.1/": "127.0.0.1", "http://2130706433/": "127.0.0.1",
    "http://0177.0.0.1/": "127.0.0.1", "http://127.1/": "127.0.0.1",
    "http://0x7f000001/": "127.0.0.1", "http://0x7F.0.0.0x1/": "127.0.0.1",
    "http://127.0.0.1./": "127.0.0.1", "http://%31%32%37.0.0.1/": "127.0.0.1",
    "http://１２７。０。０。１/": "127.0.0.1", "http://0300.0250.0.1/": "192.168.0.1",
    "http://10.1/": "10.0.0.1", "http://167772161/": "10.0.0.1",
    "http://0251.0376.0251.0376/": "169.254.169.254", "http://0xa9fea9fe/": "169.254.169.254",
    "http://2852039166/": "169.254.169.254", "http://169.254.43518/": "169.254.169.254",
    "http://0/": "0.0.0.0", "http://[::ffff:a9fe:a9fe]/": "::ffff:a9fe:a9fe",
    "http://[0:0:0:0:0:ffff:169.254.169.254]/": "::ffff:a9fe:a9fe",
    "http://[fe80::1%25eth0]/": "fe80::1",
}


@pytest.mark.parametrize(("url", "host"), list(ODD_SPELLINGS.items()))
def test_odd_spellings_are_normalised_first(url: str, host: str) -> None:
    target = parse_url(url)
    assert target.host == host and target.ip is not None


@pytest.mark.parametrize("url", ["http://1.2.3.999/", "http://1.2.3.4.5/", "http://08.0.0.1/",
                                 "http://0x/", "http://256.1/", "http://example.com:0/",
                                 "http://example.com:65536/", "http://[::1/", "http://a..b/",
                                 "http://127.0.0.1\\@example.com/", "http://exa mple.com/",
                                 "ftp://example.com/", "file:///etc/passwd", "//example.com/",
                                 "javascript:alert(1)", "http://"])
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(UrlError):
        parse_url(url)


def test_userinfo_is_dropped_and_never_taken_for_the_host() -> None:
    target = parse_url("http://example.com:secret@127.0.0.1:8080/p?q=1#frag")
    assert (target.host, target.port, target.target) == ("127.0.0.1", 8080, "/p?q=1")
    assert target.url == "http://127.0.0.1:8080/p?q=1"
    assert "secret" not in target.url


def test_names_are_canonical() -> None:
    assert parse_url("HTTPS://Bücher.DE./x y").url == "https://xn--bcher-kva.de/x%20y"
    assert parse_url("http://0x7f.example.com/").host == "0x7f.example.com"


def _resolver(table: dict[str, list[str]]) -> Resolver:
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("Name or service not known")
        return table[host]
    return resolve


RESOLVE = _resolver({"pub.test": ["93.184.216.34"], "lan.test": ["192.168.1.20", "fd00::20"],
                     "mixed.test": ["93.184.216.34", "10.0.0.5"],
                     "meta.test": ["93.184.216.34", "169.254.169.254"], "empty.test": [],
                     "wrapped.test": ["64:ff9b::a9fe:a9fe"]})


@pytest.mark.parametrize(("url", "allow", "allowed", "private", "says"), [
    ("http://pub.test/", False, True, False, ""),
    ("http://pub.test/", True, True, False, ""),
    ("http://lan.test/", False, False, False, "allow_private_network"),
    ("http://lan.test/", True, True, True, ""),
    ("http://mixed.test/", False, False, False, "allow_private_network"),
    ("http://mixed.test/", True, False, False, "also resolves to a public address"),
    ("http://meta.test/", True, False, False, "never allowed"),
    ("http://wrapped.test/", True, False, False, "routes to 169.254.169.254"),
    ("http://nowhere.test/", True, False, False, "cannot be resolved"),
    ("http://empty.test/", True, False, False, "cannot be resolved"),
    ("http://metadata.google.internal/", True, False, False, "metadata host"),
    ("http://METADATA.google.internal./", True, False, False, "metadata host"),
    ("http://localhost:8080/", False, False, False, "loopback"),
    ("http://api.localhost/", True, True, True, ""),
    ("http://169.254.169.254/latest/meta-data/", True, False, False, "cloud metadata"),
    ("http://[::1]/", True, True, True, ""),
])
def test_decisions_under_the_opt_in(url: str, allow: bool, allowed: bool, private: bool,
                                    says: str) -> None:
    decision = decide(screen(parse_url(url), RESOLVE), allow)
    assert (decision.allowed, decision.private) == (allowed, private), decision.message
    assert says in decision.message
