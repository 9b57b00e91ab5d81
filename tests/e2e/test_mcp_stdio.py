"""MCP through the real daemon: --mcp-config, catalog, a tool call, no process left behind."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"


def test_mcp_config_file_server_is_callable_and_stopped_on_exit(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"ev": {
        "command": sys.executable, "args": [str(SERVERS / "everything.py"), "--name", "ev"]}}}))
    env = {"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted"}
    d = RawDaemon(env, args=("--mcp-config", str(cfg), "--tool-search", "off"))
    d.initialize()
    deadline = time.monotonic() + 20
    servers: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        servers = d.result("mcpServer/list")["servers"]
        if servers and servers[0]["status"] == "connected":
            break
        time.sleep(0.1)
    assert servers[0]["name"] == "ev" and servers[0]["status"] == "connected"
    assert str(cfg) in str(servers[0]["origin"])
    model.push(tool_calls([("p1", "mcp__ev__pid", "{}")]), text("ok"))
    sid = d.result("session/start", {"cwd": str(tmp_path), "skipPermissions": True})["sessionId"]
    tid = d.result("turn/start", {"sessionId": sid, "input": [{"type": "text", "text": "pid"}]})["turnId"]
    d.wait_for("turn/completed", lambda p: p["turnId"] == tid)
    item = next(p["item"] for p in d.of("item/completed") if p["item"]["type"] == "toolCall")
    pid = int(item["output"].strip())
    tools = {t["name"]: t for t in d.result("tool/list", {"sessionId": sid})["tools"]}
    assert tools["mcp__ev__echo"]["source"] == "mcp" and tools["mcp__ev__echo"]["server"] == "ev"
    assert d.close() == 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"MCP server {pid} outlived the daemon")
