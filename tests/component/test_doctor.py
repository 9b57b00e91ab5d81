"""`turnstoned doctor`: one line per check against real loopback servers, with the fix."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned.cli import doctor
from turnstoned.cli.doctor import Doctor, Line

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nothing about the model in the environment, as on a fresh machine."""
    for name in ("TURNSTONED_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield


def check(ports: list[tuple[str, int]] | None = None, cwd: Path | None = None,
          tool_call: bool = False) -> dict[str, Line]:
    """Run the doctor; its lines by the first word of what they check."""
    d = Doctor(tool_call=tool_call, local_servers=ports or [], cwd=cwd)
    return {line.what.split(":")[0].split(" (")[0]: line for line in d.run()}


def test_a_configured_model_that_is_listed(model: ScriptedModel, tmp_path: Path,
                                           isolated_home: Path) -> None:
    (isolated_home / "config" / "config.toml").unlink()  # configured by the environment only
    lines = check(cwd=tmp_path)
    assert lines["model"].status == "OK" and "scripted is listed" in lines["model"].what
    assert lines["config"].status == "OK" and "no file" in lines["config"].what
    assert lines["data directory"].status == "OK"
    assert lines["MCP servers"].status == "OK"
    assert "tool call" not in lines  # a real request to the model only when asked


def test_a_model_the_server_does_not_list(model: ScriptedModel, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNSTONED_MODEL", "qwen-nonexistent")
    line = check(cwd=tmp_path)["model"]
    assert line.status == "FAIL" and "does not list qwen-nonexistent" in line.what
    assert "scripted" in line.what and "TURNSTONED_MODEL" in line.fix


def test_a_server_that_is_not_there(closed_port: int, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch, bare_env: None) -> None:
    monkeypatch.setenv("TURNSTONED_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    line = check(cwd=tmp_path)["model server"]
    assert line.status == "FAIL" and "Cannot reach" in line.what
    assert f"127.0.0.1:{closed_port}" in line.fix and "OPENAI_BASE_URL" in line.fix


def test_nothing_configured_finds_a_local_server_and_gives_the_config(
        bare_env: None, closed_port: int, isolated_home: Path, tmp_path: Path) -> None:
    with ScriptedModel() as local:
        ports = [("llama.cpp", closed_port), ("Ollama", local.port)]
        line = check(ports, cwd=tmp_path)["model"]
        assert line.status == "FAIL" and "none is configured" in line.what
        assert f"found Ollama at http://127.0.0.1:{local.port}/v1 serving scripted" in line.what
        suggested = line.fix.split(":\n", 1)[1].split("\n(or", 1)[0]
        write_config(isolated_home, suggested)  # exactly what it says to put there
        after = check(ports, cwd=tmp_path)["model"]
        assert after.status == "OK" and "scripted is listed" in after.what


def test_nothing_configured_and_nothing_running(bare_env: None, closed_port: int,
                                                tmp_path: Path) -> None:
    line = check([("Ollama", closed_port)], cwd=tmp_path)["model"]
    assert line.status == "FAIL" and f"Ollama {closed_port}" in line.what
    assert "[model]" in line.fix and "OPENAI_API_KEY" in line.fix


def test_the_local_probe_touches_only_the_ports_it_is_given(closed_port: int) -> None:
    seen = doctor.Doctor(local_servers=[("vLLM", closed_port)]).local()
    assert seen == []
    assert [p for _, p in doctor.LOCAL_SERVERS] == [11434, 8080, 8000, 1234]


def test_an_invalid_config_names_the_key(isolated_home: Path, tmp_path: Path) -> None:
    path = write_config(isolated_home, "[tools]\ntimeout = 'soon'\n")
    line = check(cwd=tmp_path)["config"]
    assert line.status == "FAIL" and "tools.timeout" in line.what
    assert str(path) in line.fix


def test_the_tool_call_round_trip(model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("c1", "ping", '{"word": "pong"}')]))
    ok = check(cwd=tmp_path, tool_call=True)["tool call"]
    assert ok.status == "OK" and 'ping({"word": "pong"})' in ok.what
    assert model.requests[-1]["tools"][0]["function"]["name"] == "ping"
    model.push(text("I would rather chat"))
    bad = check(cwd=tmp_path, tool_call=True)["tool call"]
    assert bad.status == "FAIL" and "without calling the tool" in bad.what
    assert "--jinja" in bad.fix
    model.push(tool_calls([("c2", "pong", "{}")]))
    wrong = check(cwd=tmp_path, tool_call=True)["tool call"]
    assert wrong.status == "FAIL" and "called 'pong', not ping" in wrong.what  # named, no SDK repr
    model.push(text('```json\n{"name": "ping", "arguments": {"word": "pong"}}\n```'))
    written = check(cwd=tmp_path, tool_call=True)["tool call"]
    assert written.status == "OK" and "written as text, not as a native call" in written.what


def test_mcp_servers_are_started_and_reported(model: ScriptedModel, isolated_home: Path,
                                              tmp_path: Path) -> None:
    write_config(isolated_home, (
        f'[mcp.servers.ev]\ncommand = "{sys.executable}"\n'
        f'args = ["{SERVERS / "everything.py"}", "--name", "ev"]\n'
        '[mcp.servers.broken]\ncommand = "/nonexistent/mcp-server"\n'))
    lines = check(cwd=tmp_path)
    assert lines["MCP server ev"].status == "OK" and "connected" in lines["MCP server ev"].what
    broken = lines["MCP server broken"]
    assert broken.status == "FAIL" and "config" in broken.fix


def test_a_project_config_is_reported_not_started(model: ScriptedModel, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    server = {"command": "sh", "args": ["-c", f"touch {marker}"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": server}}))
    line = check(cwd=tmp_path)["project MCP config " + str(tmp_path / ".mcp.json")]
    assert line.status == "OK" and "not trusted yet" in line.what
    assert not marker.exists()


def test_ripgrep_missing_is_a_warning(model: ScriptedModel, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    line = check(cwd=tmp_path)["ripgrep"]
    assert line.status == "WARN" and "apt install ripgrep" in line.fix


def test_a_data_dir_that_cannot_be_written(model: ScriptedModel, isolated_home: Path,
                                           tmp_path: Path) -> None:
    (isolated_home / "data").write_text("a file where the folder should be")
    line = check(cwd=tmp_path)["data directory"]
    assert line.status == "FAIL" and "TURNSTONED_HOME" in line.fix


def test_a_runtime_dir_with_loose_permissions(model: ScriptedModel, isolated_home: Path,
                                              tmp_path: Path) -> None:
    (isolated_home / "run").mkdir(mode=0o777)
    os.chmod(isolated_home / "run", 0o777)
    line = check(cwd=tmp_path)["resident daemon"]
    assert line.status == "FAIL" and "0777" in line.what


def test_the_command_exits_non_zero_on_a_failure(isolated_home: Path, tmp_path: Path) -> None:
    write_config(isolated_home, "[model]\nname = 1\n")
    out = subprocess.run([sys.executable, "-m", "turnstoned", "doctor"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, check=False)
    assert out.returncode == 1
    assert out.stdout.startswith("FAIL  config:") and "fix: edit" in out.stdout


def test_the_command_passes_on_a_good_setup(model: ScriptedModel, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    out = subprocess.run([sys.executable, "-m", "turnstoned", "doctor"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, check=False)
    assert "FAIL" not in out.stdout, out.stdout
    assert out.returncode == 0
    assert out.stdout.splitlines()[0].startswith("OK    config:")


def test_the_sandbox_is_reported(model: ScriptedModel, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from turnstoned import sandbox

    line = check(cwd=tmp_path)["sandbox"]
    if sandbox.status().available:
        assert line.status == "OK" and "Landlock ABI" in line.what
    monkeypatch.setenv("TURNSTONED_SANDBOX", "off")
    off = check(cwd=tmp_path)["sandbox"]
    assert off.status == "WARN" and "commands ask before they run" in off.what
