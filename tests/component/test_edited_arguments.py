"""Calls the user edits in the approval, and grants the user can read and take back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError


def bash(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "bash", json.dumps({"command": command}))


def edit(arguments: dict[str, Any], decision: str = "approve") -> Any:
    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        call_id = next(i.call_id for i in params.items if i.needs_approval)
        return p.ApprovalResponse(decision="approve", calls={call_id: p.CallDecision(
            decision=decision, arguments=arguments)})  # type: ignore[arg-type]
    return answer


async def test_an_edited_command_runs_instead_of_the_original(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([bash("b1", "echo original > out.txt")]), text("ok"))
    sink.answers.append(edit({"command": "echo edited > out.txt"}))
    await run(engine, sink, start(engine, tmp_path), "write it")
    assert (tmp_path / "out.txt").read_text() == "edited\n"
    told = tool_messages(model.requests[1])[0]["content"]
    assert told.startswith("[The user edited this call before it ran.")
    assert "echo original > out.txt" in told and "echo edited > out.txt" in told
    item = completed_tools(sink)[0]
    assert json.loads(item["arguments"]) == {"command": "echo edited > out.txt"}
    assert json.loads(item["originalArguments"]) == {"command": "echo original > out.txt"}
    assert item["preview"] == "echo edited > out.txt" and item["status"] == "completed"
    assert len(sink.approvals) == 1  # no riskier than what was approved: it just ran


async def test_an_edit_that_needs_more_is_asked_again(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    model.push(tool_calls([bash("b1", "touch build/stamp")]), text("ok"))
    sink.answers += [edit({"command": "rm -rf build"}),
                     p.ApprovalResponse(decision="deny", feedback="not that")]
    await run(engine, sink, start(engine, tmp_path), "look")
    assert (tmp_path / "build").is_dir()  # the riskier edit did not run unasked
    again = sink.approvals[1]["items"][0]
    assert again["preview"] == "rm -rf build" and again["verdict"]["rule"] == "recursive-delete"
    assert again["callId"] == sink.approvals[0]["items"][0]["callId"]
    told = tool_messages(model.requests[1])[0]["content"]
    assert "Denied by user: not that" in told and "touch build/stamp" in told


async def test_an_edit_outside_the_workspace_asks_again_and_runs_when_approved(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    inside, outside = tmp_path / "ws", tmp_path / "elsewhere.txt"
    inside.mkdir()
    model.push(tool_calls([("w1", "write_file", json.dumps({"path": "a.txt", "content": "A"}))]),
               text("ok"))
    sink.answers += [edit({"path": str(outside), "content": "A"}),
                     p.ApprovalResponse(decision="approve")]
    await run(engine, sink, start(engine, inside), "write")
    assert len(sink.approvals) == 2 and outside.read_text() == "A"
    assert not (inside / "a.txt").exists()
    assert sink.approvals[1]["items"][0]["grantRules"] == []  # outside: no grant possible


async def test_an_edit_a_policy_denies_does_not_run(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    from turnstoned.config import PolicyRule
    from turnstoned.core.approval.policies import Policy

    session = engine.get(start(engine, tmp_path))
    deny = Policy(PolicyRule(action="deny", label="bash", command="touch *"), "config", "c", 1)
    session.policy.policies = lambda: [deny]
    model.push(tool_calls([bash("b1", "mkdir -p out")]), text("ok"))
    sink.answers.append(edit({"command": "touch made.txt"}))
    await run(engine, sink, session.id, "go")
    assert not (tmp_path / "made.txt").exists()
    assert "Blocked by tool policy" in tool_messages(model.requests[1])[0]["content"]


async def test_an_edit_that_cannot_be_prepared_is_the_models_error(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([bash("b1", "mkdir -p out")]), text("ok"))
    sink.answers.append(edit({"command": "   "}))
    await run(engine, sink, start(engine, tmp_path), "go")
    told = tool_messages(model.requests[1])[0]
    assert "edited this call" in told["content"] and "empty command" in told["content"]
    assert completed_tools(sink)[0]["status"] == "failed"


async def test_always_on_an_edited_call_grants_the_edited_call(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([bash("b1", "make")]), text("ok"))
    sink.answers.append(edit({"command": "git --version"}, decision="always"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "go")
    assert engine.get(sid).policy.grants == {"bash:=git --version"}


async def test_a_revoked_grant_asks_again(engine: Engine, sink: RecordingSink,
                                          model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([bash("b1", "touch a.txt")]), tool_calls([bash("b2", "touch b.txt")]),
               text("ok"))
    sink.answers.append(p.ApprovalResponse(decision="always"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "touch")
    assert len(sink.approvals) == 1
    assert sink.approvals[0]["items"][0]["grantRules"] == ["bash:touch"]
    listed = engine.grant_list(sid).grants
    assert [(g.rule, g.source, g.revocable) for g in listed] == [("bash:touch", "session", True)]
    assert "`touch`" in listed[0].description
    assert completed_tools(sink)[1]["autoApproveReason"] == "grant: bash:touch"

    assert engine.grant_revoke(sid, "bash:touch").revoked
    assert engine.store.get_session(sid).grants == ()  # type: ignore[union-attr]
    model.push(tool_calls([bash("b3", "touch c.txt")]), text("ok"))
    await run(engine, sink, sid, "again")
    assert len(sink.approvals) == 2
    with pytest.raises(EngineError) as missing:
        engine.grant_revoke(sid, "bash:touch")
    assert missing.value.kind == "grantNotFound"


async def test_a_plain_bash_grant_from_before_allows_only_reading(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    sid = start(engine, tmp_path)
    engine.store.update_session(sid, grants=["bash"])
    await engine.close_session(sid)
    engine.resume(sid)
    assert engine.grant_list(sid).grants[0].rule == "bash:@read-only"
    model.push(tool_calls([bash("b1", "ls")]), tool_calls([bash("b2", "touch x.txt")]),
               tool_calls([bash("b3", "rm -rf build")]), text("ok"))
    sink.answers += [p.ApprovalResponse(decision="approve"), p.ApprovalResponse(decision="deny")]
    await run(engine, sink, sid, "go")
    assert [a["items"][0]["preview"] for a in sink.approvals] == ["touch x.txt", "rm -rf build"]
    assert (tmp_path / "build").is_dir()


async def test_a_question_nobody_could_answer_is_not_told_as_the_users_no(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    async def editor_gone(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        raise ConnectionResetError("the editor went away")
    model.push(tool_calls([bash("b1", "touch made.txt")]), text("ok"))
    sink.answers.append(editor_gone)
    await run(engine, sink, start(engine, tmp_path), "make it")
    told = tool_messages(model.requests[1])[0]["content"]
    assert told.startswith("Not run: The editor could not be asked for approval")
    assert "the user did not see this call" in told and "Denied by user" not in told
    assert not (tmp_path / "made.txt").exists()
