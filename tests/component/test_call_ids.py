"""Models that reuse tool-call ids (``call_0`` every round, or twice in one reply)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.store import Store


async def test_a_denied_call_stays_denied_when_the_model_reuses_its_id(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    sink.answers.append(p.ApprovalResponse(decision="deny", feedback="not that file"))
    model.push(tool_calls([("call_0", "write_file", '{"path": "a.txt", "content": "A"}')]),
               tool_calls([("call_0", "bash", json.dumps({"command": "echo second-call"}))]),
               text("done"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "go")

    live = completed_tools(sink)
    assert [(i["tool"], i["status"]) for i in live] == [("write_file", "declined"),
                                                        ("bash", "completed")]
    assert len({i["callId"] for i in live}) == 2 and "call_0" not in {i["callId"] for i in live}
    # the model is always spoken to in its own ids
    last = model.requests[2]["messages"]
    assert [c["id"] for x in last if x["role"] == "assistant" for c in x["tool_calls"]] == [
        "call_0", "call_0"]
    assert [(x["tool_call_id"], x["content"].strip()) for x in tool_messages(model.requests[2])] == [
        ("call_0", "Denied by user: not that file"), ("call_0", "second-call")]
    assert model.rejected == []

    fresh = Engine(config.load(), Store(paths.database_file()), RecordingSink())
    try:
        resumed = [i for i in fresh.resume(sid).items() if isinstance(i, p.ToolCallItem)]
        assert [(i.tool, i.status, (i.output or "").strip()) for i in resumed] == [
            ("write_file", "declined", "Denied by user: not that file"),
            ("bash", "completed", "second-call")]
        assert [i.call_id for i in resumed] == [i["callId"] for i in live]
    finally:
        fresh.terminate()


async def test_two_calls_with_one_id_in_one_reply_keep_their_own_results(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("first file\n")
    (tmp_path / "two.txt").write_text("second file\n")
    model.push(tool_calls([("dup", "read_file", '{"path": "one.txt"}'),
                           ("dup", "read_file", '{"path": "two.txt"}')]), text("read both"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "read")
    sent = tool_messages(model.requests[1])
    assert len({x["tool_call_id"] for x in sent}) == 2  # distinct toward the model as well
    assert "first file" in sent[0]["content"] and "second file" in sent[1]["content"]
    assert model.rejected == []
    outputs = [i.output or "" for i in engine.resume(sid).items() if isinstance(i, p.ToolCallItem)]
    assert "first file" in outputs[0] and "second file" in outputs[1]
