"""Task agents and coordinators over real stdio, as an editor sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.component.test_coordinator import router
from tests.e2e.rawrpc import RawDaemon
from tests.e2e.test_stdio import turn
from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls


def test_nested_items_and_approvals_on_the_wire(env: dict[str, str],
                                                model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("t1", "task_agent", json.dumps({"prompt": "Create hello.txt"}))]),
               tool_calls([("w1", "write_file", '{"path": "hello.txt", "content": "hi"}')]),
               text("Created hello.txt."), text("Done: the agent created hello.txt."))
    asked: list[dict[str, Any]] = []

    def answer(msg: dict[str, Any]) -> dict[str, Any]:
        asked.append(msg["params"])
        return {"decision": "approve"}

    d = RawDaemon(env)
    d.on_request = answer
    d.initialize()
    sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    assert turn(d, sid, "use an agent")["status"] == "completed"
    assert (tmp_path / "hello.txt").read_text() == "hi"
    parent = next(e["item"]["callId"] for e in d.of("item/started")
                  if e["item"].get("tool") == "task_agent")
    assert [(a["items"][0]["tool"], a.get("parentCallId")) for a in asked] == [
        ("task_agent", None), ("write_file", parent)]
    nested = [e for e in d.of("item/completed") if e.get("parentCallId") == parent]
    assert [e["item"]["type"] for e in nested] == ["toolCall", "agentMessage"]
    top = [e for e in d.of("item/completed") if "parentCallId" not in e]
    assert all(e["item"].get("tool") != "write_file" for e in top)
    d.close()


def test_a_coordinators_children_are_sessions_with_a_parent(env: dict[str, str],
                                                           model: ScriptedModel,
                                                           tmp_path: Path) -> None:
    def coordinator(step: int, msgs: list[dict[str, Any]]) -> Response:
        if step == 0:
            return tool_calls([("s", "spawn_workstream", json.dumps(
                {"name": "scout", "initial_message": "scout: list the files"}))])
        if step == 1:
            spawned = json.loads([m for m in msgs if m["role"] == "tool"][-1]["content"])
            return tool_calls([("w", "wait_for_workstream",
                                json.dumps({"ws_ids": [spawned["ws_id"]], "timeout": 30}))])
        return text("The scout reported.")

    model.push(*[router({"coord": coordinator,
                         "scout": lambda step, msgs: text("two files")})] * 4)
    d = RawDaemon(env)
    d.initialize()
    coord = d.result("session/start", {"cwd": str(tmp_path), "kind": "coordinator"})["sessionId"]
    assert turn(d, coord, "scout the repo", timeout=30)["status"] == "completed"
    sessions = d.result("session/list")["sessions"]
    [child] = [s for s in sessions if s.get("parentSessionId") == coord]
    assert (child["title"], child["kind"], child["status"]) == ("scout", "interactive", "idle")
    assert next(s for s in sessions if s["sessionId"] == coord).get("parentSessionId") is None
    # the child's turn streamed under its own session id
    assert any(e["sessionId"] == child["sessionId"] for e in d.of("turn/completed"))
    items = d.result("session/resume", {"sessionId": child["sessionId"]})["items"]
    assert [i["type"] for i in items] == ["userMessage", "agentMessage"]
    d.close()
