"""daemon/health with ``probe``: whether the model server answers, asked of a real one."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel
from turnstoned.llm import discovery


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_probe_reports_a_server_that_answers(env: dict[str, str], model: ScriptedModel) -> None:
    d = RawDaemon(env)
    try:
        d.initialize()
        plain = d.result("daemon/health")
        # Without a probe: the server as configured, not asked.
        assert plain["modelReachable"] is None and plain["modelUrl"] == model.base_url
        health = d.result("daemon/health", {"probe": True})
        assert health["model"] == "scripted"
        assert health["modelReachable"] is True and health["modelError"] is None
        assert health["modelUrl"] == model.base_url.rstrip("/")
    finally:
        d.close()


def test_a_probe_names_a_server_that_cannot_be_reached(isolated_home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": url,
                   "OPENAI_API_KEY": "sk-test", "TURNSTONED_MODEL": "m"})
    try:
        d.initialize()
        health = d.result("daemon/health", {"probe": True})
        assert health["model"] == "m" and health["modelReachable"] is False
        assert health["modelUrl"] == url
        assert "Cannot reach the model server" in health["modelError"]
        assert url in health["modelError"]
    finally:
        d.close()


def test_a_probe_without_a_model_asks_nothing(isolated_home: Path) -> None:
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home)})
    try:
        d.initialize()
        health = d.result("daemon/health", {"probe": True})
        assert health["model"] is None and health["modelReachable"] is None
    finally:
        d.close()


class _Refuses(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"error": {"message": "invalid api key", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_answers_with_an_error_was_reached(refusing_server: str) -> None:
    listing = discovery.list_models(refusing_server, "sk-wrong")
    assert listing.reached and listing.ids == [] and listing.base_url == refusing_server
    problem = listing.problem() or ""
    assert "refused the credentials" in problem and "invalid api key" in problem


def test_a_closed_port_is_not_reached_within_the_timeout() -> None:
    listing = discovery.list_models(f"http://127.0.0.1:{closed_port()}/v1", "k", timeout=2.0)
    assert not listing.reached and listing.ids == [] and listing.error is not None
