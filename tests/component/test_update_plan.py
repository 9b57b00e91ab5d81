"""update_plan: the model's checklist reaches the editor, is kept with the session, and
turnstoned chat prints it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned.core.engine import Engine


def plan_call(call_id: str, *steps: tuple[str, str], explanation: str | None = None) -> str:
    args: dict[str, object] = {"steps": [{"step": s, "status": st} for s, st in steps]}
    if explanation:
        args["explanation"] = explanation
    return json.dumps(args)


async def test_the_plan_ticks_off_and_is_kept_with_the_session(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(
        tool_calls([("p1", "update_plan", plan_call("p1", ("read", "in_progress"),
                                                    ("fix", "pending"), ("test", "pending")))]),
        tool_calls([("p2", "update_plan", plan_call("p2", ("read", "done"), ("fix", "in_progress"),
                                                    ("test", "in_progress"),
                                                    explanation="found the bug"))]),
        text("done"))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "fix it")
    plans = sink.of("plan/updated")
    assert [[(s["step"], s["status"]) for s in e["steps"]] for e in plans] == [
        [("read", "in_progress"), ("fix", "pending"), ("test", "pending")],
        [("read", "done"), ("fix", "in_progress"), ("test", "pending")]]
    assert plans[1]["explanation"] == "found the bug" and plans[1]["turnId"] == done["turnId"]
    told = tool_messages(model.requests[2])[-1]["content"]
    assert told.startswith("Plan updated: 1 of 3 steps done") and "only one step" in told
    assert [s.status for s in engine.resume(sid).plan()] == ["done", "in_progress", "pending"]
    assert len(sink.approvals) == 0


def test_turnstoned_chat_prints_the_plan(model: ScriptedModel, isolated_home: Path,
                                         tmp_path: Path) -> None:
    model.push(tool_calls([("p1", "update_plan", plan_call("p1", ("look", "done"),
                                                           ("change", "in_progress")))]),
               text("ok"))
    env = {**os.environ, "TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted"}
    out = subprocess.run([sys.executable, "-m", "turnstoned", "chat", "--cwd", str(tmp_path),
                          "go"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "plan:\n  [x] look\n  [>] change" in out.stderr
