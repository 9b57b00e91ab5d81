"""kill -9 of a real daemon process, then resume in a new one: nothing accepted is lost,
and the history it resumes is one a strict model server accepts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, hang, text, tool_calls


@contextlib.contextmanager
def daemon(env: dict[str, str]) -> Iterator[RawDaemon]:
    d = RawDaemon(env)
    try:
        d.initialize()
        yield d
    finally:
        d.close()


def kill_9(d: RawDaemon) -> None:
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(5)


def start_turn(d: RawDaemon, sid: str, prompt: str) -> dict[str, Any]:
    return d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": prompt}]})


def _kill_recorded(pidfile: Path) -> None:
    """The command the killed daemon left running (its own cleanup is not tested here)."""
    with contextlib.suppress(ValueError, OSError):
        os.killpg(int(pidfile.read_text()), signal.SIGKILL)


def test_kill_9_during_a_reused_call_id_leaves_no_call_without_a_result(
        env: dict[str, str], model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("file contents\n")
    pidfile = tmp_path / "pid"
    model.push(tool_calls([("call_0", "read_file", '{"path": "f.txt"}')]),
               tool_calls([("call_0", "bash", json.dumps(
                   {"command": f"echo $$ > {pidfile}; echo started; sleep 30"}))]))
    first = RawDaemon(env)
    try:
        first.initialize()
        sid = first.result("session/start", {"cwd": str(tmp_path),
                                             "skipPermissions": True})["sessionId"]
        start_turn(first, sid, "read, then run")
        first.wait_for("item/toolCall/outputDelta", lambda e: "started" in e["chunk"])
        kill_9(first)
    finally:
        _kill_recorded(pidfile)
        first.close()

    model.push(text("Picked up after the crash."))
    with daemon(env) as second:
        items = second.result("session/resume", {"sessionId": sid})["items"]
        calls = [i for i in items if i["type"] == "toolCall"]
        assert [(c["tool"], c["status"]) for c in calls] == [("read_file", "completed"),
                                                             ("bash", "cancelled")]
        assert "file contents" in calls[0]["output"] and calls[1]["effectStatus"] == "unknown"
        tid = start_turn(second, sid, "what happened?")["turnId"]
        done = second.wait_for("turn/completed", lambda e: e["turnId"] == tid)
        assert done["status"] == "completed", done
        assert model.rejected == []
        sent = model.requests[-1]["messages"]
        assert [x["tool_call_id"] for x in sent if x["role"] == "tool"] == ["call_0", "call_0"]


def test_kill_9_before_the_seam_keeps_queued_input(env: dict[str, str], model: ScriptedModel,
                                                   tmp_path: Path) -> None:
    model.push(hang(30, after_text="Thinking it over"))
    first = RawDaemon(env)
    try:
        first.initialize()
        sid = first.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = start_turn(first, sid, "first question")["turnId"]
        first.wait_for("item/agentMessage/delta")
        queued = start_turn(first, sid, "and a follow-up")
        assert queued == {"turnId": tid, "queued": True}
        kill_9(first)
    finally:
        first.close()

    model.push(text("Both answered."))
    with daemon(env) as second:
        items = second.result("session/resume", {"sessionId": sid})["items"]
        waiting = [i for i in items if i["type"] == "userMessage" and i.get("queued")]
        assert [i["text"] for i in waiting] == ["and a follow-up"]
        tid = start_turn(second, sid, "go on")["turnId"]
        assert second.wait_for("turn/completed", lambda e: e["turnId"] == tid)["status"] == "completed"
        asked = model.requests[-1]["messages"][-1]
        assert asked == {"role": "user", "content": "and a follow-up\n\ngo on"}
        after = second.result("session/resume", {"sessionId": sid})["items"]
        assert not [i for i in after if i.get("queued")]
        assert [i["text"] for i in after if i["type"] == "userMessage"][-1] == (
            "and a follow-up\n\ngo on")
    # folded once: a third daemon does not offer it again
    with daemon(env) as third:
        items = third.result("session/resume", {"sessionId": sid})["items"]
        assert not [i for i in items if i.get("queued")]


def test_queued_input_folded_at_the_seam_is_not_offered_again(
        env: dict[str, str], model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("slow answer", delay=0.2), text("second answer"))
    with daemon(env) as d:
        sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = start_turn(d, sid, "one")["turnId"]
        d.wait_for("item/agentMessage/delta")
        assert start_turn(d, sid, "two")["queued"] is True
        d.wait_for("turn/completed", lambda e: e["turnId"] == tid)  # "two" folded into it
    with daemon(env) as again:
        items = again.result("session/resume", {"sessionId": sid})["items"]
        assert [i["text"] for i in items if i["type"] == "userMessage"] == ["one", "two"]
        assert not [i for i in items if i.get("queued")]
