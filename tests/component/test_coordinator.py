"""Coordinator sessions in-process: children are daemon sessions the coordinator's tools drive."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.tools._coordination import render_items

Script = Callable[[int, list[dict[str, Any]]], Response]


def router(scripts: dict[str, Script]) -> Callable[[dict[str, Any]], Response]:
    """One responder for every agent: the coordinator (by its system prompt) or a child (by
    the word before ':' in its first message); the step is how many replies it already had."""
    def respond(request: dict[str, Any]) -> Response:
        msgs = request["messages"]
        first = next(m["content"] for m in msgs if m["role"] == "user")
        key = "coord" if "coordinating work" in msgs[0]["content"] else first.split(":")[0]
        step = sum(1 for m in msgs if m["role"] == "assistant")
        return scripts[key](step, msgs)
    return respond


def _last_json(msgs: list[dict[str, Any]]) -> Any:
    return json.loads([m for m in msgs if m["role"] == "tool"][-1]["content"])


def _child(name: str) -> Script:
    def script(step: int, msgs: list[dict[str, Any]]) -> Response:
        if step == 0:
            return tool_calls([("w", "write_file", json.dumps(
                {"path": f"{name}.txt", "content": f"{name} was here"}))])
        return text(f"{name} done")
    return script


def _coordinator(step: int, msgs: list[dict[str, Any]]) -> Response:
    if step == 0:
        return tool_calls([("s", "spawn_batch", json.dumps({"children": [
            {"name": "alpha", "initial_message": "alpha: write alpha.txt"},
            {"name": "beta", "initial_message": "beta: write beta.txt"}]}))])
    if step == 1:
        spawned = _last_json(msgs)
        ids = [spawned["0"]["ws_id"], spawned["1"]["ws_id"]]
        return tool_calls([("w", "wait_for_workstream",
                            json.dumps({"ws_ids": ids, "mode": "all", "timeout": 30}))])
    waited = _last_json(msgs)
    return text("Children: " + "; ".join(w["last_message"] for w in waited["workstreams"]))


async def test_a_coordinator_spawns_two_children_and_waits_for_both(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(*[router({"coord": _coordinator, "alpha": _child("alpha"),
                         "beta": _child("beta")})] * 7)
    coord = start(engine, tmp_path, kind="coordinator")
    done = await run(engine, sink, coord, "get alpha and beta written", timeout=60)
    assert done["status"] == "completed"
    assert (tmp_path / "alpha.txt").read_text() == "alpha was here"
    assert (tmp_path / "beta.txt").read_text() == "beta was here"

    sessions = {s.session_id: s for s in engine.list_sessions()}
    children = [s for s in sessions.values() if s.parent_session_id == coord]
    assert sorted(c.title for c in children) == ["alpha", "beta"]  # type: ignore[type-var]
    assert {c.kind for c in children} == {"interactive"}
    assert sessions[coord].kind == "coordinator" and sessions[coord].parent_session_id is None
    asked = [(a["sessionId"], a["items"][0]["tool"]) for a in sink.approvals]
    assert asked[0] == (coord, "spawn_batch")
    assert sorted(asked[1:]) == sorted((c.session_id, "write_file") for c in children)

    waited = json.loads(tool_messages(model.requests[-1])[-1]["content"])
    assert waited["mode"] == "all" and waited["timed_out"] is False
    assert sorted((w["name"], w["state"], w["last_turn"], w["last_message"])
                  for w in waited["workstreams"]) == [
        ("alpha", "idle", "completed", "alpha done"), ("beta", "idle", "completed", "beta done")]
    said = "".join(e["delta"] for e in sink.of("item/agentMessage/delta") if e["sessionId"] == coord)
    assert said.startswith("Children: ") and "alpha done" in said and "beta done" in said
    tools = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert {"spawn_batch", "wait_for_workstream", "tasks", "memory", "notify"} <= tools
    assert not tools & {"bash", "write_file", "task_agent", "watch"}


async def _coordinated(engine: Engine, sink: RecordingSink, tmp_path: Path) -> tuple[str, str]:
    coord = start(engine, tmp_path, kind="coordinator")
    child = engine.coordinator.spawn(coord, "helper", None, None)
    assert child.state == "idle" and child.name == "helper"
    return coord, child.id


async def _call(engine: Engine, sink: RecordingSink, model: ScriptedModel, sid: str,
                calls: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    model.push(tool_calls([(cid, tool, json.dumps(args)) for cid, tool, args in calls]),
               text("ok"))
    await run(engine, sink, sid, "go", timeout=30)
    return [m["content"] for m in tool_messages(model.requests[-1])[-len(calls):]]


async def test_send_inspect_cancel_close_and_list(engine: Engine, sink: RecordingSink,
                                                  model: ScriptedModel, tmp_path: Path) -> None:
    coord, child = await _coordinated(engine, sink, tmp_path)

    def coordinator(step: int, msgs: list[dict[str, Any]]) -> Response:
        if step == 0:
            return tool_calls([("s", "send_to_workstream", json.dumps(
                {"ws_id": child, "message": "helper: summarise the repo"}))])
        return text("sent")

    model.push(*[router({"coord": coordinator,
                         "helper": lambda step, msgs: text("working on it" * 100)})] * 3)
    await run(engine, sink, coord, "ask the helper")
    await sink.wait_for("turn/completed", lambda e: e["sessionId"] == child)
    sent = [m for m in model.requests if "coordinating work" in m["messages"][0]["content"]]
    assert json.loads(tool_messages(sent[-1])[-1]["content"])["ws_id"] == child
    listed, inspected = await _call(engine, sink, model, coord, [
        ("l", "list_workstreams", {}), ("i", "inspect_workstream", {"ws_id": child})])
    [row] = json.loads(listed)["workstreams"]
    assert (row["ws_id"], row["state"], row["last_turn"]) == (child, "idle", "completed")
    assert len(row["last_message"]) < 600  # listing keeps messages short
    assert inspected.startswith(f"Workstream {child} (helper): idle, last turn completed")
    assert "[user] helper: summarise the repo" in inspected and "[assistant] working on it" in inspected

    cancelled, closed = await _call(engine, sink, model, coord, [
        ("c", "cancel_workstream", {"ws_id": child}),
        ("x", "close_workstream", {"ws_id": child, "reason": "done"})])
    assert json.loads(cancelled)["stopped"] is False
    assert json.loads(closed)["state"] == "closed"
    [listed_open, listed_all] = await _call(engine, sink, model, coord, [
        ("l1", "list_workstreams", {}), ("l2", "list_workstreams", {"include_closed": True})])
    assert json.loads(listed_open)["workstreams"] == []
    assert [w["state"] for w in json.loads(listed_all)["workstreams"]] == ["closed"]
    # the child's history stays readable after it closed
    [again] = await _call(engine, sink, model, coord, [("i2", "inspect_workstream",
                                                        {"ws_id": child, "message_limit": 1})])
    assert "last 1 of 2 items" in again and "[assistant] working on it" in again


async def test_ids_are_checked_and_only_own_children_are_reached(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    coord, child = await _coordinated(engine, sink, tmp_path)
    other = start(engine, tmp_path)
    results = await _call(engine, sink, model, coord, [
        ("a", "inspect_workstream", {"ws_id": "helper"}),
        ("b", "inspect_workstream", {"ws_id": other}),
        ("c", "wait_for_workstream", {"ws_ids": [child] * 33}),
        ("d", "wait_for_workstream", {"ws_ids": [child], "timeout": 601}),
        ("e", "spawn_batch", {"children": [{"initial_message": "x"}] * 11}),
        ("f", "tasks", {"action": "add", "title": "t" * 201}),
    ])
    assert results[0].startswith("Error: 'helper' is not a workstream id")
    assert results[1].startswith(f"Error: {other} is not one of your workstreams. Your "
                                 f"workstreams: {child} (helper)")
    assert results[2] == "Error: at most 32 ids, got 33"
    assert results[3] == "Error: 'timeout' must be between 0 and 600 seconds"
    assert results[4] == "Error: at most 10 children per batch, got 11"
    assert results[5] == "Error: 'title' exceeds 200 characters"
    # an interactive session has no coordinator tools
    model.push(tool_calls([("z", "spawn_workstream", '{"initial_message": "x"}')]), text("no"))
    await run(engine, sink, other, "try")
    assert tool_messages(model.requests[-1])[-1]["content"].startswith(
        "Unknown tool: 'spawn_workstream'")


async def test_wait_times_out_and_any_returns_on_the_first(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    coord, child = await _coordinated(engine, sink, tmp_path)
    gate = asyncio.Event()

    async def hold(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
        await gate.wait()
        return p.ApprovalResponse(decision="approve")

    sink.answers.append(hold)
    model.push(tool_calls([("b", "bash", '{"command": "touch t"}')]), text("finished"))
    engine.start_turn(child, ["helper: run true"])
    await sink.wait_for("item/started",
                        lambda e: e["sessionId"] == child and e["item"]["type"] == "toolCall")
    found, timed_out = await engine.coordinator.wait(coord, [child], 0.2, "any")
    assert timed_out and found[0].state == "awaiting_approval"
    waiting = asyncio.ensure_future(engine.coordinator.wait(coord, [child], 20, "any"))
    gate.set()
    found, timed_out = await asyncio.wait_for(waiting, 20)
    assert not timed_out and found[0].state == "idle" and found[0].last_message == "finished"


async def test_the_task_list(engine: Engine, sink: RecordingSink, model: ScriptedModel,
                             tmp_path: Path) -> None:
    coord, child = await _coordinated(engine, sink, tmp_path)
    [_, second] = await _call(engine, sink, model, coord, [
        ("a", "tasks", {"action": "add", "title": "Write the parser"}),
        ("b", "tasks", {"action": "add", "title": "Test it", "child_ws_id": child,
                        "status": "in_progress"})])
    tasks = json.loads(second)["tasks"]
    assert [(t["title"], t["status"], t["child_ws_id"]) for t in tasks] == [
        ("Write the parser", "pending", None), ("Test it", "in_progress", child)]
    ids = [t["task_id"] for t in tasks]
    [updated, bad_order, reordered, removed] = await _call(engine, sink, model, coord, [
        ("c", "tasks", {"action": "update", "task_id": ids[0], "status": "done", "note": "merged"}),
        ("d", "tasks", {"action": "reorder", "task_ids": [ids[0]]}),
        ("e", "tasks", {"action": "reorder", "task_ids": [ids[1], ids[0]]}),
        ("f", "tasks", {"action": "remove", "task_id": ids[1]})])
    assert json.loads(updated)["tasks"][0]["status"] == "done"
    assert bad_order.startswith("Error: 'task_ids' must name every task exactly once")
    assert [t["task_id"] for t in json.loads(reordered)["tasks"]] == [ids[1], ids[0]]
    assert [t["task_id"] for t in json.loads(removed)["tasks"]] == [ids[0]]
    assert sink.approvals == []  # a coordinator's own list never asks


async def test_memory_has_a_coordinator_scope(engine: Engine, sink: RecordingSink,
                                              model: ScriptedModel, tmp_path: Path) -> None:
    coord = start(engine, tmp_path, kind="coordinator")
    [saved] = await _call(engine, sink, model, coord, [("m", "memory", {
        "action": "save", "name": "review_order", "description": "how to split reviews",
        "content": "one child per package"})])
    assert "coordinator" in saved
    scopes = {x.name: x.scope for x in engine.memory_list(None, coord)}
    assert scopes["review_order"] == "coordinator"
    other = start(engine, tmp_path, kind="coordinator")
    [found] = await _call(engine, sink, model, other, [("g", "memory", {
        "action": "get", "name": "review_order", "scope": "coordinator"})])
    assert "one child per package" in found
    plain = start(engine, tmp_path)
    assert "review_order" not in {x.name for x in engine.memory_list("global", plain)}


def test_inspect_shortens_in_tiers() -> None:
    items: list[p.Item] = [p.UserMessageItem(id=f"u{i}", text="x" * 5000) for i in range(5)]
    full, tier = render_items(items, 20)
    assert tier == "full" and len(full) > 25_000
    many = items * 3
    compact, tier = render_items(many, 20)
    assert tier == "compact" and "[... 4100 chars ...]" in compact
    skeleton, tier = render_items(many * 10, 200)
    assert tier == "skeleton" and len(skeleton) <= 32_000


@pytest.mark.parametrize("kind", ["interactive", "coordinator"])
def test_session_kinds_get_their_own_identity(engine: Engine, tmp_path: Path, kind: str) -> None:
    sid = start(engine, tmp_path, kind=kind)
    prompt = engine.get(sid).system_prompt("m")
    assert ("coordinating work" in prompt) == (kind == "coordinator")


def test_a_database_from_before_coordinators_opens(tmp_path: Path) -> None:
    import sqlite3

    from turnstoned.store import Store

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, kind TEXT NOT NULL, cwd TEXT NOT NULL,
            workspace TEXT, model TEXT, title TEXT, skip_permissions INTEGER NOT NULL DEFAULT 0,
            grants TEXT NOT NULL DEFAULT '[]', state TEXT NOT NULL DEFAULT '{}',
            closed INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, updated_at REAL NOT NULL);
        INSERT INTO sessions (id, kind, cwd, created_at, updated_at)
            VALUES ('old', 'interactive', '/', 1, 1);""")
    db.close()
    store = Store(path)
    [row] = store.list_sessions()
    assert (row.id, row.parent_id) == ("old", None)
    assert store.list_sessions("old") == []
    store.close()
