"""memory through whole turns, across daemon restarts, and through the editor requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.component.test_turns import completed_tools, run, start, tool_messages
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.daemon.handlers import build
from turnstoned.scopes import ScopeRef
from turnstoned.store import Store
from turnstoned.store.memory import MemoryStore
from turnstoned.tools.memory import rank


def call(call_id: str, **args: Any) -> tuple[str, str, str]:
    return (call_id, "memory", json.dumps(args))


SAVE = {"action": "save", "name": "Test Commands", "description": "how to run the tests",
        "content": "make test; the slow suite needs SLOW=1"}


async def test_save_then_get_in_a_later_turn(engine: Engine, sink: RecordingSink,
                                             model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([call("s1", **SAVE)]), text("saved"),
               tool_calls([call("g1", action="get", name="test_commands")]), text("got it"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "remember how to test")
    await run(engine, sink, sid, "how do I test?")
    assert sink.approvals == []  # memory never asks
    saved = tool_messages(model.requests[1])[0]["content"]
    assert saved == "Saved memory 'test_commands' (type=general, scope=global)"
    got = tool_messages(model.requests[3])[-1]["content"]
    assert got == ("[general:global] test_commands — how to run the tests\n\n"
                   "make test; the slow suite needs SLOW=1")


async def test_reads_and_writes_in_one_batch_are_both_refused(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([call("w", **SAVE), call("r", action="search", query="tests")]),
               text("ok"))
    await run(engine, sink, start(engine, tmp_path), "save and check")
    results = tool_messages(model.requests[1])
    assert [r["tool_call_id"] for r in results] == ["w", "r"]
    for r in results:
        assert r["content"] == ("memory read and write actions cannot run in the same tool batch. "
                                "Split the mutation and the follow-up read across separate "
                                "assistant turns.")
    assert all(item["isError"] and item["status"] == "failed" for item in completed_tools(sink))
    assert MemoryStore(engine.store).all_in([ScopeRef("global", "")]) == []


async def test_two_writes_in_one_batch_run_in_model_order(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([call("a", **SAVE), call("b", **{**SAVE, "content": "tox -e py311",
                                                          "type": "reference"})]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "save twice")
    first, second = (m["content"] for m in tool_messages(model.requests[1]))
    assert first.startswith("Saved memory 'test_commands'")
    assert second == "Updated memory 'test_commands' (type=reference, scope=global)"
    [stored] = MemoryStore(engine.store).all_in([ScopeRef("global", "")])
    assert (stored.content, stored.type) == ("tox -e py311", "reference")


async def test_memories_survive_a_new_engine(sink: RecordingSink, model: ScriptedModel,
                                             tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = Engine(config.load(), Store(paths.database_file()), sink)
    model.push(tool_calls([call("s1", **SAVE)]), text("saved"),
               tool_calls([call("s2", action="save", name="editor", description="preferred editor",
                                content="helix", type="user", scope="user")]), text("saved"))
    sid = start(first, tmp_path, workspace=str(ws))
    await run(first, sink, sid, "remember the tests")
    await run(first, sink, sid, "remember my editor")
    first.terminate()

    again = Engine(config.load(), Store(paths.database_file()), sink)
    model.push(tool_calls([call("l1", action="list")]), text("listed"),
               tool_calls([call("g1", action="get", name="test_commands")]), text("ok"))
    other = start(again, tmp_path)  # no workspace: project memories are not visible
    await run(again, sink, other, "what do you remember?")
    listing = tool_messages(model.requests[-1])[-1]["content"]
    assert listing.splitlines()[:2] == ["Memories (1):",
                                        "  [user:user] editor — preferred editor"]
    await run(again, sink, other, "tests?")
    missing = completed_tools(sink)[-1]
    assert missing["isError"] and missing["output"] == (
        "Error: memory 'test_commands' not found (scope=global)")
    model.push(tool_calls([call("g2", action="get", name="test commands")]), text("ok"))
    same_ws = start(again, tmp_path, workspace=str(ws))
    await run(again, sink, same_ws, "tests?")
    assert tool_messages(model.requests[-1])[-1]["content"].startswith(
        "[general:project] test_commands")
    again.terminate()


async def test_a_miss_hints_at_the_scope_that_has_it(engine: Engine, sink: RecordingSink,
                                                     model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([call("s", **SAVE, scope="workstream")]), text("ok"),
               tool_calls([call("g", action="delete", name="test_commands")]), text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "save")
    await run(engine, sink, sid, "forget it")
    out = completed_tools(sink)[-1]["output"]
    assert out == ("Error: memory 'test_commands' not found (scope=global)\nHint: a memory with "
                   "this name exists in scope='workstream'; retry with scope='workstream'.")


def test_search_ranks_over_name_description_and_content(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.sqlite3")
    memories = MemoryStore(store)
    g = ScopeRef("global", "")
    memories.save(g, "deploy_steps", "how to ship a release", "tag, push, run the deploy job", None)
    memories.save(g, "db_notes", "postgres quirks", "vacuum nightly; deploy migrations first",
                  None)
    memories.save(g, "style", "code style", "black, 100 columns", None)
    memories.save(g, "parser_design", "notes about the parser", "recursive descent", None)
    found = memories.all_in([g])
    assert [x.name for x in rank(found, "deploy")] == ["deploy_steps", "db_notes"]
    # a match in the name and description counts more than one in the content
    assert [x.name for x in rank(found, "vacuum style")] == ["style", "db_notes"]
    assert [x.name for x in rank(found, "pars")] == ["parser_design"]  # substring fallback
    assert rank(found, "kubernetes") == []
    store.close()


async def test_editor_requests_list_and_delete(engine: Engine, sink: RecordingSink,
                                               model: ScriptedModel, tmp_path: Path) -> None:
    handlers = build(lambda: engine)
    ws = tmp_path / "ws"
    ws.mkdir()
    sid = start(engine, tmp_path, workspace=str(ws))
    memories = MemoryStore(engine.store)
    memories.save(ScopeRef("global", ""), "g1", "a global note", "one", None)
    memories.save(ScopeRef("workstream", sid), "w1", "this session's note", "two", "feedback")
    memories.save(ScopeRef("project", str(ws)), "p1", "a project note", "three", None)
    memories.save(ScopeRef("workstream", "someone-else"), "w2", "not visible", "four", None)

    alone = await handlers["memory/list"](p.MemoryListParams())
    assert [(x.name, x.scope) for x in alone.memories] == [("g1", "global")]
    listed = await handlers["memory/list"](p.MemoryListParams(session_id=sid))
    assert sorted((x.name, x.scope, x.type) for x in listed.memories) == [
        ("g1", "global", "general"), ("p1", "project", "general"),
        ("w1", "workstream", "feedback")]
    assert listed.memories[0].updated_at.endswith("+00:00")
    only = await handlers["memory/list"](p.MemoryListParams(session_id=sid, scope="project"))
    assert [(x.name, x.content) for x in only.memories] == [("p1", "three")]

    deleted = await handlers["memory/delete"](
        p.MemoryDeleteParams(name="w1", scope="workstream", session_id=sid))
    assert deleted.deleted is True
    again = await handlers["memory/delete"](
        p.MemoryDeleteParams(name="w1", scope="workstream", session_id=sid))
    assert again.deleted is False
    by_scope = p.MemoryDeleteParams(name="g1", scope="global")
    assert (await handlers["memory/delete"](by_scope)).deleted
    with pytest.raises(EngineError) as err:
        await handlers["memory/delete"](p.MemoryDeleteParams(name="p1", scope="project"))
    assert err.value.kind == "invalidParams"
    with pytest.raises(EngineError) as err:
        await handlers["memory/list"](p.MemoryListParams(session_id="nope"))
    assert err.value.kind == "sessionNotFound"
    remaining = await handlers["memory/list"](p.MemoryListParams(session_id=sid))
    assert [x.name for x in remaining.memories] == ["p1"]
