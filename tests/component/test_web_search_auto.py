"""web_search out of the box: a connected search MCP server is its backend with no
configuration, through whole turns of a real engine and real stdio MCP servers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink, write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.cli.doctor import Doctor, Line
from turnstoned.core.engine import Engine

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"
ENGINES = SERVERS / "search_engines.py"
WAIT = 20.0

MakeEngine = Callable[[str], Engine]


def server(name: str, flavour: str, script: Path = ENGINES) -> str:
    args = [str(script), flavour] if script == ENGINES else [str(script)]
    return f'[mcp.servers.{name}]\ncommand = "{sys.executable}"\nargs = {json.dumps(args)}\n'


def call(**args: Any) -> list[tuple[str, str, str]]:
    return [("c-search", "web_search", json.dumps(args))]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


async def ready(make_engine: MakeEngine, toml: str) -> Engine:
    engine = make_engine(toml)
    await engine.mcp.wait_ready(WAIT)
    return engine


async def test_a_connected_search_server_is_web_search_without_configuration(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, server("brave", "brave"))
    model.push(tool_calls(call(query="turnstone daemon", max_results=3)), text("done"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    done = await run(engine, sink, start(engine, tmp_path), "search the web")
    assert done["status"] == "completed"
    assert "web_search" in tool_names(model.requests[0])
    asked = sink.approvals[0]["items"][0]
    assert asked["header"] == "⚙ web_search: turnstone daemon"
    assert "sent to MCP brave/brave_web_search (chosen automatically)" in asked["preview"]
    # Brave's server calls the number of results "count": the schema decides the names.
    assert tool_messages(model.requests[1])[0]["content"] == (
        "1. brave result 1 for 'turnstone daemon': https://brave.test/1\n"
        "2. brave result 2 for 'turnstone daemon': https://brave.test/2\n"
        "3. brave result 3 for 'turnstone daemon': https://brave.test/3\n"
        '(arguments: {"count": 3, "offset": 0, "query": "turnstone daemon"})')


async def test_a_refused_search_sends_nothing(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, server("brave", "brave"))
    model.push(tool_calls(call(query="private plans")), text("ok"))
    sink.answers.append(p.ApprovalResponse(decision="deny"))
    await run(engine, sink, start(engine, tmp_path), "search")
    assert [a["items"][0]["header"] for a in sink.approvals] == ["⚙ web_search: private plans"]
    assert "brave result" not in tool_messages(model.requests[1])[0]["content"]


async def test_none_turns_web_search_off_even_with_a_search_server(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, '[tools]\nweb_search_backend = "none"\n'
                                      + server("brave", "brave"))
    model.push(text("no search"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "hi")
    offered = tool_names(model.requests[0])
    assert "web_search" not in offered
    assert "mcp__brave__brave_web_search" in offered  # the server's own tool stays
    assert "web_search" not in {t.name for t in engine.tool_list(sid)}


async def test_of_two_search_servers_the_first_by_name_is_used(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    # tavily is configured first; brave comes first by name.
    engine = await ready(make_engine, server("tavily", "tavily") + server("brave", "brave"))
    model.push(tool_calls(call(query="q1", max_results=1)), text("done"))
    await run(engine, sink, start(engine, tmp_path), "search")
    assert "sent to MCP brave/brave_web_search (chosen automatically)" in (
        sink.approvals[0]["items"][0]["preview"])
    assert tool_messages(model.requests[1])[0]["content"].startswith(
        "1. brave result 1 for 'q1'")


async def test_an_explicit_backend_wins_over_the_automatic_choice(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, '[tools]\nweb_search_backend = "mcp:tavily:tavily-search"\n'
                                      + server("tavily", "tavily") + server("brave", "brave"))
    model.push(tool_calls(call(query="q2", max_results=2)), text("done"))
    await run(engine, sink, start(engine, tmp_path), "search")
    preview = sink.approvals[0]["items"][0]["preview"]
    assert "sent to MCP tavily/tavily-search" in preview and "automatically" not in preview
    assert tool_messages(model.requests[1])[0]["content"] == (
        "1. tavily result 1 for 'q2': https://tavily.test/1\n"
        "2. tavily result 2 for 'q2': https://tavily.test/2\n"
        '(arguments: {"max_results": 2, "query": "q2", "search_depth": "basic"})')


async def test_an_explicit_backend_that_is_not_connected_is_not_replaced(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, '[tools]\nweb_search_backend = "mcp:kagi:kagi_search_fetch"\n'
                                      + server("brave", "brave"))
    assert "web_search" not in {t.name for t in engine.tool_list(start(engine, tmp_path))}


async def test_a_generic_search_tool_is_used_only_when_it_says_web(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await ready(make_engine, server("files", "files"))
    sid = start(engine, tmp_path)
    names = {t.name for t in engine.tool_list(sid)}
    assert "mcp__files__search" in names and "web_search" not in names

    # The same generic name, described as searching the web (tests/mcp_servers/search.py).
    engine = await ready(make_engine, server("files", "files")
                         + server("find", "", SERVERS / "search.py"))
    model.push(tool_calls(call(query="turnstone", max_results=2)), text("done"))
    await run(engine, sink, start(engine, tmp_path), "search")
    assert "sent to MCP find/search (chosen automatically)" in (
        sink.approvals[0]["items"][0]["preview"])
    assert tool_messages(model.requests[1])[0]["content"] == (
        "1. result 1 for 'turnstone'\n2. result 2 for 'turnstone'")


# ------------------------------------------------------------------ doctor


def web_search_line(cwd: Path) -> Line:
    lines = [line for line in Doctor(local_servers=[], cwd=cwd).run()
             if line.what.startswith("web_search:")]
    assert len(lines) == 1
    return lines[0]


def test_doctor_names_the_automatic_backend(model: ScriptedModel, isolated_home: Path,
                                            tmp_path: Path) -> None:
    write_config(isolated_home, server("tavily", "tavily") + server("brave", "brave"))
    line = web_search_line(tmp_path)
    assert (line.status, line.what) == ("OK", "web_search: MCP brave:brave_web_search (automatic)")


def test_doctor_says_plainly_when_there_is_none(model: ScriptedModel, isolated_home: Path,
                                               tmp_path: Path) -> None:
    write_config(isolated_home, server("files", "files"))
    line = web_search_line(tmp_path)
    assert line.status == "WARN"
    assert line.what.startswith("web_search: none: set [tools] searxng_url")
    assert "connect a search MCP server" in line.what
    assert '"mcp:<server>:<tool>"' in line.what

    write_config(isolated_home, '[tools]\nsearxng_url = "http://127.0.0.1:8888"\n'
                 + server("brave", "brave"))
    line = web_search_line(tmp_path)
    assert (line.status, line.what) == ("OK", "web_search: searxng at http://127.0.0.1:8888")

    write_config(isolated_home, '[tools]\nweb_search_backend = "none"\n' + server("brave", "brave"))
    line = web_search_line(tmp_path)
    assert line.status == "OK" and line.what.startswith("web_search: none: turned off")


async def test_daemon_health_says_which_backend_web_search_uses(
        make_engine: MakeEngine) -> None:
    engine = await ready(make_engine, server("brave", "brave"))
    assert (await engine.health()).web_search == "MCP brave:brave_web_search (automatic)"
    engine = await ready(make_engine, '[tools]\nweb_search_backend = "none"\n')
    assert (await engine.health()).web_search == 'none: turned off ([tools] web_search_backend = "none")'
