"""The stdio transport of a real daemon: no frame kills it or leaves it deaf."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.e2e.rawrpc import ErrorAnswer, RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls


@pytest.fixture
def daemon(isolated_home: Path) -> Iterator[RawDaemon]:
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    d.initialize()
    yield d
    d.close()


def health_body(msg_id: Any, text: str = "") -> bytes:
    msg = {"jsonrpc": "2.0", "id": msg_id, "method": "daemon/health"}
    if text:
        msg["params"] = {"note": text}
    return json.dumps(msg, ensure_ascii=False).encode()


def answer(d: RawDaemon, msg_id: Any, timeout: float = 10) -> dict[str, Any]:
    return d.wait_response(msg_id, timeout)


def test_a_huge_content_length_is_answered_and_serving_goes_on(daemon: RawDaemon) -> None:
    daemon.write(b"Content-Length: 100000000000000000000\r\n\r\n" + health_body("huge"), framed=False)
    daemon.write(health_body("after"))
    err = answer(daemon, "huge")["error"]
    assert err["code"] == -32600 and err["data"]["kind"] == "invalidRequest"
    assert "result" in answer(daemon, "after")
    assert daemon.proc.poll() is None


def test_a_frame_over_the_configured_limit_is_skipped(isolated_home: Path) -> None:
    write_config(isolated_home, "[daemon]\nmax_frame_mib = 1\n")
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    try:
        d.initialize()
        d.result("daemon/health")  # the config is read by now
        big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "turn/start", "params": {
            "sessionId": "s", "input": [{"type": "text", "text": "x" * (3 << 20)}]}}).encode()
        d.write(big)
        d.write(health_body("next"))
        err = answer(d, "big")["error"]
        assert err["code"] == -32600 and "over the limit" in err["message"]
        assert "result" in answer(d, "next")
    finally:
        d.close()


HEADERS = [
    b"content-length: %d\r\n\r\n",
    b"Content-Length:%d\r\n\r\n",
    b"Content-Length: %d   \r\n\r\n",
    b"Content-Length: %d\n\n",
    b"CONTENT-LENGTH : %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
]


@pytest.mark.parametrize("header", HEADERS)
def test_header_variants_are_served(daemon: RawDaemon, header: bytes) -> None:
    body = health_body("v")
    daemon.write(header % len(body) + body, framed=False)
    assert "result" in answer(daemon, "v")


def test_a_length_counted_in_characters_is_recovered(daemon: RawDaemon) -> None:
    body = health_body("chars", text="naïve café ✓ 日本")
    daemon.write(b"Content-Length: %d\r\n\r\n" % len(body.decode()) + body, framed=False)
    assert "result" in answer(daemon, "chars")
    daemon.write(health_body("then"))
    assert "result" in answer(daemon, "then")


def test_garbage_between_frames_is_skipped(daemon: RawDaemon) -> None:
    daemon.write(b"\x00\xffnot a header\r\n\r\nContent-Length: oops\r\n\r\n{}", framed=False)
    daemon.write(health_body("g"))
    assert "result" in answer(daemon, "g")
    daemon.write(b"{broken")
    err = answer(daemon, None)["error"]
    assert err["code"] == -32700 and err["data"]["kind"] == "parseError"
    daemon.write(health_body("g2"))
    assert "result" in answer(daemon, "g2")


def assert_clean(reply: dict[str, Any]) -> None:
    """An error with a stable kind and nothing else in data: never a traceback."""
    assert set(reply["error"]["data"]) == {"kind"}, reply
    assert "Traceback" not in json.dumps(reply) and 'File "' not in json.dumps(reply)


@pytest.mark.parametrize(("msg", "answer_id"), [
    ({"jsonrpc": "2.0", "id": [1, 2], "method": "daemon/health"}, None),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "daemon/health"}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "daemon/health"}, None),
    ({"jsonrpc": "2.0", "id": None, "method": "daemon/health"}, None),
    ({"jsonrpc": "2.0", "id": "m1", "method": 42}, "m1"),
    ({"jsonrpc": "2.0", "id": "m2", "method": None}, "m2"),
    ({"jsonrpc": "1.0", "id": "m3", "method": "daemon/health"}, "m3"),
    ({"id": "m4", "method": "daemon/health"}, "m4"),
    ({"jsonrpc": "2.0", "id": "m5"}, "m5"),
    ([{"jsonrpc": "2.0", "id": "m6", "method": "daemon/health"}], None),
    ("just a string", None),
])
def test_invalid_envelopes_get_32600(daemon: RawDaemon, msg: Any, answer_id: Any) -> None:
    daemon.send(msg)
    reply = answer(daemon, answer_id)
    assert reply["error"]["code"] == -32600 and reply["error"]["data"]["kind"] == "invalidRequest"
    assert_clean(reply)
    assert "result" in daemon.request("daemon/health")


def test_params_that_do_not_fit_an_lsp_method_are_32602(daemon: RawDaemon) -> None:
    reply = daemon.request("initialize", {"processId": "not a number", "capabilities": 7})
    assert reply["error"]["code"] == -32602
    assert_clean(reply)


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("cwd", "/" + "a" * 5000, "longer than 4096 bytes"),
    ("cwd", "/tmp/a\u0000b", "NUL"),
    ("cwd", "relative/dir", "absolute path"),
    ("cwd", "file://elsewhere.example/tmp", "another host"),
    ("workspace", "/" + "w" * 5000, "longer than 4096 bytes"),
    ("workspace", "x\u0000", "NUL"),
    ("workspace", "not/absolute", "absolute path"),
])
def test_bad_directories_are_32602_naming_the_field(daemon: RawDaemon, tmp_path: Path, field: str,
                                                     value: str, problem: str) -> None:
    params = {"cwd": str(tmp_path), field: value}
    reply = daemon.request("session/start", params)
    err = reply["error"]
    assert err["code"] == -32602 and f"params.{field}" in err["message"] and problem in err["message"]
    assert_clean(reply)


def test_a_file_uri_is_taken_as_the_path_it_names(daemon: RawDaemon, tmp_path: Path) -> None:
    spaced = tmp_path / "my project"
    spaced.mkdir()
    uri = "file://" + str(spaced).replace(" ", "%20")
    sid = daemon.result("session/start", {"cwd": uri, "workspace": uri})["sessionId"]
    info = next(s for s in daemon.result("session/list")["sessions"] if s["sessionId"] == sid)
    assert info["cwd"] == str(spaced)


def test_initialize_advertises_only_what_is_served(isolated_home: Path) -> None:
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    try:
        caps = d.initialize()["capabilities"]
        assert set(caps) == {"textDocumentSync", "experimental"}
        assert caps["textDocumentSync"] == {"openClose": False, "change": 0}
    finally:
        d.close()


@pytest.mark.parametrize("method", ["textDocument/completion", "workspace/executeCommand",
                                    "textDocument/hover", "workspace/symbol", "$/unknown"])
def test_lsp_requests_not_served_get_32601_with_kind(daemon: RawDaemon, method: str) -> None:
    reply = daemon.request(method, {"textDocument": {"uri": "file:///x"},
                                    "position": {"line": 0, "character": 0}, "command": "c"})
    assert reply["error"]["code"] == -32601 and reply["error"]["data"] == {"kind": "methodNotFound"}


def test_lsp_notifications_not_served_are_ignored_quietly(daemon: RawDaemon) -> None:
    for method in ("textDocument/didOpen", "textDocument/didChange", "textDocument/didClose",
                   "workspace/didChangeWorkspaceFolders", "$/setTrace", "$/progress"):
        daemon.send({"jsonrpc": "2.0", "method": method, "params": {
            "textDocument": {"uri": "file:///x", "languageId": "py", "version": 1, "text": "x"}}})
    assert "result" in daemon.request("daemon/health")
    assert not daemon.of("window/showMessage") and not daemon.of("window/logMessage")
    assert len(daemon._responses) == 0  # nothing answered the notifications


@pytest.mark.parametrize("reply", [None, {"decision": "maybe"}, {}, "approve",
                                   ErrorAnswer(-32603, "the dialog crashed")],
                         ids=["null", "unknown", "missing", "string", "error"])
def test_an_approval_answer_that_is_not_a_decision_is_a_deny(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path, reply: Any) -> None:
    model.push(tool_calls([("w1", "write_file", '{"path": "f.txt", "content": "x"}')]),
               text("ok"))
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    d.on_request = lambda msg: reply
    try:
        d.initialize()
        sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
        tid = d.result("turn/start", {"sessionId": sid,
                                      "input": [{"type": "text", "text": "go"}]})["turnId"]
        assert d.wait_for("turn/completed", lambda p: p["turnId"] == tid)["status"] == "completed"
        assert d.of("approval/resolved")[0]["decision"] == "deny"
        assert not (tmp_path / "f.txt").exists()
    finally:
        d.close()


def test_cancels_without_a_usable_id_are_ignored(daemon: RawDaemon) -> None:
    for params in ({"id": []}, {"id": {"a": 1}}, {"id": None}, {}, [], "x", None):
        daemon.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params})
    assert "result" in daemon.request("daemon/health")
    assert not [line for line in daemon.stderr_lines if "ERROR" in line or "Traceback" in line]
