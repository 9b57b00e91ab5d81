"""Logging in to an HTTP MCP server through the daemon, as an editor and as a terminal user
do: the real daemon, a real OAuth-protected MCP server on loopback (oauth_server.py).

The browser is the one stand-in: opening the login page means fetching it and following
its redirect to the daemon's loopback receiver, as a browser does once the user approved.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.mcp_servers.harness import HERE, WAIT, http_server
from turnstoned import protocol as p
from turnstoned.client import Client, RpcFailure

SERVER = HERE / "oauth_server.py"


def open_page(url: str) -> None:
    with urllib.request.urlopen(url, timeout=WAIT) as page:
        page.read()


def config(home: Path, model: ScriptedModel, url: str) -> None:
    write_config(home, f'[model]\nname = "scripted"\nbase_url = "{model.base_url}"\n'
                       f'[tools]\nsearch = "off"\n[mcp.servers.o]\nurl = "{url}"\n')


async def server_state(client: Client) -> dict[str, Any]:
    for _ in range(200):
        servers = (await client.request("mcpServer/list"))["servers"]
        state: dict[str, Any] = next(s for s in servers if s["name"] == "o")
        if state["status"] != "connecting":
            return state
        await asyncio.sleep(0.05)
    raise AssertionError("the server never settled")


async def spawn(home: Path, cwd: Path) -> Client:
    env = {"TURNSTONED_HOME": str(home), "OPENAI_API_KEY": "none", "TURNSTONED_CONFIG": ""}
    return await Client.spawn(env=env, cwd=str(cwd))


async def test_an_editor_logs_in_once_and_the_tools_work_after_a_restart(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv:
        config(isolated_home, model, srv.url)
        pages: list[dict[str, Any]] = []

        async def authorize(params: dict[str, Any]) -> dict[str, Any]:
            pages.append(params)
            await asyncio.to_thread(open_page, params["url"])
            return {"opened": True}

        client = await spawn(isolated_home, tmp_path)
        client.request_handlers["mcpServer/authorize"] = authorize
        try:
            before = await server_state(client)
            assert (before["status"], before["needsAuth"], before["loggedIn"]) == (
                "failed", True, False)
            assert pages == []  # nothing opened before the user asked
            after = (await client.request("mcpServer/login", {"name": "o"}, timeout=60))["server"]
            assert (after["status"], after["needsAuth"], after["loggedIn"], after["tools"]) == (
                "connected", False, True, 1)
            assert [(page["server"], page.get("sessionId")) for page in pages] == [("o", None)]
        finally:
            await client.close()

        # A restarted daemon uses the stored tokens: the tool works, no page opens.
        model.push(tool_calls([("c1", "mcp__o__whoami", "{}")]), text("done"))
        client = await spawn(isolated_home, tmp_path)
        client.request_handlers["mcpServer/authorize"] = authorize

        async def approve(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
            return p.ApprovalResponse(decision="approve")

        client.approval_handler = approve
        try:
            assert (await server_state(client))["status"] == "connected"
            sid = await client.start_session(cwd=str(tmp_path))
            done = await client.run_turn(sid, "who am I", timeout=60)
            assert done["status"] == "completed"
            results = [m["content"] for m in model.requests[-1]["messages"]
                       if m.get("role") == "tool"]
            assert results == ["a logged-in user"]
            assert len(pages) == 1

            out = (await client.request("mcpServer/logout", {"name": "o"}))["server"]
            assert out["loggedIn"] is False
        finally:
            await client.close()


async def test_a_login_nobody_can_show_fails_with_the_reason(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv:
        config(isolated_home, model, srv.url)
        client = await spawn(isolated_home, tmp_path)  # answers no mcpServer/authorize
        try:
            await server_state(client)
            with pytest.raises(RpcFailure) as failed:
                await client.request("mcpServer/login", {"name": "o"}, timeout=60)
            assert failed.value.code == p.ErrorCode.MCP_LOGIN_FAILED
            assert "no editor could show the login page" in str(failed.value)
            with pytest.raises(RpcFailure) as unknown:
                await client.request("mcpServer/login", {"name": "nope"})
            assert unknown.value.code == p.ErrorCode.MCP_SERVER_NOT_FOUND
        finally:
            await client.close()


async def test_the_terminal_prints_the_login_page_and_waits_for_it(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    async with http_server(script=SERVER) as srv:
        config(isolated_home, model, srv.url)
        env = {**os.environ, "TURNSTONED_HOME": str(isolated_home), "OPENAI_API_KEY": "none"}
        proc = subprocess.Popen(  # noqa: ASYNC220
            [sys.executable, "-m", "turnstoned", "chat", "--private", "/login o"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env, cwd=tmp_path)
        assert proc.stderr is not None and proc.stdout is not None
        try:
            url = None
            while url is None:
                line = await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), WAIT)
                assert line, "chat ended before it showed the login page"
                found = re.match(r"\s+(http://\S+/authorize\?\S+)", line)
                url = found.group(1) if found else None
            await asyncio.to_thread(open_page, url)
            out, err = await asyncio.to_thread(proc.communicate, timeout=WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        assert out.strip() == "logged in to o: connected, 1 tools"
