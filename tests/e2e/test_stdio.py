"""`python -m turnstoned` over real stdio, driven by an independent raw JSON-RPC client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawrpc import DEFER, RawDaemon
from tests.fakes.model_server import ScriptedModel, hang, text, tool_calls
from turnstoned import protocol as p


@pytest.fixture
def daemon(env: dict[str, str]) -> Iterator[RawDaemon]:
    d = RawDaemon(env)
    yield d
    d.close()


def turn(d: RawDaemon, sid: str, prompt: str, timeout: float = 15) -> dict[str, Any]:
    tid = d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": prompt}]})["turnId"]
    return d.wait_for("turn/completed", lambda p: p["turnId"] == tid, timeout)


def test_initialize_announces_protocol(daemon: RawDaemon) -> None:
    result = daemon.initialize()
    assert result["serverInfo"]["name"] == "turnstoned"
    caps = result["capabilities"]["experimental"]["turnstoned"]
    assert caps["protocolVersion"] == 1 and "turn/start" in caps["methods"]


@pytest.mark.parametrize(("level", "frames_logged"), [("INFO", False), ("DEBUG", True)])
def test_frames_are_logged_only_at_debug(env: dict[str, str], level: str, frames_logged: bool) -> None:
    d = RawDaemon({**env, "TURNSTONED_LOG": level})
    try:
        d.initialize()
        d.result("session/list")
    finally:
        d.close()
    log = "".join(d.stderr_lines)
    assert ("session/list" in log) is frames_logged, log[-2000:]


def test_requests_before_initialize_are_refused(daemon: RawDaemon) -> None:
    answer = daemon.request("session/list")
    assert answer["error"]["code"] == -32002
    assert answer["error"]["data"]["kind"] == "serverNotInitialized"


def test_protocol_errors(daemon: RawDaemon) -> None:
    daemon.initialize()
    assert daemon.request("no/such/method")["error"]["code"] == -32601
    bad = daemon.request("session/start", {"kind": "wizard"})["error"]
    assert bad["code"] == -32602 and "params.kind" in bad["message"]
    missing = daemon.request("turn/start", {"sessionId": "s"})["error"]
    assert missing["code"] == -32602 and "input" in missing["message"]
    unknown = daemon.request("turn/start", {"sessionId": "nope", "input": [{"type": "text", "text": "x"}]})
    assert unknown["error"]["code"] == -32010 and unknown["error"]["data"]["kind"] == "sessionNotFound"
    assert "Traceback" not in json.dumps(unknown)


def test_garbage_on_stdin_does_not_kill_the_daemon(daemon: RawDaemon) -> None:
    daemon.initialize()
    daemon.write(b"this is not a frame\r\n", framed=False)
    daemon.write(b"{not json at all")
    daemon.write(b"[1, 2, 3]")
    daemon.write(b'{"jsonrpc": "2.0"}')
    daemon.write("\u00ff\u00fe".encode("latin-1"))
    health = daemon.result("daemon/health")
    assert health["protocolVersion"] == 1 and daemon.proc.poll() is None


def test_streams_text_and_tool_calls_with_approval(daemon: RawDaemon, model: ScriptedModel,
                                                   tmp_path: Path) -> None:
    daemon.initialize()
    # (a command that changes something: one that only reads would run unasked)
    model.push(tool_calls([("call-a", "bash", '{"command": "sh -c \\"echo streamed-line\\""}')]),
               text("All done: the command printed streamed-line."))
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    done = turn(daemon, sid, "run echo")
    assert done["status"] == "completed"
    approvals = [m for m in daemon.notifications if m["method"] == "item/tool/requestApproval"]
    assert len(approvals) == 1 and approvals[0]["params"]["items"][0]["tool"] == "bash"
    chunks = "".join(p["chunk"] for p in daemon.of("item/toolCall/outputDelta"))
    assert "streamed-line" in chunks
    text_out = "".join(p["delta"] for p in daemon.of("item/agentMessage/delta"))
    assert text_out == "All done: the command printed streamed-line."
    assert daemon.bad_frames == []


def test_sessions_and_history_survive_restart(env: dict[str, str], model: ScriptedModel,
                                              tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("persisted contents\n")
    model.push(tool_calls([("r1", "read_file", '{"path": "f.txt"}')]), text("It is persisted."))
    first = RawDaemon(env)
    first.initialize()
    sid = first.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    turn(first, sid, "read f.txt")
    assert first.close() == 0

    second = RawDaemon(env)
    second.initialize()
    sessions = second.result("session/list")["sessions"]
    assert [s["sessionId"] for s in sessions] == [sid] and sessions[0]["title"] == "read f.txt"
    items = second.result("session/resume", {"sessionId": sid})["items"]
    assert [i["type"] for i in items] == ["userMessage", "toolCall", "agentMessage"]
    assert "persisted contents" in items[1]["output"]
    model.push(text("Still here."))
    assert turn(second, sid, "again")["status"] == "completed"
    assert any(m["role"] == "tool" for m in model.requests[-1]["messages"])
    second.close()


def test_kill_9_loses_nothing_committed(env: dict[str, str], model: ScriptedModel,
                                        tmp_path: Path) -> None:
    model.push(tool_calls([("b1", "bash", '{"command": "echo before-crash"}')]), hang(30, after_text="mid"))
    d = RawDaemon(env)
    d.on_request = lambda msg: {"decision": "approve"}
    d.initialize()
    sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "go"}]})
    d.wait_for("item/agentMessage/delta")
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(5)

    again = RawDaemon(env)
    again.initialize()
    items = again.result("session/resume", {"sessionId": sid})["items"]
    tool = next(i for i in items if i["type"] == "toolCall")
    assert tool["status"] == "completed" and "before-crash" in tool["output"]
    again.close()


def test_interrupt_reports_within_two_seconds(daemon: RawDaemon, model: ScriptedModel,
                                              tmp_path: Path) -> None:
    daemon.initialize()
    pidfile = tmp_path / "pid"
    model.push(tool_calls([("s1", "bash", json.dumps({"command": f"echo $$ > {pidfile}; sleep 60"}))]))
    sid = daemon.result("session/start", {"cwd": str(tmp_path), "skipPermissions": True})["sessionId"]
    tid = daemon.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "x"}]})["turnId"]
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    t0 = time.monotonic()
    assert daemon.result("turn/interrupt", {"sessionId": sid}) == {}
    done = daemon.wait_for("turn/completed", lambda p: p["turnId"] == tid, timeout=2)
    assert done["status"] == "interrupted" and time.monotonic() - t0 < 2
    item = next(p["item"] for p in daemon.of("item/completed") if p["item"]["type"] == "toolCall")
    assert item["effectStatus"] == "unknown"
    time.sleep(0.3)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_startup_path_does_not_import_openai_or_mcp(isolated_home: Path) -> None:
    code = ("import sys; from turnstoned.daemon.server import create; "
            "create().holder.load(); "
            "print(sorted(m for m in ('openai', 'mcp', 'httpx2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TURNSTONED_HOME": str(isolated_home)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_config_error_is_reported_not_fatal(isolated_home: Path, env: dict[str, str]) -> None:
    cfg = isolated_home / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[tools]\ntimeout = 'soon'\n")
    d = RawDaemon(env)
    d.initialize()
    answer = d.request("session/start", {})
    assert answer["error"]["data"]["kind"] == "configError"
    assert "tools.timeout" in answer["error"]["message"] and str(cfg) in answer["error"]["message"]
    assert "tools.timeout" in d.result("daemon/health")["configError"]
    d.close()


def test_edit_guard_and_edit_through_the_daemon(daemon: RawDaemon, model: ScriptedModel,
                                                tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_bytes(b"x = 1\r\ny = 2\r\n")
    edit = json.dumps({"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"})
    model.push(tool_calls([("e0", "edit_file", edit)]),           # refused: not read yet
               tool_calls([("r1", "read_file", '{"path": "app.py"}')]),
               tool_calls([("e1", "edit_file", edit)]), text("edited"))
    daemon.initialize()
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    assert turn(daemon, sid, "change y")["status"] == "completed"
    e0, _, e1 = [p["item"] for p in daemon.of("item/completed") if p["item"]["type"] == "toolCall"]
    assert e0["isError"] and "must read_file" in e0["output"]
    assert e1["status"] == "completed"
    assert target.read_bytes() == b"x = 1\r\ny = 3\r\n"
    asked = [m["params"]["items"][0]["tool"] for m in daemon.notifications
             if m["method"] == "item/tool/requestApproval"]
    assert asked == ["edit_file"]  # the refused edit never asked; read_file never asks
    preview = next(m["params"]["items"][0]["preview"] for m in daemon.notifications
               if m["method"] == "item/tool/requestApproval")
    assert "-y = 2" in preview and "+y = 3" in preview


def test_file_change_is_read_while_pending_and_refused_after(daemon: RawDaemon, model: ScriptedModel,
                                                             tmp_path: Path) -> None:
    model.push(tool_calls([("w1", "write_file", '{"path": "n.txt", "content": "new\\n"}')]),
               text("written"))
    daemon.on_request = lambda msg: DEFER
    caps = daemon.initialize()["capabilities"]["experimental"]["turnstoned"]
    assert caps["protocolRevision"] == p.PROTOCOL_REVISION == daemon.result(
        "daemon/health")["protocolRevision"]
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    tid = daemon.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": "write"}]})["turnId"]
    asked = daemon.wait_for("item/tool/requestApproval")
    call_id = asked["items"][0]["callId"]
    change = daemon.result("fileChange/read", {"sessionId": sid, "callId": call_id})
    assert change == {"path": os.path.realpath(tmp_path / "n.txt"), "oldText": "",
                      "newText": "new\n"}
    request = next(m for m in daemon.notifications if m["method"] == "item/tool/requestApproval")
    daemon.send({"jsonrpc": "2.0", "id": request["id"], "result": {"decision": "approve"}})
    daemon.wait_for("turn/completed", lambda p: p["turnId"] == tid)
    late = daemon.request("fileChange/read", {"sessionId": sid, "callId": call_id})["error"]
    assert late["code"] == -32020 and late["data"]["kind"] == "fileChangeNotPending"
    assert "Traceback" not in json.dumps(late)


def test_shutdown_follows_the_lsp_lifecycle(daemon: RawDaemon, env: dict[str, str]) -> None:
    """`shutdown` before `initialize` is -32002; a second `shutdown`, even one sent before
    the first is answered, is -32600; neither leaks an internal error, and `exit` then
    ends the daemon cleanly."""
    early = daemon.request("shutdown")
    assert early["error"]["code"] == -32002
    daemon.initialize()
    daemon.result("session/start", {"cwd": env["TURNSTONED_HOME"]})
    daemon.send({"jsonrpc": "2.0", "id": 100, "method": "shutdown"})
    daemon.send({"jsonrpc": "2.0", "id": 101, "method": "shutdown"})
    first, second = daemon.wait_response(100), daemon.wait_response(101)
    assert "error" not in first and first["result"] is None
    assert second["error"]["code"] == -32600
    daemon.send({"jsonrpc": "2.0", "method": "exit"})
    assert daemon.proc.wait(10) == 0
    assert "Traceback" not in "".join(daemon.stderr_lines)


def test_session_list_takes_no_params_null_params_or_a_cwd(daemon: RawDaemon, tmp_path: Path) -> None:
    daemon.initialize()
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    for n, extra in enumerate([{}, {"params": None}, {"params": {}},
                               {"params": {"cwd": str(tmp_path)}}]):
        daemon.send({"jsonrpc": "2.0", "id": f"list-{n}", "method": "session/list", **extra})
        answer = daemon.wait_response(f"list-{n}")
        assert "error" not in answer, (extra, answer)
        assert sid in [s["sessionId"] for s in answer["result"]["sessions"]]
