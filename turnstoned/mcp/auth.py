"""OAuth for HTTP MCP servers: the SDK's providers, a token store, and the browser step.

The flow itself (discovery of protected-resource and authorization-server metadata with
the spec's fallbacks, dynamic registration or a client ID metadata document, PKCE, scope
selection and step-up, refresh, the token endpoint's auth methods) is the MCP SDK's
``OAuthClientProvider`` and its client-credentials extensions, an ``httpx2.Auth`` on the
connection's HTTP client. This module gives them:

- ``TokenStore``: one JSON file per server under the daemon's data dir (``mcp-auth/``,
  0700; files 0600, written whole and renamed into place). Tokens never leave it except
  as the ``Authorization`` header to the server they were issued for: not to the model,
  the wire, or a log line.
- ``Authorizer``: per server, the provider and the one step a person takes, the browser.
  The browser opens only for someone waiting on it: a login the user asked for
  (``mcpServer/login``), or a tool call the user approved that the server now asks more
  scope for (step-up). Any other flow that reaches the browser step stops there, and the
  server reads "needs login" until the user logs in.
- ``Receiver``: the loopback redirect (``http://127.0.0.1:PORT/callback``, RFC 8252), a
  one-request HTTP server that takes the authorization code and tells the browser tab it
  may close. The port is chosen at registration and kept with the client's record, since
  a registered redirect URI must match exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import socket
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from turnstoned import __version__
from turnstoned.mcp.config import OAuthSpec, ServerSpec
from turnstoned.mcp.models import LOGIN_TIMEOUT, LoginError, Opener

log = logging.getLogger(__name__)

CALLBACK_PATH = "/callback"
_PAGE = ("<!doctype html><meta charset=utf-8><title>turnstoned</title>"
         "<p style='font:16px system-ui;margin:3em'>{}</p>")


class NeedsLogin(Exception):
    """The flow reached the browser step with nobody waiting on it."""


def _not_needs_login(record: logging.LogRecord) -> bool:
    """The SDK logs every failed flow with its traceback; stopping at the login is not a
    failure (the server's state says it), so that one is left out of the log."""
    return not (record.exc_info and isinstance(record.exc_info[1], NeedsLogin))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_not_needs_login)


class TokenStore:
    """The SDK's ``TokenStorage`` over one 0600 JSON file (tokens and client record)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_server(cls, directory: Path, spec: ServerSpec) -> TokenStore:
        """The file for ``spec``: keyed by its name, URL and whose configuration named it
        (a project's server never shares the user's tokens by reusing a name)."""
        owner = spec.origin if spec.origin.startswith("project") else "user"
        key = hashlib.sha256(f"{owner}\0{spec.name}\0{spec.url}".encode()).hexdigest()[:16]
        slug = re.sub(r"[^A-Za-z0-9._-]", "_", spec.name)[:40]
        return cls(directory / f"{slug}-{key}.json")

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("MCP login store %s unreadable (%s); logging in again", self.path,
                        type(exc).__name__)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(json.dumps(data).encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)

    def tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None

    def client(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    # The SDK's TokenStorage protocol.
    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write({**self._read(), "tokens": tokens.model_dump(mode="json", exclude_none=True)})

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.put_client(client_info)

    def put_client(self, client_info: OAuthClientInformationFull) -> None:
        """The client's record; tokens issued to another client go with the old one."""
        data = self._read()
        old = data.get("client")
        if isinstance(old, dict) and old.get("client_id") != client_info.client_id:
            data.pop("tokens", None)
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def forget_tokens(self) -> bool:
        """Log out: the tokens go, the client's registration stays; True if there were any."""
        data = self._read()
        if "tokens" not in data:
            return False
        del data["tokens"]
        self._write(data)
        return True


class Receiver:
    """The loopback redirect target for one login: the first request carrying a code or an
    error on ``CALLBACK_PATH`` ends it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        except OSError as exc:
            raise OSError(f"cannot listen on 127.0.0.1:{self.port} for the login's redirect "
                          f"({exc.strerror or exc}); close what uses it and log in again"
                          ) from None

    async def wait(self, timeout: float) -> AuthorizationCodeResult:
        assert self._result is not None, "start() first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise TimeoutError(f"the login was not finished in the browser within "
                               f"{timeout / 60:.0f} minutes") from None
        finally:
            await self.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            target = head.split(b" ", 2)[1].decode("ascii", "replace")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                IndexError, ConnectionError):
            writer.close()
            return
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        status, text = "404 Not Found", "Not found."
        if parts.path == CALLBACK_PATH and self._result is not None and not self._result.done():
            if "code" in query:
                self._result.set_result(AuthorizationCodeResult(
                    code=query["code"], state=query.get("state"), iss=query.get("iss")))
                status, text = "200 OK", "Logged in. You can close this tab and go back."
            elif "error" in query:
                reason = query.get("error_description") or query["error"]
                self._result.set_exception(LoginError(f"the server refused the login: "
                                                      f"{reason[:300]}"))
                status, text = "200 OK", "The login did not complete. You can close this tab."
        body = _PAGE.format(text).encode()
        with contextlib.suppress(ConnectionError):
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n"
                         "Cache-Control: no-store\r\n\r\n".encode() + body)
            await writer.drain()
        writer.close()


class Authorizer:
    """One HTTP server's OAuth: the SDK provider on its connections, and who may be asked
    to open the browser (``openers``: a login under way, the approved calls running)."""

    def __init__(self, spec: ServerSpec, store: TokenStore) -> None:
        self.spec = spec
        self.oauth: OAuthSpec = spec.oauth or OAuthSpec()
        self.store = store
        self.openers: list[Opener] = []
        self.needs_login = False  # a flow reached the browser step with nobody to open it
        self._receiver: Receiver | None = None
        self._port = self._redirect_port()
        self.provider = self._provider()

    @property
    def logged_in(self) -> bool:
        return self.store.tokens() is not None

    @property
    def machine(self) -> bool:
        """Client credentials: no person, no browser, never "needs login"."""
        return self.oauth.grant == "client_credentials"

    def _provider(self) -> httpx2.Auth:
        o, url = self.oauth, self.spec.url
        if o.grant == "client_credentials":
            if o.private_key:
                jwt = SignedJWTParameters(issuer=o.client_id, subject=o.client_id,
                                          signing_key=o.private_key,
                                          signing_algorithm=o.signing_algorithm)
                return PrivateKeyJWTOAuthProvider(
                    url, self.store, o.client_id, jwt.create_assertion_provider(),
                    scope=o.scope or None)
            method: Literal["client_secret_basic", "client_secret_post"] = (
                "client_secret_post" if o.token_endpoint_auth_method == "client_secret_post"
                else "client_secret_basic")
            return ClientCredentialsOAuthProvider(
                url, self.store, o.client_id, o.client_secret,
                token_endpoint_auth_method=method, scope=o.scope or None)
        metadata = OAuthClientMetadata(
            client_name="turnstoned", software_id="turnstoned", software_version=__version__,
            redirect_uris=[AnyUrl(f"http://127.0.0.1:{self._port}{CALLBACK_PATH}")],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method=o.token_endpoint_auth_method or None,
            scope=o.scope or None)
        provider = OAuthClientProvider(
            url, metadata, self.store, redirect_handler=self._redirect,
            callback_handler=self._callback, client_metadata_url=o.client_metadata_url or None)
        if o.client_id:  # a client registered by hand: the provider reads it from the store
            client = self.store.client()
            if client is None or client.client_id != o.client_id:
                self.store.put_client(OAuthClientInformationFull(
                    client_id=o.client_id, client_secret=o.client_secret or None,
                    redirect_uris=metadata.redirect_uris,
                    token_endpoint_auth_method=(
                        o.token_endpoint_auth_method
                        or ("client_secret_basic" if o.client_secret else "none"))))
        return provider

    def _redirect_port(self) -> int:
        """The redirect's port: the registered one, else a free one now (registered with it)."""
        client = self.store.client()
        for uri in (client.redirect_uris or []) if client is not None else []:
            parts = urlsplit(str(uri))
            if parts.hostname in ("127.0.0.1", "localhost") and parts.port:
                return parts.port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            return port

    async def _redirect(self, url: str) -> None:
        """The browser step: open ``url`` through whoever waits, or stop as "needs login"."""
        if not self.openers:
            self.needs_login = True
            raise NeedsLogin(f"MCP server {self.spec.name!r} needs a login")
        self._receiver = Receiver(self._port)
        await self._receiver.start()
        try:
            opened = await self.openers[-1](self.spec.name, url)
        except BaseException:
            await self._receiver.close()
            raise
        if opened is None:
            await self._receiver.close()
            raise LoginError("no editor could show the login page")
        if not opened:
            log.info("MCP server %r: the login page was shown as an address; waiting",
                     self.spec.name)

    async def _callback(self) -> AuthorizationCodeResult:
        receiver, self._receiver = self._receiver, None
        if receiver is None:
            raise LoginError("no login page was opened")
        return await receiver.wait(LOGIN_TIMEOUT)

    def logout(self) -> bool:
        """Forget the tokens (and what the provider holds of them); True if logged in."""
        had = self.store.forget_tokens()
        self.provider = self._provider()
        self.needs_login = False
        return had
