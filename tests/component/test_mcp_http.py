"""MCPManager over streamable HTTP to a real server on 127.0.0.1."""

from __future__ import annotations

import socket

from tests.mcp_servers.harness import (
    fast_manager,
    http_server,
    running,
    status_of,
    tool_names,
    wait_until,
)
from turnstoned.mcp.config import ServerSpec


def http_spec(name: str, url: str, headers: dict[str, str] | None = None) -> ServerSpec:
    return ServerSpec(name=name, type="http", url=url, headers=headers or {})


async def test_tools_resources_prompts_and_calls_work_over_http() -> None:
    async with http_server() as server:
        spec = http_spec("web", server.url, {"X-Team": "editors"})
        async with running(fast_manager([spec])) as manager:
            [status] = manager.status()
            assert (status.status, status.transport, status.error) == ("connected", "http", None)
            assert (status.tools, status.resources, status.prompts) == (13, 3, 2)
            assert (await manager.call_tool("mcp__web__add", {"a": 1, "b": 2})).content == "3"
            header = await manager.call_tool("mcp__web__header", {"name": "x-team"})
            assert header.content == "editors"
            assert (await manager.read_resource("memo://notes/http")).content == "notes on http"
            prompt = await manager.get_prompt("mcp__web__greet", {})
            assert prompt.content == "[user]: Hello there."


async def test_list_changed_arrives_over_http() -> None:
    async with (
        http_server() as server,
        running(fast_manager([http_spec("web", server.url)])) as manager,
    ):
        await manager.call_tool("mcp__web__add_tool", {"tool_name": "viahttp"})
        await wait_until(manager, lambda: "mcp__web__viahttp" in tool_names(manager))
        result = await manager.call_tool("mcp__web__viahttp", {"text": "x"})
        assert result.content == "viahttp:x"


async def test_a_timeout_over_http_is_an_unknown_effect_error() -> None:
    async with (
        http_server() as server,
        running(fast_manager([http_spec("web", server.url)])) as manager,
    ):
        result = await manager.call_tool("mcp__web__hang", {}, timeout=0.5)
        assert result.is_error and result.effect_status == "unknown"
        assert (await manager.call_tool("mcp__web__echo", {"text": "ok"})).content == "ok"


async def test_an_http_server_that_goes_away_is_noticed_and_reconnected_when_back() -> None:
    async with (
        http_server() as server,
        running(fast_manager([http_spec("web", server.url)])) as manager,
    ):
        server.kill()
        await wait_until(manager, lambda: status_of(manager, "web") == "failed")
        assert manager.tools() == []
        await server.start()  # same port
        await wait_until(
            manager, lambda: status_of(manager, "web") == "connected" and bool(manager.tools())
        )
        assert (await manager.call_tool("mcp__web__echo", {"text": "back"})).content == "back"


async def test_an_unreachable_url_fails_with_a_readable_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        spec = http_spec("gone", f"http://127.0.0.1:{port}/mcp")
        async with running(fast_manager([spec], backoff_base=60.0)) as manager:
            [status] = manager.status()
            assert status.status == "failed"
            assert status.error == f"cannot reach 127.0.0.1:{port}: Connection refused"


async def test_a_restarted_http_server_that_forgot_the_session_is_reconnected() -> None:
    # No health pings: the first request after the restart must notice the 404.
    async with http_server() as server:
        manager = fast_manager([http_spec("web", server.url)], health_interval=600.0)
        async with running(manager):
            server.kill()
            await server.start()  # same port, fresh process: our session id is unknown there
            # Refused, not run: either this request met the 404, or the SSE stream's
            # reconnect met it first and the server is already marked lost.
            refused = await manager.call_tool("mcp__web__echo", {"text": "x"})
            assert refused.is_error and refused.effect_status is None
            assert any(s in str(refused.content) for s in ("lost the session", "not connected"))
            await wait_until(
                manager, lambda: status_of(manager, "web") == "connected" and bool(manager.tools())
            )
            assert (await manager.call_tool("mcp__web__echo", {"text": "y"})).content == "y"
