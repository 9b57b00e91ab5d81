"""The guarded fetcher: GET a URL the model or a page named, and go nowhere it may not.

Every hop of a redirect chain is parsed, resolved and screened *before* it is
requested (at most ``MAX_REDIRECTS`` redirects). The request then goes to the
screened address itself: the URL handed to the HTTP client carries the IP
literal, the ``Host`` header the name, and TLS gets the name as SNI and checks
the certificate against it (httpx2's ``sni_hostname`` request extension). The
client never resolves the name again, so a DNS answer that changes between the
check and the connection (rebinding) cannot redirect it. The same holds through
an HTTP proxy: it is asked to connect to the screened IP.

Why httpx2: it is already here (the openai SDK's transport), it is well kept,
and its public request extensions give exactly the "connect to this IP, verify
that name" split; a custom network backend would need its private pool
attribute, and hand-written TLS handling is what this module must not have.
Each hop gets its own connection (no keep-alive), so a connection verified for
one name is never reused for another name that happens to share its address.

Private targets (``allow_private``) are reached only when the first hop was
approved as private, and only while every hop stays wholly private: the first
public hop revokes it for the rest of the chain, so a public site can never
redirect into private space, and never-lane addresses are refused always. A
proxy from the environment (``http_proxy``/``https_proxy``/``no_proxy``) is
used for public targets only. Redirect bodies are never read; the body is
decompressed here under the byte ceiling; user info is never sent.
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnstoned import __version__
from turnstoned.net import body as bodies
from turnstoned.net.screen import Decision, Resolver, Screened, decide, screen, system_resolver
from turnstoned.net.urls import Target, UrlError, join, parse_url

if TYPE_CHECKING:
    import httpx2

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CONNECT_TIMEOUT = 10.0
RESOLVE_WAIT = 5.0
MAX_ADDRESSES_TRIED = 3
USER_AGENT = f"turnstoned/{__version__}"

# (screened ip, port) -> (ip, port) to connect to. Only tests set one: it lets a
# server on 127.0.0.1 stand in for a public address. No configuration reaches it.
Dialer = Callable[[str, int], tuple[str, int]]


class FetchError(Exception):
    """The fetch did not produce a page; ``blocked`` when the guard refused a hop."""

    def __init__(self, message: str, *, blocked: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str  # the final URL (after redirects), without user info
    status: int
    content_type: str
    body: bytes
    redirects: int = 0

    def text(self) -> str:
        return bodies.decode_text(self.body, self.content_type)


@dataclass(slots=True)
class _Chain:
    """The state of one fetch across its redirect hops."""

    private_ok: bool
    hops: int = 0


def environment_proxies() -> dict[str, str]:
    """``http``/``https``/``no`` proxy settings from the environment."""
    found = urllib.request.getproxies_environment()
    return {k: v for k, v in found.items() if k in ("http", "https", "no")}


def bypasses_proxy(target: Target, no_proxy: str) -> bool:
    """Whether ``no_proxy`` (``*``, names and their subdomains, addresses, CIDR) covers it."""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        if entry.startswith("["):  # [v6]:port
            name = entry[1:entry.find("]")] if "]" in entry else ""
        else:  # a name or v4 with an optional :port, a bare v6, or a CIDR
            name = entry.removeprefix(".")
            name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
        if not name:
            continue
        if target.ip is not None:
            try:
                if target.ip in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                pass
            continue
        if target.host == name or target.host.endswith("." + name):
            return True
    return False


class GuardedFetcher:
    """Fetches URLs for tools; see the module docstring for the guarantees.

    ``resolver`` and ``dialer`` exist for tests (a local server standing in for
    the internet); the daemon always uses the system resolver and no dialer.
    """

    def __init__(self, *, resolver: Resolver = system_resolver, dialer: Dialer | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 proxies: Mapping[str, str] | None = None, user_agent: str = USER_AGENT) -> None:
        self.resolver = resolver
        self._dialer = dialer
        self._ssl = ssl_context
        self._proxies = dict(environment_proxies() if proxies is None else proxies)
        self.user_agent = user_agent

    # ----------------------------------------------------------- screening

    def screen_url(self, url: str, wait: float = RESOLVE_WAIT) -> Screened | str:
        """Parse and screen ``url``: the verdict, or why the URL is malformed.

        For a caller that cannot await (a tool's prepare): the lookup runs in a
        thread and is given up after ``wait`` seconds, which refuses the URL.
        """
        try:
            target = parse_url(url)
        except UrlError as exc:
            return str(exc) if str(exc).startswith(("URL must", "Invalid URL")) else (
                f"Blocked: {exc}")
        if target.ip is not None:
            return screen(target, self.resolver)
        found: list[Screened] = []
        worker = threading.Thread(target=lambda: found.append(screen(target, self.resolver)),
                                  name="screen-url", daemon=True)
        worker.start()
        worker.join(wait)
        if not found:
            return Screened(target, (), f"Blocked: hostname cannot be resolved ({target.host}: "
                                        f"no answer within {wait:g}s)")
        return found[0]

    async def _screen(self, target: Target) -> Screened:
        if target.ip is not None:
            return screen(target, self.resolver)  # nothing to look up
        return await asyncio.to_thread(screen, target, self.resolver)

    # ----------------------------------------------------------- fetching

    async def fetch(self, url: str, *, allow_private: bool = False, private_origin: bool = False,
                    max_bytes: int, timeout: float) -> Fetched:
        """GET ``url`` through the guard; ``FetchError`` says why not.

        ``private_origin`` says the user approved the first hop as a private
        target; without it (or without ``allow_private``) no hop may be private.
        """
        try:
            target = parse_url(url)
        except UrlError as exc:
            raise FetchError(f"Blocked: {exc}", blocked=True) from exc
        chain = _Chain(private_ok=allow_private and private_origin)
        try:
            async with asyncio.timeout(timeout):
                return await self._follow(target, chain, max_bytes, timeout)
        except TimeoutError as exc:
            raise FetchError(f"timed out after {timeout:g}s") from exc

    async def _follow(self, target: Target, chain: _Chain, max_bytes: int,
                      timeout: float) -> Fetched:
        while True:
            screened = await self._screen(target)
            decision = decide(screened, chain.private_ok)
            if not decision.allowed:
                raise FetchError(decision.message, blocked=True)
            if not decision.private:
                chain.private_ok = False  # a public hop ends private access for the chain
            response, transport = await self._request(target, screened.addresses, decision,
                                                      timeout)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    target = self._next_hop(target, location, chain)
                    continue  # the redirect's body is never read
                if response.status_code >= 400:
                    raise FetchError(f"HTTP {response.status_code}")
                body = await self._read(response, max_bytes)
                return Fetched(url=target.url, status=response.status_code,
                               content_type=response.headers.get("content-type", ""),
                               body=body, redirects=chain.hops)
            finally:
                await response.aclose()
                await transport.aclose()

    def _next_hop(self, current: Target, location: str, chain: _Chain) -> Target:
        chain.hops += 1
        if chain.hops > MAX_REDIRECTS:
            raise FetchError(f"Blocked: more than {MAX_REDIRECTS} redirects", blocked=True)
        try:
            return join(current, location)
        except UrlError as exc:
            raise FetchError(f"Blocked: redirect to an unusable URL ({exc})", blocked=True) from exc

    async def _read(self, response: httpx2.Response, max_bytes: int) -> bytes:
        import httpx2

        declared = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "")
        if not encoding and declared.isdigit() and int(declared) > max_bytes:
            raise FetchError(str(bodies.BodyTooLarge(max_bytes)))
        try:
            decoder = bodies.Decoder(encoding, max_bytes)
            parts: list[bytes] = []
            async for raw in response.aiter_raw():
                parts.extend(decoder.feed(raw))
            parts.extend(decoder.flush())
        except (bodies.BodyTooLarge, bodies.BadEncoding) as exc:
            raise FetchError(str(exc)) from exc
        except httpx2.HTTPError as exc:
            raise FetchError(f"reading the response failed: {type(exc).__name__}: {exc}") from exc
        return b"".join(parts)

    # ----------------------------------------------------------- one request

    def _proxy(self, target: Target, decision: Decision) -> str | None:
        if decision.private:
            return None  # the environment's proxy is for the internet, not the LAN
        proxy = self._proxies.get(target.scheme)
        if not proxy or bypasses_proxy(target, self._proxies.get("no", "")):
            return None
        if not proxy.lower().startswith(("http://", "https://")):
            raise FetchError(f"the {target.scheme}_proxy scheme is not supported: {proxy[:40]}")
        return proxy

    def _transport(self, proxy: str | None) -> httpx2.AsyncHTTPTransport:
        import httpx2

        context = self._ssl if self._ssl is not None else _default_ssl_context()
        return httpx2.AsyncHTTPTransport(
            verify=context, trust_env=False, proxy=proxy, retries=0,
            limits=httpx2.Limits(max_connections=1, max_keepalive_connections=0))

    def _build(self, target: Target, address: str, timeout: float) -> httpx2.Request:
        import httpx2

        ip, port = self._dialer(address, target.port) if self._dialer else (address, target.port)
        url = httpx2.URL(scheme=target.scheme, host=ip, port=port,
                         raw_path=target.target.encode("ascii"))
        extensions: dict[str, Any] = {"timeout": {
            "connect": min(CONNECT_TIMEOUT, timeout), "read": timeout, "write": timeout,
            "pool": timeout}}
        if target.scheme == "https" and target.ip is None:
            extensions["sni_hostname"] = target.host
        headers = {"Host": target.netloc, "User-Agent": self.user_agent,
                   "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8",
                   "Accept-Encoding": bodies.SUPPORTED_ENCODINGS}
        return httpx2.Request("GET", url, headers=headers, extensions=extensions)

    async def _request(self, target: Target, addresses: list[str], decision: Decision,
                       timeout: float) -> tuple[httpx2.Response, httpx2.AsyncHTTPTransport]:
        """Send the hop's request to its screened addresses, in order, until one connects.

        Returns the response (headers read, body not) and the transport to close after it.
        """
        import httpx2

        proxy = self._proxy(target, decision)
        last: Exception | None = None
        for address in addresses[:MAX_ADDRESSES_TRIED]:
            transport = self._transport(proxy)
            request = self._build(target, address, timeout)
            try:
                response = await transport.handle_async_request(request)
            except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
                await transport.aclose()
                last = exc
                continue
            except httpx2.HTTPError as exc:
                await transport.aclose()
                raise FetchError(f"{type(exc).__name__}: {exc}") from exc
            except BaseException:
                await transport.aclose()
                raise
            response.request = request
            return response, transport
        raise FetchError(f"cannot connect to {target.netloc}: {last}")


_context: ssl.SSLContext | None = None


def _default_ssl_context() -> ssl.SSLContext:
    """The system's trust store, built once (loading it costs milliseconds)."""
    global _context
    if _context is None:
        import httpx2

        _context = httpx2.create_ssl_context(trust_env=True)
    return _context
