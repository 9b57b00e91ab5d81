"""MCP through whole turns: real MCP servers (subprocesses), a real engine, a scripted model."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink, write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.daemon.handlers import build
from turnstoned.store import Store

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"


def server_toml(name: str, script: str, *args: str) -> str:
    argv = json.dumps([str(SERVERS / script), *args])
    return f'[mcp.servers.{name}]\ncommand = "{sys.executable}"\nargs = {argv}\n'


async def wait(pred: Any, timeout: float = 15.0) -> None:
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(loop(), timeout)


@pytest.fixture
async def mcp_engine(sink: RecordingSink, model: ScriptedModel, isolated_home: Path,
                     request: pytest.FixtureRequest) -> AsyncIterator[Engine]:
    write_config(isolated_home, request.param)
    engine = Engine(config.load(), Store(paths.database_file()), sink)
    engine.start()
    await engine.mcp.wait_ready(20)
    yield engine
    await engine.shutdown()
    engine.terminate()


EVERYTHING = '[tools]\nsearch = "off"\n' + server_toml("ev", "everything.py", "--name", "ev")


@pytest.mark.parametrize("mcp_engine", [EVERYTHING], indirect=True)
async def test_model_calls_mcp_tool_with_approval(mcp_engine: Engine, sink: RecordingSink,
                                                  model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("m1", "mcp__ev__echo", '{"text": "ping"}')]), text("ok"))
    sid = start(mcp_engine, tmp_path)
    done = await run(mcp_engine, sink, sid, "echo")
    assert done["status"] == "completed"
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "mcp__ev__echo" in names
    assert names.index("mcp__ev__echo") > names.index("write_file")  # after the built-ins
    assert sink.approvals[0]["items"][0]["approvalLabel"] == "mcp__ev__echo"
    assert "ping" in tool_messages(model.requests[1])[0]["content"]
    system = model.requests[0]["messages"][0]["content"]
    assert "<mcp-resources>" in system and "<mcp-prompts>" in system
    assert {"read_resource", "use_prompt"} <= set(names)


@pytest.mark.parametrize("mcp_engine", [EVERYTHING], indirect=True)
async def test_is_error_is_a_tool_error(mcp_engine: Engine, sink: RecordingSink,
                                        model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("f1", "mcp__ev__fail", '{"reason": "disk on fire"}')]), text("ok"))
    sid = start(mcp_engine, tmp_path, skip_permissions=True)
    await run(mcp_engine, sink, sid, "fail")
    item = next(e["item"] for e in sink.of("item/completed") if e["item"]["type"] == "toolCall")
    assert item["isError"] is True and item["status"] == "failed"
    assert "disk on fire" in item["output"]


@pytest.mark.parametrize("mcp_engine", [EVERYTHING], indirect=True)
async def test_tool_list_change_reaches_the_next_model_call(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("a1", "mcp__ev__add_tool", '{"tool_name": "fresh_tool"}')]), text("added"))
    sid = start(mcp_engine, tmp_path, skip_permissions=True)
    await run(mcp_engine, sink, sid, "add a tool")
    await wait(lambda: any(t.name == "mcp__ev__fresh_tool" for t in mcp_engine.mcp.tools()))
    model.push(tool_calls([("c1", "mcp__ev__fresh_tool", '{"text": "x"}')]), text("done"))
    await run(mcp_engine, sink, sid, "use it")
    assert "mcp__ev__fresh_tool" in [t["function"]["name"] for t in model.requests[-2]["tools"]]
    assert "Error" not in tool_messages(model.requests[-1])[-1]["content"]


@pytest.mark.parametrize("mcp_engine", [EVERYTHING + '[mcp.servers."bad__name"]\ncommand = "x"\n'],
                         indirect=True)
async def test_server_list_refresh_and_bad_entries(mcp_engine: Engine, sink: RecordingSink) -> None:
    handlers = build(lambda: mcp_engine)
    servers = (await handlers["mcpServer/list"](None)).servers
    by_name = {s.name: s for s in servers}
    assert by_name["ev"].status == "connected" and by_name["ev"].tools >= 8
    assert by_name["ev"].resources >= 1 and by_name["ev"].prompts >= 1
    bad = by_name["bad__name"]
    assert bad.status == "disabled" and "__" in (bad.error or "")
    changes = (await handlers["mcpServer/refresh"](p.McpServerRefreshParams(name="ev"))).changes
    assert [c.server for c in changes] == ["ev"] and changes[0].added == []
    with pytest.raises(EngineError) as info:
        await handlers["mcpServer/refresh"](p.McpServerRefreshParams(name="nope"))
    assert info.value.kind == "mcpServerNotFound" and "nope" in info.value.message
    health = await handlers["daemon/health"](p.DaemonHealthParams())
    assert health.mcp.servers >= 1 and health.mcp.connected == 1 and health.mcp.tools >= 8
    assert any(e["status"] == "connected" for e in sink.of("mcpServer/statusChanged"))


@pytest.mark.parametrize("mcp_engine", [EVERYTHING], indirect=True)
async def test_read_resource_and_use_prompt(mcp_engine: Engine, sink: RecordingSink,
                                            model: ScriptedModel, tmp_path: Path) -> None:
    uri = mcp_engine.mcp.resources()[0].uri
    prompt = next(pr for pr in mcp_engine.mcp.prompts() if pr.prompt == "review")
    model.push(tool_calls([("r1", "read_resource", json.dumps({"uri": uri})),
                           ("u1", "use_prompt", json.dumps({"name": prompt.name,
                                                            "arguments": {"code": "x = 1"}}))]),
               text("ok"))
    sid = start(mcp_engine, tmp_path)
    sink.answers.append(p.ApprovalResponse(decision="always"))
    await run(mcp_engine, sink, sid, "read")
    labels = {i["approvalLabel"] for i in sink.approvals[0]["items"]}
    assert labels == {f"mcp_resource__{uri}", prompt.name}
    resource_msg, prompt_msg = tool_messages(model.requests[1])
    assert "Error" not in resource_msg["content"] and "x = 1" in prompt_msg["content"]


MANY = server_toml("many", "paged_tools.py", "--count", "70", "--page", "25")


@pytest.mark.parametrize("mcp_engine", [MANY], indirect=True)
async def test_tool_search_defers_expands_and_keeps(mcp_engine: Engine, sink: RecordingSink,
                                                    model: ScriptedModel, tmp_path: Path) -> None:
    assert len(mcp_engine.mcp.tools()) == 71
    model.push(tool_calls([("s1", "tool_search", '{"query": "t42"}')]),
               tool_calls([("c1", "mcp__many__t42", "{}")]), text("done"))
    sid = start(mcp_engine, tmp_path, skip_permissions=True)
    await run(mcp_engine, sink, sid, "find t42")
    first = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "tool_search" in first and not any(n.startswith("mcp__") for n in first)
    assert "mcp__many__t42" in tool_messages(model.requests[1])[0]["content"]
    assert "mcp__many__t42" in [t["function"]["name"] for t in model.requests[1]["tools"]]
    assert tool_messages(model.requests[2])[-1]["content"] == "called t42"
    # the expansion survives a resume in a fresh engine
    fresh = Engine(config.load(), Store(paths.database_file()), RecordingSink())
    session = fresh.resume(sid)
    fresh.services.mcp = mcp_engine.mcp
    session.env.services = fresh.services
    visible = [t["function"]["name"] for t in session.toolset().schemas]
    assert "mcp__many__t42" in visible and "mcp__many__t41" not in visible
    fresh.terminate()


@pytest.mark.parametrize("mcp_engine", [MANY], indirect=True)
async def test_deferred_tool_is_not_callable_before_search(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("c1", "mcp__many__t07", "{}")]), text("ok"))
    sid = start(mcp_engine, tmp_path, skip_permissions=True)
    await run(mcp_engine, sink, sid, "call it")
    assert tool_messages(model.requests[1])[0]["content"].startswith("Unknown tool: 'mcp__many__t07'")


@pytest.mark.parametrize("mcp_engine", ["[model]\nnative_tool_search = true\n" + MANY], indirect=True)
async def test_native_deferral_marks_deferred_tools(mcp_engine: Engine, sink: RecordingSink,
                                                    model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("ok"))
    sid = start(mcp_engine, tmp_path)
    await run(mcp_engine, sink, sid, "hi")
    tools = model.requests[0]["tools"]
    names = [t["function"]["name"] for t in tools]
    assert "tool_search" not in names
    deferred = [t for t in tools if t.get("defer_loading")]
    assert len(deferred) == 71 and all(t["function"]["name"].startswith("mcp__") for t in deferred)
    assert not any(t.get("defer_loading") for t in tools if t["function"]["name"] == "bash")


@pytest.mark.parametrize("mcp_engine", ['[tools]\nsearch = "off"\n' + MANY], indirect=True)
async def test_search_off_sends_every_tool(mcp_engine: Engine, sink: RecordingSink,
                                           model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("ok"))
    sid = start(mcp_engine, tmp_path)
    await run(mcp_engine, sink, sid, "hi")
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "tool_search" not in names and sum(n.startswith("mcp__") for n in names) == 71


@pytest.mark.parametrize("mcp_engine", [EVERYTHING], indirect=True)
async def test_interrupting_an_mcp_call_reports_unknown(mcp_engine: Engine, sink: RecordingSink,
                                                        model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("h1", "mcp__ev__hang", "{}")]))
    sid = start(mcp_engine, tmp_path, skip_permissions=True)
    turn_id, _ = mcp_engine.start_turn(sid, ["hang"])
    await sink.wait_for("item/started", lambda e: e["item"].get("tool") == "mcp__ev__hang")
    await asyncio.sleep(0.3)
    mcp_engine.interrupt(sid, turn_id)
    done = await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id, timeout=2)
    assert done["status"] == "interrupted"
    item = next(e["item"] for e in sink.of("item/completed") if e["item"]["type"] == "toolCall")
    assert item["effectStatus"] == "unknown"
    # the connection survives: the server answers the next call
    model.push(tool_calls([("e1", "mcp__ev__echo", '{"text": "still here"}')]), text("ok"))
    await run(mcp_engine, sink, sid, "echo")
    assert "still here" in tool_messages(model.requests[-1])[-1]["content"]


# A server's question during a tool call (MCP elicitation) reaches the user, and the
# answer reaches the server; with no one to ask, the server hears "decline".

ASKING = ('[tools]\nsearch = "off"\nauto_approve_tools = ["mcp__asking__book"]\n'
          + server_toml("asking", "asking.py"))


@pytest.mark.parametrize("mcp_engine", [ASKING], indirect=True)
async def test_the_users_answer_reaches_the_server(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    asked: list[p.McpElicitParams] = []

    async def user(params: p.McpElicitParams) -> p.McpElicitResponse:
        asked.append(params)
        return p.McpElicitResponse(action="accept", content={"name": "Ada", "seats": 3,
                                                             "window": True})
    mcp_engine.services.elicit = user
    model.push(tool_calls([("m1", "mcp__asking__book", "{}")]), text("booked"))
    sid = start(mcp_engine, tmp_path)
    await run(mcp_engine, sink, sid, "book a table")
    assert tool_messages(model.requests[1])[0]["content"] == "booked Ada x3 window=True"
    [question] = asked
    assert question.session_id == sid and question.server == "asking"
    assert question.message == "Who is the booking for?"
    props: dict[str, Any] = question.requested_schema["properties"]
    assert props["seats"]["default"] == 2 and question.requested_schema["required"] == ["name"]
    assert question.property_order == ["name", "seats", "window"]


@pytest.mark.parametrize("mcp_engine", [ASKING], indirect=True)
async def test_with_no_one_to_ask_the_server_hears_decline(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    mcp_engine.services.elicit = None
    model.push(tool_calls([("m1", "mcp__asking__book", "{}")]), text("none"))
    await run(mcp_engine, sink, start(mcp_engine, tmp_path), "book a table")
    assert tool_messages(model.requests[1])[0]["content"] == "no booking: decline"


@pytest.mark.parametrize("mcp_engine", [ASKING.replace(
    '["mcp__asking__book"]', '["mcp__asking__book", "mcp__asking__count", "mcp__asking__where"]')],
    indirect=True)
async def test_a_servers_progress_shows_on_the_call_and_its_roots_are_the_sessions_folders(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    model.push(tool_calls([("m1", "mcp__asking__count", "{}")]),
               tool_calls([("m2", "mcp__asking__where", "{}")]), text("ok"))
    await run(mcp_engine, sink, start(mcp_engine, ws), "count, then say where")
    streamed = "".join(e["chunk"] for e in sink.of("item/toolCall/outputDelta"))
    assert "[progress 1/3: step 1]" in streamed and "[progress 3/3: step 3]" in streamed
    where = tool_messages(model.requests[2])[-1]["content"]
    assert ws.resolve().as_uri() in where.split()


@pytest.mark.parametrize("mcp_engine", [ASKING.replace(
    '["mcp__asking__book"]', '["mcp__asking__chatty"]')], indirect=True)
async def test_a_servers_log_messages_show_on_the_running_call(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("m1", "mcp__asking__chatty", "{}")]), text("ok"))
    await run(mcp_engine, sink, start(mcp_engine, tmp_path), "talk")
    streamed = "".join(e["chunk"] for e in sink.of("item/toolCall/outputDelta"))
    assert "[warning store] disk almost full\n" in streamed
    assert '[info] {"rows": 3}\n' in streamed
    assert tool_messages(model.requests[1])[-1]["content"] == "done talking"


WATCHED = ('[tools]\nsearch = "off"\nauto_approve_tools = ["read_resource", "mcp__watched__bump"]\n'
           + server_toml("watched", "watched.py"))


@pytest.mark.parametrize("mcp_engine", [WATCHED], indirect=True)
async def test_a_subscribed_resource_that_changes_is_news_at_the_next_model_call(
        mcp_engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    read = ("r1", "read_resource", '{"uri": "notes://today"}')
    model.push(tool_calls([read]), tool_calls([read]), tool_calls([("b1", "mcp__watched__bump", "{}")]),
               text("noted"))
    await run(mcp_engine, sink, start(mcp_engine, tmp_path), "read the notes twice, then bump")
    assert tool_messages(model.requests[1])[-1]["content"] == "version 1"
    await wait(lambda: sink.of("session/notice"))
    notices = [n for n in sink.of("session/notice") if n["kind"] == "mcpResource/updated"]
    assert [n["data"] for n in notices] == [{"uri": "notes://today"}]  # read twice, told once
    last = json.dumps(model.requests[-1]["messages"])
    assert "notes://today changed since it was read" in last
