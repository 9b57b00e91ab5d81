"""A cloned repository's .mcp.json through the real daemon: asked about, never run unasked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text

EVERYTHING = Path(__file__).resolve().parent.parent / "mcp_servers" / "everything.py"
SECRET = "e2e-secret-never-on-the-wire"


@pytest.fixture
def env(isolated_home: Path) -> dict[str, str]:
    return {"TURNSTONED_HOME": str(isolated_home), "TS_SECRET": SECRET}


def hostile_repo(root: Path, markers: Path) -> Path:
    """A repository whose .mcp.json would start a process (it records its pid in ``markers``)
    and hand it the user's secret."""
    root.mkdir()
    markers.mkdir()
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": sys.executable, "args": [str(EVERYTHING), "--name", "proj"],
        "env": {"MARKER_DIR": str(markers), "TOKEN": "${TS_SECRET}"}}}}))
    return root


def starts(markers: Path) -> list[str]:
    file = markers / "starts"
    return file.read_text().split() if file.exists() else []


def servers(d: RawDaemon) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in d.result("mcpServer/list")["servers"]}


def test_a_hostile_repo_runs_nothing_until_trusted(env: dict[str, str], tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path / "repo", tmp_path / "markers")
    own = tmp_path / "own"
    own.mkdir()
    user_file = tmp_path / "mine.json"
    user_file.write_text(json.dumps({"mcpServers": {"mine": {
        "command": sys.executable, "args": [str(EVERYTHING), "--name", "mine"],
        "env": {"MARKER_DIR": str(own)}}}}))
    d = RawDaemon(env, args=("--mcp-config", str(user_file), "--tool-search", "off"))
    try:
        d.initialize()
        d.result("session/start", {"cwd": str(repo)})
        d.wait_for("mcpServer/statusChanged",
                   lambda s: s["name"] == "mine" and s["status"] == "connected", timeout=30)
        d.wait_for("mcpServer/statusChanged", lambda s: s["name"] == "proj"
                   and s["status"] in ("untrusted", "connected", "failed"), timeout=30)
        assert starts(tmp_path / "markers") == [], "the repository's command ran unasked"
        assert starts(own), "the user's own server runs"
        question = d.wait_for("mcpServer/requestTrust")  # answered "approve": not a trust word
        listed = servers(d)
        assert listed["proj"]["status"] == "untrusted" and listed["mine"]["status"] == "connected"
        (proj,) = question["servers"]
        assert proj["command"] == sys.executable and proj["env"] == ["MARKER_DIR", "TOKEN"]
        assert proj["variables"] == ["TS_SECRET"] and question["hash"]
        tools = {t["name"] for t in d.result("tool/list")["tools"]}
        assert "mcp__mine__echo" in tools and "mcp__proj__echo" not in tools

        trusted = d.result("mcpServer/trust", {"workspace": str(repo), "trusted": True,
                                               "hash": question["hash"]}, timeout=40)
        assert [s["status"] for s in trusted["servers"]] == ["connected"]
        assert "mcp__proj__echo" in {t["name"] for t in d.result("tool/list")["tools"]}
        assert len(starts(tmp_path / "markers")) == 1
        assert SECRET.encode() not in d.raw_stdout
    finally:
        d.close()


def test_deny_and_trust_survive_a_daemon_restart(env: dict[str, str], tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path / "repo", markers)

    def deny(msg: dict[str, Any]) -> Any:
        return {"decision": "deny"} if msg["method"] == "mcpServer/requestTrust" else None

    first = RawDaemon(env)
    try:
        first.on_request = deny
        first.initialize()
        first.result("session/start", {"cwd": str(repo)})
        first.wait_for("mcpServer/requestTrust")
        first.wait_for("mcpServer/statusChanged", lambda s: "denied" in (s.get("error") or ""))
    finally:
        first.close()

    second = RawDaemon(env)
    try:
        second.initialize()
        second.result("session/start", {"cwd": str(repo)})
        listed = servers(second)
        assert listed["proj"]["status"] == "untrusted" and "denied" in listed["proj"]["error"]
        assert second.of("mcpServer/requestTrust") == []
        second.result("mcpServer/trust", {"configPath": str(repo / ".mcp.json"), "trusted": True},
                      timeout=40)
    finally:
        second.close()
    assert len(starts(markers)) == 1

    third = RawDaemon(env)
    try:
        third.initialize()
        third.result("session/start", {"cwd": str(repo)})
        third.wait_for("mcpServer/statusChanged",
                       lambda s: s["name"] == "proj" and s["status"] == "connected", timeout=30)
        assert third.of("mcpServer/requestTrust") == []
        assert len(starts(markers)) == 2
    finally:
        third.close()


def chat(args: list[str], model: ScriptedModel,
         env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk",
            "TURNSTONED_MODEL": "scripted"}
    return subprocess.run([sys.executable, "-m", "turnstoned", "--tool-search", "off", "chat",
                           *args], check=False, capture_output=True, text=True, env=full,
                          timeout=90)


def model_tools(model: ScriptedModel) -> set[str]:
    return {t["function"]["name"] for t in model.requests[0]["tools"]}


def test_headless_chat_leaves_the_repo_untrusted_and_says_how_to_trust(
        model: ScriptedModel, env: dict[str, str], tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path / "repo", markers)
    model.push(text("hello"))
    out = chat(["--cwd", str(repo), "hi"], model, env)
    assert out.returncode == 0, out.stderr
    assert "--trust-mcp" in out.stderr and f"proj: {sys.executable}" in out.stderr
    assert not any(name.startswith("mcp__proj__") for name in model_tools(model))
    assert starts(markers) == [] and SECRET not in out.stderr + out.stdout


def test_headless_chat_trusts_with_a_flag(model: ScriptedModel, env: dict[str, str],
                                          tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path / "repo", markers)
    model.push(text("hello"))
    out = chat(["--cwd", str(repo), "--trust-mcp", "hi"], model, env)
    assert out.returncode == 0, out.stderr
    assert f"trusted {repo / '.mcp.json'}: proj connected" in out.stderr
    assert "mcp__proj__echo" in model_tools(model)  # the servers were up before the turn
    assert len(starts(markers)) == 1
