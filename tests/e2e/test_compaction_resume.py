"""A compacted session in a real daemon, resumed by another daemon process: the editor gets
the whole history with a marker where compaction happened, and the model the compacted view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import write_config
from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel
from tests.turnkit import SUMMARY, Brain, files


def turn(d: RawDaemon, sid: str, prompt: str) -> dict[str, Any]:
    tid = d.result("turn/start", {"sessionId": sid,
                                  "input": [{"type": "text", "text": prompt}]})["turnId"]
    done = d.wait_for("turn/completed", lambda e: e["turnId"] == tid)
    assert done["status"] == "completed", done
    return done


def test_a_resumed_daemon_sends_the_compacted_view_and_shows_the_whole_history(
        env: dict[str, str], model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    write_config(isolated_home, "[session]\nkeep_recent_turns = 1\n")
    brain = Brain()
    model.default = brain
    files(tmp_path, 4)
    first = RawDaemon(env)
    try:
        first.initialize()
        sid = first.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        for n in (1, 2, 3):
            turn(first, sid, f"read f{n}.txt")
        answer = first.result("session/compact", {"sessionId": sid}, timeout=30)
        event = first.wait_for("session/compacted")
        assert answer["status"] == "compacted" and answer["text"] == event["text"]
        assert event["trigger"] == "manual" and event["messages"] == 8  # two turns of four
    finally:
        assert first.close() == 0

    second = RawDaemon(env)
    try:
        second.initialize()
        items = second.result("session/resume", {"sessionId": sid})["items"]
        users = [i["text"] for i in items if i["type"] == "userMessage"]
        assert users == ["read f1.txt", "read f2.txt", "read f3.txt"]  # the whole history
        marks = [i for i in items if i["type"] == "notice" and i["kind"] == "compacted"]
        assert len(marks) == 1 and marks[0]["detail"] == SUMMARY
        assert marks[0]["text"] == event["text"] and items[-1] == marks[0]  # after turn 3
        calls = [i for i in items if i["type"] == "toolCall"]
        assert len(calls) == 3 and "word1" in calls[0]["output"]

        turn(second, sid, "read f4.txt")
        sent = next(r for r in model.requests if r.get("tools")
                    and "read f4.txt" in json.dumps(r))["messages"]
        assert sent[1]["content"].startswith("Context summary, written by turnstoned")
        assert SUMMARY in sent[1]["content"] and "read f3.txt" in sent[1]["content"]
        assert "word1" not in json.dumps(sent) and "word2" not in json.dumps(sent)
        assert "word3" in json.dumps(sent)  # the kept turn, word for word
        assert model.rejected == []
    finally:
        assert second.close() == 0
