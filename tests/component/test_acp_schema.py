"""Everything ``turnstoned acp`` writes conforms to the ACP v1 JSON Schema that the official
TypeScript SDK publishes (schema/v1/schema.json of ``@agentclientprotocol/sdk``, installed
by ``npm ci`` in tests/acp_sdk, as .ci/run does): each answer to its request's response
type, each ``session/update`` and ``session/request_permission`` to theirs, each error to
``Error``. Skipped when the SDK is not installed there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.acpkit import ROOT, Brain, RawAcp, model_env
from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = ROOT / "tests/acp_sdk/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
RESPONSES = {
    "initialize": "InitializeResponse", "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
    "session/resume": "ResumeSessionResponse", "session/list": "ListSessionsResponse",
    "session/close": "CloseSessionResponse", "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
}
FROM_AGENT = {"session/update": "SessionNotification",
              "session/request_permission": "RequestPermissionRequest",
              "$/cancel_request": "CancelRequestNotification"}


@pytest.fixture(scope="module")
def validators() -> dict[str, Any]:
    if not SCHEMA.exists():
        pytest.skip("the TypeScript ACP SDK is not installed (npm ci in tests/acp_sdk)")
    schema = json.loads(SCHEMA.read_text())
    root = {k: v for k, v in schema.items() if k != "anyOf"}
    names = {*RESPONSES.values(), *FROM_AGENT.values(), "Error"}
    return {name: jsonschema.Draft202012Validator({**root, "$ref": f"#/$defs/{name}"})
            for name in names}


def conform(client: RawAcp, sent: dict[int, str], validators: dict[str, Any]) -> int:
    """Validate every line the agent wrote; how many were checked."""
    checked = 0
    for line in client.lines:
        msg = json.loads(line)
        if "method" in msg:
            name = FROM_AGENT.get(msg["method"])
            assert name is not None, f"a message ACP has no word for: {msg['method']}"
            body = msg.get("params")
        elif "error" in msg:
            name, body = "Error", msg["error"]
        else:
            name, body = RESPONSES[sent[msg["id"]]], msg["result"]
        errors = sorted(validators[name].iter_errors(body), key=lambda e: list(e.path))
        assert not errors, f"{name}: {errors[0].message} at {list(errors[0].path)}\n{body}"
        checked += 1
    return checked


async def test_every_message_conforms_to_the_published_schema(
        validators: dict[str, Any], model: ScriptedModel, isolated_home: Path,
        tmp_path: Path) -> None:
    model.default = Brain()
    write_config(isolated_home, '[approvals]\nmode = "read-only"\n[tools]\nsearch = "off"\n')
    (tmp_path / "doc.txt").write_text("one\ntwo\n")
    sent: dict[int, str] = {}
    client = await RawAcp.start(model_env(model, isolated_home))
    answers = iter(["allow_once", "allow_always", "reject_once", "allow_once", "allow_once"])

    async def on_request(method: str, params: Any) -> Any:
        return {"outcome": {"outcome": "selected", "optionId": next(answers, "reject_once")}}

    client.on_request = on_request
    original = client.raw

    async def raw(method: str, params: Any = None, timeout: float = 30) -> Any:
        sent[client._ids + 1] = method
        return await original(method, params, timeout)

    client.raw = raw  # type: ignore[method-assign]
    try:
        await client.initialize()
        await client.request("authenticate", {"methodId": "none"})
        sid = await client.new_session(tmp_path)
        for text in ("hello", "think", "long", "run `echo out; touch made.txt`",
                     "run `touch again.txt`", "run `mkdir refused`",
                     "edit doc.txt: two -> TWO", "write new.txt: fresh",
                     "/grants", "/mcp"):
            await client.prompt(sid, text)
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        plan = json.dumps({"plan": "1. Look\n2. Change"})
        await client.prompt(sid, f"call `propose_plan` with `{plan}`")
        await client.request("session/set_config_option",
                             {"sessionId": sid, "configId": "mode", "value": "read-only"})
        await client.request("session/list", {})
        await client.request("session/resume", {"sessionId": sid, "cwd": str(tmp_path),
                                                "mcpServers": []})
        await client.request("session/load", {"sessionId": sid, "cwd": str(tmp_path),
                                              "mcpServers": []})
        await client.raw("session/prompt", {"sessionId": "nope", "prompt": []})
        other = await client.new_session(tmp_path)
        await client.request("session/close", {"sessionId": other})
    finally:
        await client.close()
    kinds = {json.loads(line).get("params", {}).get("update", {}).get("sessionUpdate")
             for line in client.lines}
    assert {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
            "plan", "current_mode_update", "config_option_update", "usage_update",
            "available_commands_update", "user_message_chunk"} <= kinds
    assert conform(client, sent, validators) > 50
