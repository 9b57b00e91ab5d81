"""Rated approvals, edited arguments, grants and policies over the daemon's real stdio."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls


@pytest.fixture
def daemon(env: dict[str, str]) -> Iterator[RawDaemon]:
    d = RawDaemon(env)
    yield d
    d.close()


def test_a_rated_request_an_edit_a_grant_and_a_trusted_policy(
        daemon: RawDaemon, model: ScriptedModel, tmp_path: Path) -> None:
    policies = tmp_path / ".turnstone" / "policies.toml"
    policies.parent.mkdir()
    policies.write_text('[[policies]]\nlabel = "bash"\ncommand = "touch *"\naction = "allow"\n')

    def answer(msg: dict[str, Any]) -> Any:
        if msg["method"] == "policy/requestTrust":
            return {"decision": "trust"}
        item = next(i for i in msg["params"]["items"] if i["needsApproval"])
        return {"decision": "deny", "calls": {item["callId"]: {
            "decision": "always", "arguments": {"command": "echo edited > f.txt"}}}}

    daemon.on_request = answer
    daemon.initialize()
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    question = daemon.wait_for("policy/requestTrust")
    assert question["policies"][0]["action"] == "allow" and not question["policies"][0]["active"]
    model.push(tool_calls([("b1", "bash", json.dumps({"command": "echo original > f.txt"})),
                           ("b2", "bash", json.dumps({"command": "touch t.txt"}))]),
               text("done"))
    tid = daemon.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": "go"}]})["turnId"]
    daemon.wait_for("turn/completed", lambda p: p["turnId"] == tid)

    request = daemon.of("item/tool/requestApproval")[0]
    asked = {i["preview"]: i for i in request["items"]}
    echo = asked["echo original > f.txt"]
    assert echo["verdict"]["rule"] == "default" and echo["grantRules"] == ["bash:echo"]
    assert not asked["touch t.txt"]["needsApproval"]  # the trusted policy allowed it
    assert asked["touch t.txt"]["autoApproveReason"].startswith("policy: allow")
    assert (tmp_path / "f.txt").read_text() == "edited\n" and (tmp_path / "t.txt").exists()

    grants = daemon.result("grant/list", {"sessionId": sid})["grants"]
    assert [g["rule"] for g in grants] == ["bash:echo"]
    listed = daemon.result("policy/list", {"sessionId": sid})
    assert listed["workspaceFile"]["decision"] == "trusted" and listed["policies"][0]["active"]
    assert daemon.result("grant/revoke", {"sessionId": sid, "rule": "bash:echo"}) == {
        "revoked": True}
    missing = daemon.request("grant/revoke", {"sessionId": sid, "rule": "bash:echo"})["error"]
    assert missing["code"] == -32023 and missing["data"]["kind"] == "grantNotFound"
    assert daemon.bad_frames == []
