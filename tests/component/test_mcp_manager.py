"""MCPManager against real MCP servers over stdio: discovery, calls, resources, prompts, close."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.mcp_servers.harness import (
    EVERYTHING,
    HALF_RESOURCES,
    PAGED_TOOLS,
    WAIT,
    fast_manager,
    running,
    status_of,
    stdio_spec,
    tool_names,
    wait_for_file,
    wait_pid_gone,
)
from turnstoned.mcp.config import ServerSpec
from turnstoned.mcp.manager import MCPManager

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[MCPManager, Path]]:
    """One everything server for the read-only tests (calls that do not change its catalog)."""
    markers = tmp_path_factory.mktemp("markers")
    async with running(
        fast_manager([stdio_spec("ev", env={"MARKER_DIR": str(markers)})])
    ) as manager:
        yield manager, markers


async def test_start_returns_before_any_server_is_connected() -> None:
    async with running(fast_manager([stdio_spec("ev")]), ready=False) as manager:
        assert status_of(manager, "ev") == "connecting"
        assert manager.tools() == []
        await manager.wait_ready(WAIT)
        assert status_of(manager, "ev") == "connected"


async def test_discovery_finds_tools_resources_templates_and_prompts(
    shared: tuple[MCPManager, Path],
) -> None:
    manager, _ = shared
    [status] = manager.status()
    assert (status.name, status.status, status.transport, status.error) == (
        "ev",
        "connected",
        "stdio",
        None,
    )
    assert (status.tools, status.resources, status.prompts) == (13, 3, 2)
    assert status.server_version == "everything 1.0.0" and status.protocol_version == "2025-11-25"
    assert "mcp__ev__echo" in tool_names(manager)
    assert [r.uri for r in manager.resources()] == ["memo://readme", "memo://logo"]
    assert [t.uri_template for t in manager.resource_templates()] == ["memo://notes/{topic}"]
    review = next(p for p in manager.prompts() if p.name == "mcp__ev__review")
    assert review.prompt == "review" and review.server == "ev"
    assert [(a.name, a.required) for a in review.arguments] == [("code", True), ("language", False)]


async def test_tools_are_offered_in_function_calling_form(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    add = next(t for t in manager.tools() if t.tool == "add")
    schema = add.openai_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "mcp__ev__add"
    assert function["description"] == "Add two integers."
    params = function["parameters"]
    assert params["type"] == "object"
    assert set(params["properties"]) == {"a", "b"} and params["required"] == ["a", "b"]
    assert manager.is_mcp_tool("mcp__ev__add") and not manager.is_mcp_tool("read_file")


async def test_a_text_result_is_plain_text(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__add", {"a": 2, "b": 40})
    assert (result.content, result.is_error, result.effect_status) == ("42", False, None)


async def test_an_image_result_becomes_text_and_image_url_parts(
    shared: tuple[MCPManager, Path],
) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__image", {})
    assert not result.is_error
    assert isinstance(result.content, list)
    text, image = result.content
    assert text == {"type": "text", "text": "a tiny image"}
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


async def test_an_embedded_resource_is_rendered_with_its_uri(
    shared: tuple[MCPManager, Path],
) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__embedded", {})
    assert result.content == "see attached\n[resource memo://attached]\nhello inside"


async def test_is_error_from_the_server_is_a_tool_error(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__fail", {"reason": "disk full"})
    assert result.is_error
    assert result.content == "failure: disk full"
    assert result.effect_status is None


async def test_invalid_arguments_come_back_as_a_tool_error(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__add", {"a": "many"})
    assert result.is_error and "validation error" in str(result.content)


async def test_an_unknown_tool_is_an_error_result(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    result = await manager.call_tool("mcp__ev__nope", {})
    assert result.is_error and result.content == "Unknown MCP tool: mcp__ev__nope"


async def test_a_timeout_is_an_error_with_unknown_effect_and_the_connection_survives(
    shared: tuple[MCPManager, Path],
) -> None:
    manager, markers = shared
    (markers / "hang-cancelled").unlink(missing_ok=True)
    result = await manager.call_tool("mcp__ev__hang", {}, timeout=0.5)
    assert result.is_error and result.effect_status == "unknown"
    assert "timed out after 0.5s" in str(result.content)
    await wait_for_file(markers / "hang-cancelled")  # the server was told to stop
    assert (
        await manager.call_tool("mcp__ev__echo", {"text": "still here"})
    ).content == "still here"
    assert status_of(manager, "ev") == "connected"


async def test_cancelling_the_caller_cancels_the_request_and_keeps_the_connection(
    shared: tuple[MCPManager, Path],
) -> None:
    manager, markers = shared
    for marker in ("hang-started", "hang-cancelled"):
        (markers / marker).unlink(missing_ok=True)
    call = asyncio.create_task(manager.call_tool("mcp__ev__hang", {}))
    await wait_for_file(markers / "hang-started")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_for_file(markers / "hang-cancelled")
    assert (await manager.call_tool("mcp__ev__echo", {"text": "after"})).content == "after"
    assert status_of(manager, "ev") == "connected"


async def test_resources_are_read_by_uri_and_by_template(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    assert (await manager.read_resource("memo://readme")).content == "Read me first."
    assert (await manager.read_resource("memo://notes/otters")).content == "notes on otters"
    logo = await manager.read_resource("memo://logo")
    assert isinstance(logo.content, list) and logo.content[1]["type"] == "image_url"
    unknown = await manager.read_resource("file:///etc/passwd")
    assert unknown.is_error and unknown.content == "Unknown MCP resource: file:///etc/passwd"


async def test_prompts_expand_to_role_blocks(shared: tuple[MCPManager, Path]) -> None:
    manager, _ = shared
    result = await manager.get_prompt("mcp__ev__review", {"code": "x = 1", "language": "go"})
    assert result.content == "[user]: Please review this go code:\nx = 1"
    missing = await manager.get_prompt("mcp__ev__review", {})
    assert missing.is_error
    unknown = await manager.get_prompt("mcp__ev__nope", {})
    assert unknown.is_error and unknown.content == "Unknown MCP prompt: mcp__ev__nope"


async def test_server_env_is_the_scrubbed_daemon_env_plus_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TURNSTONED_TEST_API_TOKEN", "leak-me")
    monkeypatch.setenv("TURNSTONED_TEST_PLAIN", "visible")

    def scrub(environ: object) -> dict[str, str]:
        return {k: v for k, v in dict(environ).items() if not k.endswith("_TOKEN")}  # type: ignore[call-overload]

    async with running(
        fast_manager(
            [stdio_spec("ev", env={"OWN_SETTING": "mine", "TURNSTONED_TEST_PLAIN": "overridden"})],
            env_scrub=scrub,
        )
    ) as manager:
        get = manager.call_tool
        assert (
            await get("mcp__ev__getenv", {"key": "TURNSTONED_TEST_API_TOKEN"})
        ).content == "<unset>"
        assert (await get("mcp__ev__getenv", {"key": "OWN_SETTING"})).content == "mine"
        assert (
            await get("mcp__ev__getenv", {"key": "TURNSTONED_TEST_PLAIN"})
        ).content == "overridden"


async def test_a_server_answering_method_not_found_to_one_resource_list_keeps_the_other() -> None:
    async with running(
        fast_manager(
            [
                stdio_spec("tmpl", HALF_RESOURCES, "--mode", "templates-only"),
                stdio_spec("res", HALF_RESOURCES, "--mode", "resources-only"),
            ]
        )
    ) as manager:
        assert [status_of(manager, n) for n in ("tmpl", "res")] == ["connected", "connected"]
        assert [(t.server, t.uri_template) for t in manager.resource_templates()] == [
            ("tmpl", "db://tables/{table}/rows/{id}")
        ]
        assert [(r.server, r.uri) for r in manager.resources()] == [("res", "db://schema")]
        result = await manager.read_resource("db://tables/users/rows/7")
        assert result.content == "contents of db://tables/users/rows/7"


async def test_any_other_discovery_error_fails_that_server_only() -> None:
    async with running(
        fast_manager(
            [stdio_spec("broken", HALF_RESOURCES, "--mode", "broken"), stdio_spec("ev")],
            backoff_base=30.0,
        )
    ) as manager:
        broken = next(s for s in manager.status() if s.name == "broken")
        assert broken.status == "failed"
        assert (
            broken.error is not None and "resource index is corrupt (code -32603)" in broken.error
        )
        assert status_of(manager, "ev") == "connected"
        assert all(t.server == "ev" for t in manager.tools())


async def test_paginated_lists_are_followed_and_odd_names_and_schemas_made_safe() -> None:
    paged = stdio_spec("paged", PAGED_TOOLS, "--count", "25", "--page", "10")
    async with running(fast_manager([paged])) as manager:
        names = tool_names(manager)
        assert len(names) == 26 and names[0] == "mcp__paged__t00" and names[24] == "mcp__paged__t24"
        weird = manager.tools()[25]
        assert (
            weird.tool == "weird.name/with spaces"
            and weird.name == "mcp__paged__weird_name_with_spaces"
        )
        assert weird.parameters == {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
        }
        assert (
            await manager.call_tool(weird.name, {"q": "x"})
        ).content == "called weird.name/with spaces"


async def test_a_server_that_cannot_start_fails_with_a_readable_error_and_others_work() -> None:
    crashing = ServerSpec(
        name="dies",
        type="stdio",
        command=sys.executable,
        args=["-c", "import sys; print('config file missing', file=sys.stderr); sys.exit(2)"],
    )
    missing = ServerSpec(name="nope", type="stdio", command="/nonexistent/mcp-server")
    async with running(
        fast_manager([crashing, missing, stdio_spec("ev")], backoff_base=30.0)
    ) as manager:
        statuses = {s.name: s for s in manager.status()}
        assert statuses["dies"].status == "failed" and statuses["nope"].status == "failed"
        assert "config file missing" in (statuses["dies"].error or "")
        assert "cannot start '/nonexistent/mcp-server'" in (statuses["nope"].error or "")
        assert statuses["ev"].status == "connected"


async def test_server_stderr_is_logged_and_never_reaches_stdout(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="turnstoned.mcp.server")
    async with running(fast_manager([stdio_spec("noisy", EVERYTHING, "--stderr-noise")])):
        pass
    out, _ = capfd.readouterr()
    assert "stderr noise" not in out
    assert any(
        "[noisy] everything: starting up (stderr noise)" in r.getMessage() for r in caplog.records
    )


async def test_close_terminates_every_stdio_server_process() -> None:
    async with running(fast_manager([stdio_spec("a"), stdio_spec("b")])) as manager:
        pids = [
            int(str((await manager.call_tool(f"mcp__{n}__pid", {})).content)) for n in ("a", "b")
        ]
    for pid in pids:
        await wait_pid_gone(pid)


async def test_close_while_still_connecting_leaves_no_process(tmp_path: Path) -> None:
    async with running(
        fast_manager([stdio_spec("ev", env={"MARKER_DIR": str(tmp_path)})]), ready=False
    ) as manager:
        await wait_for_file(tmp_path / "starts")
        assert status_of(manager, "ev") == "connecting"
    pid = int((tmp_path / "starts").read_text().split()[0])
    await wait_pid_gone(pid)
