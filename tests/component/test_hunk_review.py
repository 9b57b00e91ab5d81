"""Per-hunk review: the user answers a file change with its final text; exactly that is written
and the model is told which of its hunks were kept, dropped or changed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.component.test_edited_arguments import edit
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned.core.engine import Engine

OLD = "".join(f"line {i}\n" for i in range(1, 21))
READ = tool_calls([("r1", "read_file", json.dumps({"path": "f.txt"}))])  # edit_file reads first


def two_hunks() -> tuple[str, str]:
    """An edit_file call with two hunks (lines 2 and 15) and the text it proposes."""
    proposed = OLD.replace("line 2\n", "line two\n").replace("line 15\n", "line fifteen\n")
    call = json.dumps({"path": "f.txt", "edits": [
        {"old_string": "line 2\n", "new_string": "line two\n"},
        {"old_string": "line 15\n", "new_string": "line fifteen\n"}]})
    return call, proposed


async def test_one_of_two_hunks_dropped_writes_only_the_other_and_the_model_knows(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(OLD)
    call, _proposed = two_hunks()
    final = OLD.replace("line 15\n", "line fifteen\n")  # the first hunk reverted in the diff
    model.push(READ, tool_calls([("e1", "edit_file", call)]), text("ok"))
    sink.answers.append(edit({"path": "f.txt", "content": final}))
    await run(engine, sink, start(engine, tmp_path), "rename two lines")

    assert (tmp_path / "f.txt").read_text() == final
    assert len(sink.approvals) == 1  # the user's own text is not asked about again
    told = tool_messages(model.requests[2])[-1]["content"]
    assert "1 written as you proposed: line 15" in told
    assert "1 dropped by the user" in told and ": line 2." in told
    assert "-line two\n+line 2" in told  # the exact difference from the proposal
    assert "line 7" not in told  # not the whole file: only what differs
    item = completed_tools(sink)[-1]
    assert item["status"] == "completed" and json.loads(item["originalArguments"]) == json.loads(call)


async def test_a_hunk_the_user_rewrote_is_reported_changed(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(OLD)
    model.push(tool_calls([("w1", "write_file", json.dumps(
        {"path": "f.txt", "content": OLD.replace("line 9\n", "line nine\n")}))]), text("ok"))
    final = OLD.replace("line 9\n", "line NINE (mine)\n")
    sink.answers.append(edit({"path": "f.txt", "content": final}))
    await run(engine, sink, start(engine, tmp_path), "spell it out")

    assert (tmp_path / "f.txt").read_text() == final
    told = tool_messages(model.requests[1])[0]["content"]
    assert "1 changed by the user (keep the user's wording): line 9." in told
    assert "+line NINE (mine)" in told


async def test_final_text_outside_the_workspace_is_asked_about_again(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text(OLD)
    call, _ = two_hunks()
    model.push(READ, tool_calls([("e1", "edit_file", call)]), text("ok"))
    from turnstoned import protocol as p
    sink.answers += [edit({"path": str(tmp_path / "other.txt"), "content": "x\n"}),
                     p.ApprovalResponse(decision="deny")]
    await run(engine, sink, start(engine, ws), "edit")
    assert len(sink.approvals) == 2 and not (tmp_path / "other.txt").exists()
    assert (ws / "f.txt").read_text() == OLD
