"""One canonical reading of a URL a model or a page wrote.

The fetcher connects to exactly the host parsed here, so there is no second
parser whose reading could differ. The host is normalised first: IPv4 written
the way ``inet_aton`` reads it (``0x7f.1``, ``2130706433``, ``0177.0.0.1``,
``127.1``) becomes the dotted quad it means, a host whose last label is a number
must be such an address (else the URL is refused, as browsers do), names are
lower-cased and IDNA-encoded with one trailing dot dropped, IPv6 literals lose
their zone. User info (``user:pass@``) is dropped: credentials are never sent,
and never shown as if they were the host. The fragment is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from urllib.parse import unquote

from turnstoned.net.addresses import IPAddress

DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_NAME = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9_-]{1,63}(?<!-))*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
_BAD_AUTHORITY = re.compile(r"[\x00-\x20\x7f\\]")


class UrlError(ValueError):
    """The URL cannot be used; the message says why (model-facing)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed http(s) URL: where to connect and what to ask for."""

    scheme: str  # "http" | "https"
    host: str  # dotted IPv4, compressed IPv6 without brackets, or an ASCII host name
    port: int
    target: str  # path and query, percent-encoded, starting with "/"
    ip: IPAddress | None = None  # set when the host is an address literal

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if isinstance(self.ip, IPv6Address) else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The URL as it is fetched: no user info, no fragment."""
        return f"{self.scheme}://{self.netloc}{self.target}"


def parse_ipv4(host: str) -> IPv4Address | None:
    """``host`` read the way ``inet_aton`` reads it, or None if it is no IPv4 address.

    One to four parts, each decimal, octal (leading ``0``) or hexadecimal
    (``0x``); the last part fills the remaining bytes.
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            digits, base = part[2:], 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        if not digits or not digits.isascii() or not digits.isalnum():
            return None
        try:
            numbers.append(int(digits, base))
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = 0
    for n in leading:
        value = (value << 8) | n
    return IPv4Address((value << (8 * (5 - len(numbers)))) | last)


def _split_authority(rest: str) -> tuple[str, str]:
    end = len(rest)
    for sep in "/?#":
        i = rest.find(sep)
        if i >= 0:
            end = min(end, i)
    return rest[:end], rest[end:]


def _host_port(hostport: str, scheme: str) -> tuple[str, int]:
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise UrlError("malformed URL (unclosed [ in the address)")
        host, after = hostport[: close + 1], hostport[close + 1:]
        if after and not after.startswith(":"):
            raise UrlError("malformed URL (text after the IPv6 address)")
        port_text = after[1:] if after else ""
    else:
        host, _, port_text = hostport.partition(":")
    if not port_text:
        return host, DEFAULT_PORTS[scheme]
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise UrlError(f"malformed URL (bad port {port_text[:20]!r})")
    return host, int(port_text)


def _host(raw: str) -> tuple[str, IPAddress | None]:
    if raw.startswith("["):
        try:
            ip6 = IPv6Address(unquote(raw[1:-1]).split("%", 1)[0])
        except ValueError as exc:
            raise UrlError(f"malformed URL (bad IPv6 address {raw[:60]!r})") from exc
        return str(ip6), ip6
    host = unquote(raw).lower()
    host = host.removesuffix(".")
    if not host:
        raise UrlError("Invalid URL: no hostname")
    if not host.isascii():
        import idna  # the HTTP client's own IDNA 2008 codec

        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError) as exc:
            raise UrlError(f"malformed URL (bad host name {raw[:60]!r})") from exc
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        ip4 = parse_ipv4(host)
        if ip4 is None:
            raise UrlError(f"malformed URL ({raw[:60]!r} is not a valid IPv4 address)")
        return str(ip4), ip4
    if len(host) > 253 or not _NAME.fullmatch(host):
        raise UrlError(f"malformed URL (bad host name {raw[:60]!r})")
    return host, None


def _path(rest: str) -> str:
    """Path and query percent-encoded the way the HTTP client sends them; fragment dropped."""
    import httpx2

    rest = rest.split("#", 1)[0]
    if not rest.startswith("/"):
        rest = "/" + rest
    try:
        raw = httpx2.URL("http://h" + rest).raw_path
    except httpx2.InvalidURL as exc:
        raise UrlError(f"malformed URL ({exc})") from exc
    return raw.decode("ascii")


def parse_url(text: str) -> Target:
    """The canonical target of an http(s) URL; ``UrlError`` says what is wrong with it."""
    text = text.strip()
    m = _SCHEME.match(text)
    if m is None or m.group(1).lower() not in DEFAULT_PORTS or not text.startswith("//", m.end()):
        raise UrlError(f"URL must start with http:// or https:// (got {text[:80]!r})")
    scheme = m.group(1).lower()
    authority, rest = _split_authority(text[m.end() + 2:])
    if _BAD_AUTHORITY.search(authority):
        raise UrlError("malformed URL (space, control character or backslash in the address)")
    hostport = authority.rpartition("@")[2]
    raw_host, port = _host_port(hostport, scheme)
    host, ip = _host(raw_host)
    return Target(scheme=scheme, host=host, port=port, target=_path(rest), ip=ip)


def join(base: Target, location: str) -> Target:
    """A redirect's ``Location`` resolved against the URL that answered with it."""
    from urllib.parse import urljoin

    return parse_url(urljoin(base.url, location.strip()))
