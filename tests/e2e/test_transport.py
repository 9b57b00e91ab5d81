"""The stdio transport of a real daemon: no frame kills it or leaves it deaf."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.e2e.rawrpc import RawDaemon


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
