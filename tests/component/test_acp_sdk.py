"""The official Python ACP SDK (PyPI ``agent-client-protocol``) as the client of a real
``turnstoned acp`` process: its own schema validates every message both ways."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.acpkit import HELLO, ROOT, Brain, acp_command, model_env
from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel

acp = pytest.importorskip("acp")
schema = pytest.importorskip("acp.schema")


class Recorder:
    """An ACP client that records every update and answers permission questions from a
    script of option ids (``"cancelled"``: dismiss the question)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[Any] = []
        self.answers: list[str] = []
        self.changed = asyncio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> Any:
        self.asked.append((session_id, tool_call, options))
        self.changed.set()
        choice = self.answers.pop(0) if self.answers else "reject_once"
        if choice == "cancelled":
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled"))
        assert choice in [o.option_id for o in options]
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    def of(self, cls: type, session_id: str | None = None) -> list[Any]:
        return [u for sid, u in self.updates
                if isinstance(u, cls) and (session_id is None or sid == session_id)]

    def text(self, session_id: str, cls: type | None = None) -> str:
        return "".join(u.content.text for u in self.of(cls or schema.AgentMessageChunk,
                                                        session_id))

    async def wait(self, pred: Any, timeout: float = 20) -> Any:
        async def scan() -> Any:
            while not (found := pred()):
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), 0.1)
                except TimeoutError:
                    pass
            return found
        return await asyncio.wait_for(scan(), timeout)


@pytest.fixture
def env(model: ScriptedModel, isolated_home: Path) -> dict[str, str]:
    model.default = Brain()
    return model_env(model, isolated_home)


@asynccontextmanager
async def connected(env: dict[str, str], client: Recorder) -> AsyncIterator[Any]:
    command, *args = acp_command()
    async with acp.spawn_agent_process(client, command, *args, env=env, cwd=ROOT,
                                       transport_kwargs={"stderr": sys.stderr}) as (conn, _proc):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                     client_capabilities=schema.ClientCapabilities(),
                                     client_info=schema.Implementation(name="sdk-test",
                                                                       version="1"))
        assert init.protocol_version == 1
        yield conn


def text_block(text: str) -> Any:
    return acp.text_block(text)


async def test_a_prompt_streams_to_end_turn(env: dict[str, str], tmp_path: Path) -> None:
    client = Recorder()
    async with connected(env, client) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert session.modes.current_mode_id == "read-only"
        assert {m.id for m in session.modes.available_modes} == {
            "read-only", "auto", "full-access", "plan"}
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        assert done.stop_reason == "end_turn"
        assert client.text(session.session_id) == HELLO
        commands = client.of(schema.AvailableCommandsUpdate, session.session_id)
        assert "undo" in {c.name for c in commands[0].available_commands}
        assert client.of(schema.UsageUpdate, session.session_id)


async def test_bash_through_request_permission(env: dict[str, str], tmp_path: Path) -> None:
    client = Recorder()
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        client.answers = ["allow_once"]
        done = await conn.prompt(session_id=sid, prompt=[text_block("run `touch once.txt`")])
        assert done.stop_reason == "end_turn" and (tmp_path / "once.txt").exists()
        _, call, options = client.asked[0]
        assert {o.kind for o in options} >= {"allow_once", "allow_always", "reject_once"}
        assert call.kind == "execute" and "risk" in (call.title or "")

        client.answers = ["reject_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("run `touch rejected.txt`")])
        assert not (tmp_path / "rejected.txt").exists()
        failed = [u for u in client.of(schema.ToolCallProgress, sid) if u.status == "failed"]
        assert len(failed) == 1

        client.answers = ["allow_always"]
        await conn.prompt(session_id=sid, prompt=[text_block("run `touch always1.txt`")])
        asked = len(client.asked)
        await conn.prompt(session_id=sid, prompt=[text_block("run `touch always2.txt`")])
        assert len(client.asked) == asked  # the saved rule covers the second call
        assert (tmp_path / "always1.txt").exists() and (tmp_path / "always2.txt").exists()

        client.answers = ["cancelled"]  # a dismissed question runs nothing
        await conn.prompt(session_id=sid, prompt=[text_block("run `mkdir dismissed`")])
        assert len(client.asked) == asked + 1 and not (tmp_path / "dismissed").exists()

        starts = client.of(schema.ToolCallStart, sid)
        assert starts and all(s.kind == "execute" for s in starts)


async def test_an_edit_arrives_as_a_diff(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")
    client = Recorder()
    client.answers = ["allow_once"]
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("edit app.py: y = 2 -> y = 3")])
        assert (tmp_path / "app.py").read_text() == "x = 1\ny = 3\n"
        diffs = [c for u in client.of(schema.ToolCallProgress, sid) for c in (u.content or [])
                 if isinstance(c, schema.FileEditToolCallContent)]
        assert diffs and diffs[-1].path == str(tmp_path / "app.py")
        assert diffs[-1].old_text == "x = 1\ny = 2\n" and diffs[-1].new_text == "x = 1\ny = 3\n"
        kinds = [s.kind for s in client.of(schema.ToolCallStart, sid)]
        assert kinds == ["read", "edit"]


async def test_cancel_during_a_running_command(env: dict[str, str], tmp_path: Path) -> None:
    client = Recorder()
    client.answers = ["allow_once"]
    marker = tmp_path / "pid.txt"
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        running = asyncio.get_running_loop().create_task(conn.prompt(
            session_id=sid, prompt=[text_block(f"run `echo $$ > {marker}; sleep 60`")]))
        await client.wait(lambda: marker.exists() and marker.read_text().strip())
        pid = int(marker.read_text())
        await conn.cancel(session_id=sid)
        done = await asyncio.wait_for(running, 10)
        assert done.stop_reason == "cancelled"
        await client.wait(lambda: not Path(f"/proc/{pid}").exists()
                          or "zombie" in Path(f"/proc/{pid}/status").read_text(), 10)


async def test_load_replays_the_history_after_a_restart(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    first = Recorder()
    async with connected(env, first) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("say hello")])
    second = Recorder()
    async with connected(env, second) as conn:
        listed = await conn.list_sessions(cwd=str(tmp_path))
        assert [s.session_id for s in listed.sessions] == [sid]
        loaded = await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert loaded.modes.current_mode_id == "read-only"
        assert second.text(sid, schema.UserMessageChunk) == "say hello"
        assert second.text(sid) == HELLO
        done = await conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert done.stop_reason == "end_turn"


async def test_modes_switch(env: dict[str, str], tmp_path: Path) -> None:
    client = Recorder()
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="auto")
        await client.wait(lambda: client.of(schema.CurrentModeUpdate, sid))
        assert client.of(schema.CurrentModeUpdate, sid)[-1].current_mode_id == "auto"
        await conn.prompt(session_id=sid, prompt=[text_block("write auto.txt: unasked")])
        assert client.asked == [] and (tmp_path / "auto.txt").read_text() == "unasked"
        result = await conn.set_config_option(config_id="mode", session_id=sid,
                                              value="read-only")
        assert result.config_options[0].current_value == "read-only"


async def test_client_mcp_servers_are_the_users_own(env: dict[str, str], tmp_path: Path,
                                                   model: ScriptedModel,
                                                   isolated_home: Path) -> None:
    write_config(isolated_home, '[tools]\nsearch = "off"\n')  # every tool in the request
    server = schema.McpServerStdio(
        name="clienttools", command=sys.executable,
        args=[str(ROOT / "tests" / "mcp_servers" / "everything.py")],
        env=[schema.EnvVariable(name="FROM_CLIENT", value="given-by-the-editor")])
    client = Recorder()
    client.answers = ["allow_once"]
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
        done = await conn.prompt(session_id=sid, prompt=[text_block(
            'call `mcp__clienttools__getenv` with `{"key": "FROM_CLIENT"}`')])
        assert done.stop_reason == "end_turn"
        tools = {t["function"]["name"] for t in model.requests[0]["tools"]}
        assert "mcp__clienttools__echo" in tools
        assert client.text(sid) == "Done: given-by-the-editor"


async def test_extension_methods(env: dict[str, str], tmp_path: Path,
                                 isolated_home: Path) -> None:
    write_config(isolated_home, '[approvals]\nmode = "auto"\n')
    (tmp_path / "undo.txt").write_text("before\n")
    client = Recorder()
    async with connected(env, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("write undo.txt: after\n")])
        undone = await conn.ext_method("turnstoned/turn/undo", {"sessionId": sid})
        assert undone["applied"] is True
        assert (tmp_path / "undo.txt").read_text() == "before\n"
        health = await conn.ext_method("turnstoned/daemon/health", {})
        assert health["model"] == "scripted"
