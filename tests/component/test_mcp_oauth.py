"""OAuth to an HTTP MCP server: a real server and authorization server (oauth_server.py)
on loopback, the manager's real connections, the token file on disk.

The browser is the one stand-in: the opener fetches the login page and follows its
redirect to the daemon's loopback receiver, which is what a browser does after the user
approved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import urllib.request
from pathlib import Path

import pytest

from tests.mcp_servers.harness import FAST, HERE, WAIT, http_server, running, wait_until
from turnstoned.mcp.auth import TokenStore
from turnstoned.mcp.config import OAuthSpec, ServerSpec
from turnstoned.mcp.manager import MCPManager
from turnstoned.mcp.models import LoginError, ServerStatus

SERVER = HERE / "oauth_server.py"


class Browser:
    """Opens login pages as a browser would; counts them."""

    def __init__(self) -> None:
        self.pages: list[tuple[str, str]] = []

    async def __call__(self, server: str, url: str) -> bool:
        self.pages.append((server, url))
        await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=WAIT).read())
        return True


def stats(url: str) -> dict[str, int]:
    base = url.rsplit("/mcp", 1)[0]
    with urllib.request.urlopen(f"{base}/admin/stats", timeout=WAIT) as reply:
        result: dict[str, int] = json.loads(reply.read())
        return result


def revoke(url: str) -> None:
    base = url.rsplit("/mcp", 1)[0]
    urllib.request.urlopen(urllib.request.Request(f"{base}/admin/revoke", method="POST"),
                           timeout=WAIT).read()


def manager(url: str, auth_dir: Path, **oauth: str) -> MCPManager:
    spec = ServerSpec(name="o", type="http", url=url,
                      oauth=OAuthSpec(**oauth) if oauth else None)
    return MCPManager([spec], auth_dir=auth_dir, **FAST)  # type: ignore[arg-type]


def status(m: MCPManager) -> ServerStatus:
    return next(s for s in m.status() if s.name == "o")


async def test_a_server_asking_for_a_login_waits_for_one_without_opening_anything(
        tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        s = status(m)
        assert (s.status, s.needs_auth, s.logged_in) == ("failed", True, False)
        assert "log in" in (s.error or "")
        await asyncio.sleep(1.0)  # the health loop runs every 0.3 s: no retry loop starts
        assert stats(srv.url)["unauthorized"] == 1
        assert stats(srv.url)["authorizations"] == 0  # no browser was asked for


async def test_login_connects_keeps_the_tokens_private_and_survives_a_restart(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    async with http_server(script=SERVER) as srv:
        async with running(manager(srv.url, tmp_path)) as m:
            s = await m.login("o", browser)
            assert (s.status, s.needs_auth, s.logged_in, s.tools) == ("connected", False, True, 1)
            assert [server for server, _ in browser.pages] == ["o"]
            page = browser.pages[0][1]
            assert "code_challenge=" in page and "code_challenge_method=S256" in page
            result = await m.call_tool("mcp__o__whoami", {})
            assert (result.is_error, result.content) == (False, "a logged-in user")
        files = list(tmp_path.iterdir())
        assert len(files) == 1
        assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        token = json.loads(files[0].read_text())["tokens"]["access_token"]
        assert token not in caplog.text
        assert token not in repr(s)

        # A new daemon: the stored tokens connect it, with no page to open.
        async with running(manager(srv.url, tmp_path)) as m:
            s = status(m)
            assert (s.status, s.logged_in) == ("connected", True)
        assert stats(srv.url)["authorizations"] == 1


async def test_an_expired_token_is_refreshed_without_the_user(tmp_path: Path) -> None:
    browser = Browser()
    async with http_server("--ttl", "2", script=SERVER) as srv, \
            running(manager(srv.url, tmp_path)) as m:
        await m.login("o", browser)
        store = TokenStore(next(tmp_path.iterdir()))
        first = store.tokens()
        await asyncio.sleep(2.5)
        result = await m.call_tool("mcp__o__whoami", {})
        assert not result.is_error, result.content
        assert stats(srv.url)["refreshes"] >= 1
        assert len(browser.pages) == 1
        assert store.tokens() is not None and store.tokens() != first


async def test_a_revoked_token_asks_the_user_again_during_an_approved_call(
        tmp_path: Path) -> None:
    browser = Browser()
    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        await m.login("o", browser)
        revoke(srv.url)
        result = await m.call_tool("mcp__o__whoami", {}, opener=browser)
        assert (result.is_error, result.content) == (False, "a logged-in user")
        assert len(browser.pages) == 2


async def test_a_revoked_token_with_nobody_to_ask_says_log_in(tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        await m.login("o", Browser())
        revoke(srv.url)
        result = await m.call_tool("mcp__o__whoami", {})
        assert result.is_error
        assert "log in" in result.content
        await wait_until(m, lambda: status(m).needs_auth)
        assert status(m).status == "failed"


async def test_logout_forgets_the_tokens_and_the_server_asks_again(tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        await m.login("o", Browser())
        s = await m.logout("o")
        assert not s.logged_in
        assert "tokens" not in json.loads(next(tmp_path.iterdir()).read_text())
        await wait_until(m, lambda: status(m).needs_auth)
        assert m.tools() == []


async def test_a_refused_login_says_so(tmp_path: Path) -> None:
    async with http_server("--refuse", script=SERVER) as srv, \
            running(manager(srv.url, tmp_path)) as m:
        with pytest.raises(LoginError, match="access_denied"):
            await m.login("o", Browser())
        assert not status(m).logged_in


async def test_login_with_nobody_to_show_the_page_fails_at_once(tmp_path: Path) -> None:
    async def nobody(server: str, url: str) -> None:
        return None

    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        with pytest.raises(LoginError, match="no editor could show the login page"):
            await asyncio.wait_for(m.login("o", nobody), WAIT)


async def test_login_to_an_unknown_or_local_server_is_refused(tmp_path: Path) -> None:
    spec = ServerSpec(name="local", type="stdio", command="true")
    m = MCPManager([spec], auth_dir=tmp_path, **FAST)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown MCP server"):
        await m.login("nope", Browser())
    with pytest.raises(LoginError, match="stdio"):
        await m.login("local", Browser())


async def test_a_cancelled_login_leaves_the_server_asking_for_one(tmp_path: Path) -> None:
    opened = asyncio.Event()

    async def slow_browser(server: str, url: str) -> bool:
        opened.set()
        return True  # the user never finishes in the browser

    async with http_server(script=SERVER) as srv, running(manager(srv.url, tmp_path)) as m:
        login = asyncio.ensure_future(m.login("o", slow_browser))
        await asyncio.wait_for(opened.wait(), WAIT)
        login.cancel()
        with pytest.raises(asyncio.CancelledError):
            await login
        s = status(m)
        assert (s.status, s.needs_auth) == ("failed", True)
        assert "cancelled" in (s.error or "")
        s = await m.login("o", Browser())  # and a login after it works
        assert s.status == "connected"
