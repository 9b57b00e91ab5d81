"""A task agent over real stdio: its items and its own approval request carry parentCallId."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.rawrpc import RawDaemon
from tests.e2e.test_stdio import env, turn  # noqa: F401 (the env fixture)
from tests.fakes.model_server import ScriptedModel, text, tool_calls


def test_nested_items_and_approvals_on_the_wire(env: dict[str, str],  # noqa: F811
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
