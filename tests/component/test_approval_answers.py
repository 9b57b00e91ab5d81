"""Edit proposals, per-call approval decisions and context usage, through whole turns."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.core.messages import to_items


def _write(call_id: str, path: str, content: str) -> tuple[str, str, str]:
    return (call_id, "write_file", json.dumps({"path": path, "content": content}))


def _ids_by_file(params: p.ApprovalRequestParams) -> dict[str, str]:
    """Call ids of an approval request keyed by the name of the file each call changes."""
    return {Path(i.file_change.path).name: i.call_id for i in params.items if i.file_change}


def _by_path(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool-call items keyed by the file name their arguments name."""
    return {json.loads(i["arguments"])["path"]: i for i in items}


async def test_a_proposal_is_readable_while_pending_and_refused_after(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")
    edit = json.dumps({"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"})
    model.push(tool_calls([("r1", "read_file", '{"path": "app.py"}')]),
               tool_calls([("e1", "edit_file", edit), _write("w1", "new.txt", "hello\n")]),
               text("done"))
    sid = start(engine, tmp_path)
    read_while_pending: dict[str, p.FileChangeReadResult] = {}

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        for item in params.items:
            read_while_pending[item.tool] = await engine.read_file_change(sid, item.call_id)
        return p.ApprovalResponse(decision="approve")

    sink.answers.append(answer)
    assert (await run(engine, sink, sid, "edit and write"))["status"] == "completed"

    real = os.path.realpath(tmp_path)
    asked = {i["tool"]: i for i in sink.approvals[0]["items"]}
    edit_change, write_change = asked["edit_file"]["fileChange"], asked["write_file"]["fileChange"]
    assert edit_change["path"] == f"{real}/app.py" and edit_change["kind"] == "modify"
    assert "-y = 2\n+y = 3" in edit_change["unifiedDiff"] and not edit_change["truncated"]
    assert write_change == {"path": f"{real}/new.txt", "kind": "create",
                            "unifiedDiff": f"--- /dev/null\n+++ {real}/new.txt\n@@ -0,0 +1 @@\n"
                                           "+hello\n", "truncated": False}
    assert not sink.approvals[0]["atomic"]
    assert read_while_pending["edit_file"] == p.FileChangeReadResult(
        path=f"{real}/app.py", old_text="x = 1\ny = 2\n", new_text="x = 1\ny = 3\n")
    assert read_while_pending["write_file"] == p.FileChangeReadResult(
        path=f"{real}/new.txt", old_text="", new_text="hello\n")
    # toolCall items carry the same proposal, and keep it in the resumed history
    items = {i["tool"]: i for i in completed_tools(sink)}
    assert items["edit_file"]["fileChange"] == edit_change
    history = {i.tool: i for i in to_items(engine.resume(sid).history)
               if isinstance(i, p.ToolCallItem)}
    assert history["write_file"].file_change == p.FileChange(
        path=write_change["path"], kind="create", unified_diff=write_change["unifiedDiff"])
    assert items["read_file"]["fileChange"] is None

    for item in sink.approvals[0]["items"]:
        with pytest.raises(EngineError) as refused:
            await engine.read_file_change(sid, item["callId"])
        assert refused.value.code == p.ErrorCode.FILE_CHANGE_NOT_PENDING
        assert refused.value.kind == "fileChangeNotPending"


async def test_a_proposal_of_a_call_that_changes_no_file_is_refused(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("b1", "bash", '{"command": "touch t.txt"}')]), text("ok"))
    sid = start(engine, tmp_path)
    refusals: list[str] = []

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        try:
            await engine.read_file_change(sid, params.items[0].call_id)
        except EngineError as exc:
            refusals.append(exc.kind)
        return p.ApprovalResponse(decision="approve")

    sink.answers.append(answer)
    await run(engine, sink, sid, "run")
    assert refusals == ["fileChangeNotPending"]
    assert sink.approvals[0]["items"][0]["fileChange"] is None


async def test_mixed_per_call_decisions_in_one_cycle(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_write("w1", "a.txt", "A"), _write("w2", "b.txt", "B"),
                           _write("w3", "c.txt", "C")]), text("ok"))

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        ids = _ids_by_file(params)
        return p.ApprovalResponse(decision="deny", feedback="not now", calls={
            ids["a.txt"]: p.CallDecision(decision="approve"),
            ids["b.txt"]: p.CallDecision(decision="deny", feedback="never b"),
        })

    sink.answers.append(answer)
    await run(engine, sink, start(engine, tmp_path), "write three files")
    assert (tmp_path / "a.txt").read_text() == "A"
    assert not (tmp_path / "b.txt").exists() and not (tmp_path / "c.txt").exists()
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results[1:] == ["Denied by user: never b", "Denied by user: not now"]
    assert results[0].startswith("Wrote 1 chars")
    items = _by_path(completed_tools(sink))
    assert [items[f]["status"] for f in ("a.txt", "b.txt", "c.txt")] == [
        "completed", "declined", "declined"]
    resolved = sink.of("approval/resolved")[0]
    assert resolved["decision"] == "deny"
    assert sorted(resolved["calls"].values()) == ["approve", "deny", "deny"]
    assert resolved["calls"][items["a.txt"]["callId"]] == "approve"
    # nothing but the results follows: the cycle's feedback went to the call it denied
    assert model.requests[1]["messages"][-1]["role"] == "tool"


async def test_always_for_one_call_grants_only_its_label(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("b1", "bash", '{"command": "touch t.txt"}'), _write("w1", "a.txt", "A")]),
               tool_calls([("b2", "bash", '{"command": "touch u.txt"}')]), text("ok"))

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        bash = next(i.call_id for i in params.items if i.tool == "bash")
        return p.ApprovalResponse(decision="approve", feedback="careful with files", calls={
            bash: p.CallDecision(decision="always", feedback="fine to run")})

    sink.answers.append(answer)
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "go")
    assert engine.get(sid).policy.grants == {"bash:touch"}
    assert engine.store.get_session(sid).grants == ("bash:touch",)  # type: ignore[union-attr]
    assert len(sink.approvals) == 1  # the second bash call ran without asking
    assert [i["status"] for i in completed_tools(sink)] == ["completed"] * 3
    feedback = model.requests[1]["messages"][-1]
    assert feedback["role"] == "user"
    assert "careful with files" in feedback["content"] and "fine to run" in feedback["content"]


async def test_a_split_answer_to_an_atomic_cycle_runs_nothing(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_write("w1", "same.txt", "one"), _write("w2", "same.txt", "two")]),
               text("ok"))

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        return p.ApprovalResponse(decision="approve", calls={
            params.items[1].call_id: p.CallDecision(decision="deny", feedback="only one")})

    sink.answers.append(answer)
    await run(engine, sink, start(engine, tmp_path), "write twice")
    assert sink.approvals[0]["atomic"] is True
    assert not (tmp_path / "same.txt").exists()
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert all("must be approved together" in r for r in results)
    assert results[1].endswith("User feedback: only one")
    assert [i["status"] for i in completed_tools(sink)] == ["declined", "declined"]
    assert sink.of("approval/resolved")[0]["decision"] == "deny"


async def test_an_atomic_cycle_answered_as_a_whole_runs(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_write("w1", "same.txt", "one"), _write("w2", "same.txt", "two")]),
               text("ok"))
    await run(engine, sink, start(engine, tmp_path), "write twice")
    assert sink.approvals[0]["atomic"] is True
    assert (tmp_path / "same.txt").exists()
    assert [i["status"] for i in completed_tools(sink)] == ["completed", "completed"]


async def test_usage_after_each_model_call(engine: Engine, sink: RecordingSink,
                                           model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("r1", "read_file", '{"path": "."}')]), text("done", usage=False))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "look")
    usage = sink.of("session/usage")
    assert len(usage) == 2 and len(model.requests) == 2
    first, second = usage
    assert first["sessionId"] == sid and first["contextWindow"] == 32768
    assert first["estimated"] is False
    assert first["contextTokens"] == done["usage"]["totalTokens"]  # the server's count
    assert second["estimated"] is True  # no usage from the server: estimated from the text
    assert second["contextTokens"] > first["contextTokens"]
    methods = [m for m, _ in sink.events]
    assert methods.index("session/usage") < methods.index("item/started")
    assert methods[-1] == "turn/completed"
