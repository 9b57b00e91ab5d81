"""A first run: only OPENAI_BASE_URL set, a model server that serves one model."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text


def test_the_only_listed_model_is_used(model: ScriptedModel, isolated_home: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TURNSTONED_MODEL")
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    try:
        d.initialize()
        assert d.result("daemon/health")["model"] == "scripted"
        model.push(text("hello"))
        sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = d.result("turn/start", {"sessionId": sid,
                                      "input": [{"type": "text", "text": "hi"}]})["turnId"]
        done = d.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert done["status"] == "completed", done
        assert model.requests[-1]["model"] == "scripted"
    finally:
        d.close()
    assert any("using scripted" in line for line in d.stderr_lines), d.stderr_lines


def test_a_first_turn_does_not_race_the_discovery(model: ScriptedModel, isolated_home: Path,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TURNSTONED_MODEL")
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    try:
        d.initialize()
        model.push(text("first"))
        sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = d.result("turn/start", {"sessionId": sid,
                                      "input": [{"type": "text", "text": "hi"}]})["turnId"]
        assert d.wait_for("turn/completed", lambda p: p["turnId"] == tid)["status"] == "completed"
    finally:
        d.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_named(isolated_home: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": url,
                   "TURNSTONED_MODEL": "m"})
    try:
        d.initialize()
        sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = d.result("turn/start", {"sessionId": sid,
                                      "input": [{"type": "text", "text": "hi"}]})["turnId"]
        done = d.wait_for("turn/completed", lambda p: p["turnId"] == tid, 20)
        assert done["status"] == "failed" and done["error"]["kind"] == "upstreamUnavailable"
        assert url in done["error"]["message"]
    finally:
        d.close()


def test_a_missing_config_file_named_by_the_environment_is_reported(isolated_home: Path,
                                                                    tmp_path: Path) -> None:
    missing = tmp_path / "typo.toml"
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home), "TURNSTONED_CONFIG": str(missing)})
    try:
        d.initialize()
        health = d.result("daemon/health")
        assert str(missing) in (health["configError"] or "")
        answer = d.request("session/start", {"cwd": str(tmp_path)})
        assert answer["error"]["data"]["kind"] == "configError"
        shown = d.wait_for("window/showMessage", timeout=5)
        assert str(missing) in shown["message"] and shown["type"] == 1
    finally:
        d.close()
