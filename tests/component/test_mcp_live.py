"""The live catalog: list_changed refreshes, manual refresh, and reconnecting a dead server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.mcp_servers.harness import (
    WAIT,
    fast_manager,
    running,
    status_of,
    stdio_spec,
    tool_names,
    wait_for_file,
    wait_pid_gone,
    wait_until,
)
from turnstoned.mcp.models import ServerStatus


async def test_list_changed_notifies_listeners_and_the_new_tool_is_callable() -> None:
    async with running(fast_manager([stdio_spec("ev")])) as manager:
        before = manager.tools()
        snapshot = list(before)
        calls: list[int] = []
        manager.add_listener(lambda: calls.append(len(manager.tools())))

        await manager.call_tool("mcp__ev__add_tool", {"tool_name": "fresh"})
        await wait_until(manager, lambda: "mcp__ev__fresh" in tool_names(manager))

        assert calls and calls[-1] == len(snapshot) + 1
        assert (
            manager.tools() is not before and before == snapshot
        )  # copy-on-write: the old list is untouched
        assert (await manager.call_tool("mcp__ev__fresh", {"text": "hi"})).content == "fresh:hi"

        await manager.call_tool("mcp__ev__remove_tool", {"tool_name": "fresh"})
        await wait_until(manager, lambda: "mcp__ev__fresh" not in tool_names(manager))


async def test_an_unsubscribed_listener_is_not_called() -> None:
    manager = fast_manager([stdio_spec("ev")])
    calls: list[str] = []
    unsubscribe = manager.add_listener(lambda: calls.append("x"))
    unsubscribe()
    async with running(manager):
        assert tool_names(manager) and calls == []


async def test_refresh_reports_added_and_removed_tools() -> None:
    # A long debounce keeps the notification-driven refresh out of the way.
    async with running(fast_manager([stdio_spec("ev")], debounce=60.0)) as manager:
        await manager.call_tool("mcp__ev__add_tool", {"tool_name": "extra"})
        await manager.call_tool("mcp__ev__remove_tool", {"tool_name": "echo"})

        [change] = await manager.refresh("ev")

        assert (change.server, change.status, change.error) == ("ev", "connected", None)
        assert change.added == ["mcp__ev__extra"] and change.removed == ["mcp__ev__echo"]
        assert change.added_resources == [] and change.added_prompts == []
        assert "mcp__ev__extra" in tool_names(manager) and "mcp__ev__echo" not in tool_names(
            manager
        )
        assert [c.added for c in await manager.refresh()] == [[]]
        with pytest.raises(KeyError, match="unknown MCP server 'nope' \\(configured: ev\\)"):
            await manager.refresh("nope")


async def test_a_failed_refresh_is_retried_on_the_next_health_tick(tmp_path: Path) -> None:
    manager = fast_manager(
        [stdio_spec("ev", env={"MARKER_DIR": str(tmp_path)})], health_interval=0.5
    )
    async with running(manager):
        await manager.call_tool("mcp__ev__add_tool_flaky", {"tool_name": "late", "failures": 1})
        await wait_for_file(tmp_path / "list-failures")  # the notification's refresh failed
        await wait_until(manager, lambda: "mcp__ev__late" in tool_names(manager))
        assert status_of(manager, "ev") == "connected"


async def test_a_killed_server_is_reconnected_and_its_tools_come_back() -> None:
    async with running(fast_manager([stdio_spec("ev")])) as manager:
        seen: list[ServerStatus] = []
        manager.add_status_listener(seen.append)
        old_pid = int(str((await manager.call_tool("mcp__ev__pid", {})).content))

        os.kill(old_pid, signal.SIGKILL)
        await wait_until(manager, lambda: status_of(manager, "ev") == "failed")
        assert manager.tools() == []
        lost = await manager.call_tool("mcp__ev__pid", {})
        assert lost.is_error and "not connected" in str(lost.content)
        await wait_until(
            manager, lambda: status_of(manager, "ev") == "connected" and bool(manager.tools())
        )

        new_pid = int(str((await manager.call_tool("mcp__ev__pid", {})).content))
        assert new_pid != old_pid
        assert len(manager.tools()) == 13
        states = [s.status for s in seen]
        assert states.index("failed") < len(states) - 1 - states[::-1].index("connected")
        assert any("connection lost" in (s.error or "") for s in seen)


async def test_a_server_that_exits_mid_call_gives_unknown_effect_and_comes_back() -> None:
    async with running(fast_manager([stdio_spec("ev")])) as manager:
        result = await manager.call_tool("mcp__ev__crash", {"code": 3})
        assert result.is_error and result.effect_status == "unknown"
        await wait_until(
            manager, lambda: status_of(manager, "ev") == "connected" and bool(manager.tools())
        )
        assert (await manager.call_tool("mcp__ev__echo", {"text": "back"})).content == "back"


async def test_refresh_reconnects_a_dead_server_at_once() -> None:
    # A backoff this long means only the manual refresh can bring it back within the test.
    manager = fast_manager(
        [stdio_spec("ev")], backoff_base=600.0, backoff_cap=600.0, health_interval=600.0
    )
    async with running(manager):
        pid = int(str((await manager.call_tool("mcp__ev__pid", {})).content))
        os.kill(pid, signal.SIGKILL)
        await wait_until(manager, lambda: status_of(manager, "ev") == "failed")

        [change] = await asyncio.wait_for(manager.refresh("ev"), WAIT)

        assert change.status == "connected" and change.error is None
        assert "mcp__ev__echo" in change.added and len(change.added) == 13
        assert status_of(manager, "ev") == "connected"


async def test_a_wedged_server_is_stopped_and_replaced_after_missed_pings() -> None:
    manager = fast_manager([stdio_spec("ev")], ping_timeout=0.3)
    async with running(manager):
        old_pid = int(str((await manager.call_tool("mcp__ev__pid", {})).content))
        os.kill(old_pid, signal.SIGSTOP)  # alive, pipes open, but never answers again
        try:
            await wait_until(manager, lambda: status_of(manager, "ev") == "failed")
            assert "no answer to 3 pings in a row" in (manager.status()[0].error or "")
            await wait_until(
                manager, lambda: status_of(manager, "ev") == "connected" and bool(manager.tools())
            )
            new_pid = int(str((await manager.call_tool("mcp__ev__pid", {})).content))
            assert new_pid != old_pid
            await wait_pid_gone(old_pid)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(old_pid, signal.SIGKILL)
