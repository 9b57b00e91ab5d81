"""Task agents in-process: their own loop, approvals and items nested under the parent call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink, write_config
from tests.fakes.model_server import ScriptedModel, hang, prompt_tokens, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.store import Store


def _task(call_id: str, prompt: str) -> tuple[str, str, str]:
    return (call_id, "task_agent", json.dumps({"prompt": prompt}))


def _nested(sink: RecordingSink, method: str, parent: str) -> list[dict[str, Any]]:
    return [e for e in sink.of(method) if e.get("parentCallId") == parent]


def _parent_call(sink: RecordingSink) -> str:
    started = [e for e in sink.of("item/started") if e["item"]["type"] == "toolCall"
               and e["item"]["tool"] == "task_agent"]
    return str(started[0]["item"]["callId"])


async def test_an_agent_edits_through_its_own_approval_while_the_parent_waits(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("VERSION = 1\n")
    model.push(
        tool_calls([_task("t1", "Bump VERSION in app.py to 2 and report.")]),
        tool_calls([("c1", "read_file", '{"path": "app.py"}')]),
        tool_calls([("c2", "edit_file", json.dumps({
            "path": "app.py", "old_string": "VERSION = 1", "new_string": "VERSION = 2"}))]),
        text("Bumped VERSION to 2 in app.py."),
        text("The agent bumped the version to 2."))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "bump the version with an agent")
    assert done["status"] == "completed"
    assert (tmp_path / "app.py").read_text() == "VERSION = 2\n"

    parent = _parent_call(sink)
    asked = [(a["items"][0]["tool"], a.get("parentCallId")) for a in sink.approvals]
    assert asked == [("task_agent", None), ("edit_file", parent)]  # read_file never asked
    assert sink.approvals[1]["items"][0]["fileChange"]["kind"] == "modify"
    assert sink.approvals[1]["sessionId"] == sid and sink.approvals[1]["turnId"] == done["turnId"]
    resolved = _nested(sink, "approval/resolved", parent)
    assert [r["decision"] for r in resolved] == ["approve"]

    started = [e["item"] for e in _nested(sink, "item/started", parent)]
    assert [i.get("tool", i["type"]) for i in started] == ["read_file", "edit_file",
                                                           "agentMessage"]
    nested_text = "".join(e["delta"] for e in _nested(sink, "item/agentMessage/delta", parent))
    assert nested_text == "Bumped VERSION to 2 in app.py."
    # The agent's model calls are the turn's spend: every request counts in its usage.
    assert len(model.requests) == 5
    assert done["usage"]["promptTokens"] == sum(prompt_tokens(r) for r in model.requests)
    top = [e["item"] for e in sink.of("item/completed") if e.get("parentCallId") is None
           and e["item"]["type"] == "toolCall"]
    assert [(i["tool"], i["status"], i["output"]) for i in top] == [
        ("task_agent", "completed", "Bumped VERSION to 2 in app.py.")]
    assert tool_messages(model.requests[4])[0]["content"] == "Bumped VERSION to 2 in app.py."

    child = model.requests[1]
    assert "# Task agent" in child["messages"][0]["content"]
    assert child["messages"][1] == {"role": "user",
                                    "content": "Bump VERSION in app.py to 2 and report."}
    names = {t["function"]["name"] for t in child["tools"]}
    assert {"bash", "edit_file", "read_file", "notify"} <= names
    assert not names & {"task_agent", "memory", "recall", "watch"}
    # the agent's own conversation stays its own
    assert len(model.requests[4]["messages"]) == 4


async def test_interrupt_mid_agent_gives_a_partial_ledger(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(
        tool_calls([_task("t1", "Write notes.txt, then think for a long time.")]),
        tool_calls([("w1", "write_file", '{"path": "notes.txt", "content": "first"}'),
                    ("r1", "read_file", '{"path": "missing.txt"}')]),
        hang(30, after_text="Thinking"))
    sid = start(engine, tmp_path)
    turn_id, _ = engine.start_turn(sid, ["delegate"])
    await sink.wait_for("item/agentMessage/delta", lambda e: e.get("parentCallId") is not None)
    engine.interrupt(sid, turn_id)
    done = await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id)
    assert done["status"] == "interrupted"
    assert (tmp_path / "notes.txt").read_text() == "first"

    item = next(e["item"] for e in sink.of("item/completed") if e.get("parentCallId") is None
                and e["item"]["type"] == "toolCall")
    assert (item["tool"], item["status"], item["effectStatus"]) == ("task_agent", "cancelled",
                                                                    "partial")
    assert item["output"].splitlines()[:2] == [
        "(task cancelled by user before completion)",
        "Completed before cancel: write_file, read_file."]
    stored = [x for x in engine.get(sid).history if x.role == "tool"]
    assert stored[-1].effect_status == "partial" and stored[-1].content == item["output"]
    # the session goes on, and the model reads the ledger
    model.push(text("Noted."))
    await run(engine, sink, sid, "what happened?")
    assert "Completed before cancel: write_file" in tool_messages(model.requests[-1])[0]["content"]


async def test_interrupt_while_the_agent_runs_a_command_is_unknown(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_task("t1", "Run the slow job.")]),
               tool_calls([("b1", "bash", '{"command": "sh -c \\"echo started; sleep 60\\""}')]))
    sid = start(engine, tmp_path)
    turn_id, _ = engine.start_turn(sid, ["delegate"])
    await sink.wait_for("item/toolCall/outputDelta", lambda e: e.get("parentCallId") is not None)
    engine.interrupt(sid, turn_id)
    await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id)
    parent = _parent_call(sink)
    child = [e["item"] for e in _nested(sink, "item/completed", parent)
             if e["item"]["type"] == "toolCall"]
    assert [(i["tool"], i["status"], i["effectStatus"]) for i in child] == [
        ("bash", "cancelled", "unknown")]
    item = next(e["item"] for e in sink.of("item/completed") if e["item"].get("callId") == parent)
    assert item["effectStatus"] == "unknown"
    assert "In flight at cancel: bash — outcome UNKNOWN" in item["output"]


async def test_interrupt_before_the_agent_acted_is_none(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_task("t1", "Think first.")]), hang(30, after_text="Let me"))
    sid = start(engine, tmp_path)
    turn_id, _ = engine.start_turn(sid, ["delegate"])

    def said_it_all(_: Any) -> bool:  # the first piece goes out at once; wait for the rest
        nested = sink.of("item/agentMessage/delta")
        return "".join(e["delta"] for e in nested if e.get("parentCallId")) == "Let me"

    await sink.wait_for("item/agentMessage/delta", said_it_all)
    engine.interrupt(sid, turn_id)
    await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id)
    item = next(e["item"] for e in sink.of("item/completed") if e.get("parentCallId") is None
                and e["item"]["type"] == "toolCall")
    assert item["effectStatus"] == "none"
    assert item["output"].startswith("(task cancelled by user before any action — no side effects)")
    messages = [e["item"] for e in sink.of("item/completed") if e.get("parentCallId")]
    assert messages[0]["type"] == "agentMessage" and messages[0]["text"] == "Let me"


async def test_depth_is_one_and_errors_stay_in_the_agent(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_task("t1", "Delegate further.")]),
               tool_calls([_task("t2", "Nested."), ("m", "memory", '{"action": "list"}')]),
               text("I could not delegate."), text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "go")
    results = [m["content"] for m in tool_messages(model.requests[2])]
    assert results[0] == "Error: agents cannot spawn further agents"
    assert results[1].startswith("Unknown tool: 'memory'")
    assert len(sink.approvals) == 1  # only the parent's task_agent call asked


async def test_two_agents_ask_at_the_same_time(engine: Engine, sink: RecordingSink,
                                               model: ScriptedModel, tmp_path: Path) -> None:
    both = asyncio.Event()

    async def when_both_asked(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
        if len(sink.approvals) >= 3:
            both.set()
        await asyncio.wait_for(both.wait(), 10)
        return p.ApprovalResponse(decision="approve")

    sink.answers.extend([p.ApprovalResponse(decision="approve"), when_both_asked, when_both_asked])
    bash = tool_calls([("b", "bash", '{"command": "sh -c \\"echo agent-work\\""}')])
    model.push(tool_calls([_task("t1", "Job one."), _task("t2", "Job two.")]),
               bash, bash, text("one done"), text("two done"), text("Both agents finished."))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "two jobs")
    assert done["status"] == "completed"
    nested = [a["parentCallId"] for a in sink.approvals[1:]]
    assert len(set(nested)) == 2 and None not in nested  # one pending cycle per agent
    outputs = sorted(m["content"] for m in tool_messages(model.requests[-1]))
    assert outputs == ["one done", "two done"]


async def test_parallel_agents_are_bounded(isolated_home: Path, sink: RecordingSink,
                                           model: ScriptedModel, tmp_path: Path) -> None:
    write_config(isolated_home, "[tools]\nmax_parallel_agents = 1\n")
    engine = Engine(config.load(), Store(paths.database_file()), sink)
    try:
        model.push(tool_calls([_task("t1", "One."), _task("t2", "Two.")]),
                   text("first report"), text("second report"), text("done"))
        await run(engine, sink, start(engine, tmp_path), "two jobs")
        # with one slot, the second agent starts only after the first answered
        events = [(m, e.get("parentCallId")) for m, e in sink.events
                  if m in ("item/started", "item/completed") and e.get("parentCallId")]
        first = events[0][1]
        assert [x for x in events if x[1] == first] == events[:2]
    finally:
        await engine.shutdown()
        engine.terminate()


async def test_what_asks_in_the_session_asks_in_the_agent(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "inside.txt").write_text("in")
    (tmp_path / "outside.txt").write_text("out")
    model.push(tool_calls([_task("t1", "Read both files.")]),
               tool_calls([("a", "read_file", '{"path": "inside.txt"}'),
                           ("b", "read_file", json.dumps({"path": str(tmp_path / "outside.txt")}))]),
               text("Read both."), text("ok"))
    sid = start(engine, project)
    await run(engine, sink, sid, "delegate the reading")
    parent = _parent_call(sink)
    nested = [a for a in sink.approvals if a.get("parentCallId") == parent]
    assert len(nested) == 1
    gated = [i for i in nested[0]["items"] if i["needsApproval"]]
    assert [i["tool"] for i in gated] == ["read_file"] and "outside.txt" in gated[0]["header"]
