"""A batch on its own: the pipeline unit runs outside any session or turn, with its own sink.

This is how a delegated agent (kind ``task``) runs its tool calls: its own environment,
its own gates, and a sink of its own that hears its approvals and streamed output.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import RecordingSink
from turnstoned import protocol as p
from turnstoned.core import toolset
from turnstoned.core.approval import ApprovalPolicy
from turnstoned.core.pipeline import Batch, BatchSetup
from turnstoned.core.results import Budget
from turnstoned.llm.types import RawToolCall
from turnstoned.tools.base import SessionEnv


def _setup(tmp_path: Path, sink: RecordingSink, **policy: object) -> BatchSetup:
    env = SessionEnv(session_id="agent-1", kind="task", cwd=tmp_path)
    return BatchSetup(env=env, sink=sink, turn_id="job-1", cancel=asyncio.Event(),
                      policy=ApprovalPolicy(**policy))  # type: ignore[arg-type]


async def test_a_task_agent_runs_a_batch_with_its_own_sink(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    sink = RecordingSink()
    setup = _setup(tmp_path, sink)
    tools = toolset.build("task", setup.env, toolset.SearchSettings())
    assert "memory" not in tools.handles and "bash" in tools.handles  # the task agent's tools
    batch = Batch.prepare(setup, tools.handles, [
        RawToolCall("r1", "read_file", '{"path": "notes.txt"}'),
        RawToolCall("b1", "bash", json.dumps({"command": "sh -c 'echo from-the-agent'"})),
        RawToolCall("x1", "memory", '{"action": "list"}'),
    ])
    folded = await batch.run(Budget(remaining=100_000, cap=50_000))

    assert [i.status for i in folded.items] == ["completed", "completed", "failed"]
    assert "alpha" in str(folded.messages[0].content)
    assert "from-the-agent" in str(folded.messages[1].content)
    assert "Unknown tool: 'memory'" in str(folded.messages[2].content)
    assert [m.tool_call_id for m in folded.messages] == [c.call_id for c in batch.calls]
    # the agent's sink heard its approval and its output; nothing else was told
    assert [a["items"][1]["tool"] for a in sink.approvals] == ["bash"]
    assert {a["sessionId"] for a in sink.approvals} == {"agent-1"}
    assert "from-the-agent" in "".join(e["chunk"] for e in sink.of("item/toolCall/outputDelta"))
    # (and, as a command ran, that files may have changed)
    assert {m for m, _ in sink.events} == {"approval/resolved", "item/toolCall/outputDelta",
                                           "workspace/filesChanged"}
    assert not batch.folded  # committing is the caller's business


async def test_a_batch_stopped_before_it_ran_answers_every_call(tmp_path: Path) -> None:
    sink = RecordingSink()
    setup = _setup(tmp_path, sink)
    asked, gate = asyncio.Event(), asyncio.Event()

    async def never(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
        asked.set()
        await gate.wait()
        raise AssertionError("not reached")

    sink.answers.append(never)
    tools = toolset.build("task", setup.env, toolset.SearchSettings())
    batch = Batch.prepare(setup, tools.handles, [
        RawToolCall("w1", "write_file", '{"path": "a.txt", "content": "A"}')])
    running = asyncio.create_task(batch.run(Budget(remaining=10_000, cap=10_000)))
    await asyncio.wait_for(asked.wait(), 10)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    folded = batch.receipts("Stopped.")
    assert folded is not None and not (tmp_path / "a.txt").exists()
    assert [(i.status, i.effect_status) for i in folded.items] == [("cancelled", "none")]
    assert folded.messages[0].content == "Stopped. The call never started."
    assert [e["decision"] for e in sink.of("approval/resolved")] == ["cancelled"]
