"""The daemon hosted by an LSP client library (pygls' LanguageClient), as editors host it."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls


class Host:
    """A LanguageClient with an approval dialog that stays open until answered or withdrawn."""

    def __init__(self) -> None:
        self.client = LanguageClient("host", "1")
        self.asked = asyncio.Event()
        self.withdrawn = asyncio.Event()
        self.messages: list[str] = []
        self.completed: dict[str, Any] = {}
        self.turn_done = asyncio.Event()

        @self.client.feature("item/tool/requestApproval")
        async def dialog(_: Any) -> dict[str, str]:
            self.asked.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:  # the daemon sent $/cancelRequest
                self.withdrawn.set()
                raise
            return {"decision": "approve"}

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show(params: lsp.ShowMessageParams) -> None:
            self.messages.append(params.message)

        @self.client.feature("turn/completed")
        def done(params: Any) -> None:
            self.completed = params._asdict()
            self.turn_done.set()

    async def request(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), 10)


@pytest.fixture
async def host(model: ScriptedModel, isolated_home: Path) -> AsyncIterator[Host]:
    h = Host()
    env = {**os.environ, "TURNSTONED_HOME": str(isolated_home)}
    await h.client.start_io(sys.executable, "-m", "turnstoned", env=env)
    await asyncio.wait_for(h.client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), process_id=os.getpid())), 30)
    h.client.initialized(lsp.InitializedParams())
    yield h
    await asyncio.wait_for(h.client.shutdown_async(None), 10)
    h.client.exit(None)
    await asyncio.wait_for(h.client.stop(), 10)


async def open_approval(h: Host, model: ScriptedModel, cwd: Path) -> tuple[str, str]:
    model.push(tool_calls([("w1", "write_file", '{"path": "f.txt", "content": "x"}')]),
               text("after"))
    sid = (await h.request("session/start", {"cwd": str(cwd)})).sessionId
    tid = (await h.request("turn/start", {"sessionId": sid,
                                          "input": [{"type": "text", "text": "go"}]})).turnId
    await asyncio.wait_for(h.asked.wait(), 10)
    return sid, tid


@pytest.mark.parametrize("how", ["interrupt", "close"])
async def test_a_withdrawn_approval_is_cancelled_in_the_client(host: Host, model: ScriptedModel,
                                                               tmp_path: Path, how: str) -> None:
    sid, _ = await open_approval(host, model, tmp_path)
    if how == "interrupt":
        await host.request("turn/interrupt", {"sessionId": sid})
    else:
        await host.request("session/close", {"sessionId": sid})
    await asyncio.wait_for(host.withdrawn.wait(), 5)
    await asyncio.wait_for(host.turn_done.wait(), 5)
    assert host.completed["status"] == "interrupted"
    assert not (tmp_path / "f.txt").exists()
    assert not [m for m in host.messages if "Error in server" in m], host.messages


async def test_an_approval_timeout_withdraws_the_dialog(model: ScriptedModel, isolated_home: Path,
                                                        tmp_path: Path) -> None:
    write_config(isolated_home, "[tools]\napproval_timeout_seconds = 0.5\n")
    h = Host()
    await h.client.start_io(sys.executable, "-m", "turnstoned",
                            env={**os.environ, "TURNSTONED_HOME": str(isolated_home)})
    try:
        await asyncio.wait_for(h.client.initialize_async(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities())), 30)
        h.client.initialized(lsp.InitializedParams())
        await open_approval(h, model, tmp_path)
        await asyncio.wait_for(h.withdrawn.wait(), 5)
        await asyncio.wait_for(h.turn_done.wait(), 5)
        assert h.completed["status"] == "completed"  # the model read the denial and answered
        assert not (tmp_path / "f.txt").exists()
        assert not [m for m in h.messages if "Error in server" in m], h.messages
    finally:
        await asyncio.wait_for(h.client.shutdown_async(None), 10)
        h.client.exit(None)
        await asyncio.wait_for(h.client.stop(), 10)
