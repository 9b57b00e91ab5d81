"""A small internet on 127.0.0.1: HTTP(S) sites, a forward proxy, a resolver and a dialer.

``Site`` is a real HTTP/1.1 server on a loopback port whose routes are set per
test; it records every request it receives. ``Internet`` gives sites addresses
(public ones like 93.184.216.34, private ones like 10.0.0.5): its ``resolve``
answers names from a table (an answer may be a list of answers, one per
lookup, to rebind), and its ``dial`` sends a connection for a screened address
to the site that owns it, recording the address. An address no site owns goes
to a catch-all site, so every connection the fetcher makes is recorded and none
leaves the machine.
"""

from __future__ import annotations

import datetime
import gzip
import socket
import ssl
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    """What a route answers; ``chunks`` with ``drip`` streams the body slowly."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    endless: bool = False  # stream chunks until the client goes away
    hang: bool = False  # send nothing until the site stops


Route = Reply | Callable[[dict[str, Any]], Reply]


def page(html: str, status: int = 200, content_type: str = "text/html; charset=utf-8") -> Reply:
    return Reply(status, html.encode(), {"Content-Type": content_type})


def redirect(location: str, status: int = 302, endless_body: bool = False) -> Reply:
    return Reply(status, b"redirect body", {"Location": location}, endless=endless_body)


def gzip_bomb(decoded_size: int) -> Reply:
    return Reply(200, gzip.compress(b"\0" * decoded_size, 9),
                 {"Content-Type": "text/plain", "Content-Encoding": "gzip"})


def deflate(data: bytes) -> bytes:
    return zlib.compress(data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body are two writes: without this, Nagle and delayed ACKs stall
        # every kept-alive response by ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        site = self.server.site
        size = int(self.headers.get("Content-Length") or 0)
        request = {"path": self.path, "host": self.headers.get("Host"),
                   "headers": dict(self.headers.items()), "line": self.requestline,
                   "method": self.command, "body": self.rfile.read(size) if size else b""}
        site.requests.append(request)
        route = site.routes.get(urlsplit(self.path).path if "://" in self.path else
                                self.path.split("?", 1)[0], site.default)
        reply = route(request) if callable(route) else route
        if reply.hang:
            site.stopping.wait(30)
            return
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if reply.endless:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._endless(reply.body or b"x" * 1024)
            return
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _endless(self, chunk: bytes) -> None:
        try:
            while not self.server.site.stopping.is_set():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass  # the client closed the connection
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


class Site:
    """One HTTP(S) server on 127.0.0.1 with settable routes and a request log."""

    def __init__(self, name: str = "site", tls: ssl.SSLContext | None = None) -> None:
        self.name = name
        self.routes: dict[str, Route] = {}
        self.default: Route = page(f"<html><body><p>{name}</p></body></html>")
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.site = self
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()


class Internet:
    """Names, addresses and sites for the fetcher's test hooks."""

    def __init__(self) -> None:
        self.names: dict[str, list[str] | list[list[str]]] = {}
        self.lookups: list[str] = []
        self.owners: dict[str, Site] = {}
        self.dials: list[str] = []
        self.elsewhere = Site("elsewhere")  # any address no site owns
        self._sites = [self.elsewhere]

    def site(self, name: str, *addresses: str, tls: ssl.SSLContext | None = None) -> Site:
        site = Site(name, tls)
        self._sites.append(site)
        for address in addresses:
            self.owners[address] = site
        return site

    def name(self, host: str, *answers: str, rebind: list[list[str]] | None = None) -> None:
        """``host`` resolves to ``answers``, or to ``rebind[i]`` on the i-th lookup."""
        self.names[host] = rebind if rebind is not None else list(answers)

    def resolve(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        answers = self.names.get(host)
        if answers is None:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        if answers and isinstance(answers[0], list):
            seen = self.lookups.count(host) - 1
            return list(answers[min(seen, len(answers) - 1)])  # type: ignore[arg-type]
        return list(answers)  # type: ignore[arg-type]

    def dial(self, address: str, port: int) -> tuple[str, int]:
        self.dials.append(address)
        return "127.0.0.1", self.owners.get(address, self.elsewhere).port

    def close(self) -> None:
        for site in self._sites:
            site.close()


class ForwardProxy(Site):
    """An HTTP forward proxy that records the absolute-form request line and answers itself."""

    def __init__(self) -> None:
        super().__init__("proxy")
        self.default = page("<p>answered by the proxy</p>")


def tls_pair(tmp: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for ``name`` and a client context trusting its CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "turnstoned test CA")])

    def builder(subject: x509.Name, public: Any) -> x509.CertificateBuilder:
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
                .public_key(public).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=1)))

    ca = builder(ca_name, ca_key.public_key()).add_extension(
        x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256())
    cert = builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), key.public_key()) \
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False) \
        .sign(ca_key, hashes.SHA256())
    (tmp / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    client = ssl.create_default_context(cafile=str(tmp / "ca.pem"))
    return server, client
