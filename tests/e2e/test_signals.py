"""Stop signals end a real daemon cleanly within two seconds, receipts written."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.fixture
def env(model: ScriptedModel, isolated_home: Path) -> dict[str, str]:
    return {"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-test", "TURNSTONED_MODEL": "scripted"}


def start(d: RawDaemon, cwd: Path) -> str:
    d.initialize()
    return str(d.result("session/start", {"cwd": str(cwd), "skipPermissions": True})["sessionId"])


def turn_start(d: RawDaemon, sid: str) -> str:
    return str(d.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": "go"}]})["turnId"])


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_after_a_bash_call_ends_the_daemon(env: dict[str, str], model: ScriptedModel,
                                                    tmp_path: Path, sig: signal.Signals) -> None:
    model.push(tool_calls([("b1", "bash", '{"command": "echo hi"}')]), text("done"))
    d = RawDaemon(env)
    sid = start(d, tmp_path)
    tid = turn_start(d, sid)
    assert d.wait_for("turn/completed", lambda p: p["turnId"] == tid)["status"] == "completed"
    os.kill(d.proc.pid, sig)
    assert d.proc.wait(timeout=2) == 0


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_running_turn_gets_its_receipts_on_a_signal(env: dict[str, str], model: ScriptedModel,
                                                      tmp_path: Path, sig: signal.Signals) -> None:
    pidfile = tmp_path / "pid"
    model.push(tool_calls([("s1", "bash", json.dumps({"command": f"echo $$ > {pidfile}; sleep 60"}))]))
    d = RawDaemon(env)
    sid = start(d, tmp_path)
    tid = turn_start(d, sid)
    d.wait_for("item/started", lambda p: p["item"]["type"] == "toolCall")
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(d.proc.pid, sig)
    assert d.proc.wait(timeout=2) == 0
    assert d.wait_for("turn/completed", lambda p: p["turnId"] == tid, 1)["status"] == "interrupted"

    again = RawDaemon(env)
    try:
        again.initialize()
        items = again.result("session/resume", {"sessionId": sid})["items"]
        call = next(i for i in items if i["type"] == "toolCall")
        assert call["status"] == "cancelled" and call["effectStatus"] == "unknown"
    finally:
        again.close()
