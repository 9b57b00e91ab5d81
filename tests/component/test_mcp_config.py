"""MCP server configuration: the user's sources, precedence, name rules, bad entries as issues."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from turnstoned.mcp.config import ConfigIssue, ServerSpec, load_servers, parse_entries
from turnstoned.mcp.manager import MCPManager
from turnstoned.mcp.project import read_project


def write_json(path: Path, servers: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def by_name(specs: list[ServerSpec]) -> dict[str, ServerSpec]:
    return {s.name: s for s in specs}


def test_both_user_sources_are_merged_with_their_origins(tmp_path: Path) -> None:
    mcp_file = write_json(
        tmp_path / "servers.json", {"fromfile": {"command": "file-server", "args": ["-v"]}}
    )
    toml = {"fromtoml": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "1"}}}

    specs, issues = load_servers(toml, mcp_config_path=mcp_file)

    assert issues == []
    got = by_name(specs)
    assert list(got) == ["fromfile", "fromtoml"]
    assert got["fromfile"].origin == f"mcp-config:{mcp_file}"
    assert got["fromfile"].args == ["-v"]
    assert got["fromtoml"].origin == "config"
    assert got["fromtoml"].type == "http"
    assert got["fromtoml"].headers == {"X-A": "1"}


def test_config_toml_beats_the_json_file(tmp_path: Path) -> None:
    mcp_file = write_json(
        tmp_path / "m.json", {"a": {"command": "file-a"}, "b": {"command": "file-b"}}
    )
    toml = {"a": {"command": "toml-a"}}

    specs, issues = load_servers(toml, mcp_config_path=mcp_file)

    assert issues == []
    got = by_name(specs)
    assert got["a"].command == "toml-a" and got["a"].origin == "config"
    assert got["b"].command == "file-b"


def test_configured_names_win_over_a_project_file(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write_json(project / ".mcp.json", {"a": {"command": "project-a"}, "b": {"command": "project-b"}})
    specs, _ = load_servers({"a": {"command": "toml-a"}}, mcp_config_path=None)
    manager = MCPManager(specs)
    loaded = read_project(project)
    assert loaded is not None
    project_specs, _ = parse_entries(loaded.table, loaded.origin, project_dir=project)

    added = manager.replace_servers(loaded.origin, project_specs)

    assert added == ["b"]
    origins = {s.name: s.origin for s in manager.status()}
    assert origins == {"a": "config", "b": f"project:{project / '.mcp.json'}"}


def test_a_bad_winning_entry_disables_the_server_rather_than_falling_back(tmp_path: Path) -> None:
    mcp_file = write_json(tmp_path / "m.json", {"a": {"command": "file-a"}})

    specs, issues = load_servers(
        {"a": {"type": "stdio"}}, mcp_config_path=mcp_file
    )

    assert specs == []
    assert [(i.name, i.origin) for i in issues] == [("a", "config")]
    assert "'command'" in issues[0].message


def test_a_name_with_double_underscore_is_rejected_with_the_reason() -> None:
    specs, issues = load_servers(
        {"my__server": {"command": "x"}, "ok": {"command": "y"}},
        mcp_config_path=None,
    )

    assert [s.name for s in specs] == ["ok"]
    assert len(issues) == 1 and issues[0].name == "my__server"
    assert "'__'" in issues[0].message and "mcp__<server>__<tool>" in issues[0].message


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"type": "websocket", "url": "ws://x"}, "unknown type 'websocket'"),
        ({"type": "sse", "url": "http://x/sse"}, "SSE transport is not supported"),
        ({"args": ["x"]}, "'command' must be a non-empty string"),
        ({"command": ""}, "'command' must be a non-empty string"),
        ({"command": 42}, "'command' must be a non-empty string (got a number)"),
        ({"command": "x", "args": "--flag"}, "'args' must be a list of strings"),
        ({"command": "x", "env": ["A=1"]}, "'env' must be a table/object"),
        ({"command": "x", "env": {"A": {"nested": 1}}}, "'env.A' must be a string"),
        ({"command": "x", "cwd": 5}, "'cwd' must be a string"),
        ({"type": "http"}, "'url' must be a non-empty string"),
        ({"type": "http", "url": "ftp://host/mcp"}, "must start with http://"),
        ({"url": "http://h/mcp", "headers": "Bearer x"}, "'headers' must be a table/object"),
        ({"command": "x", "timeout": -1}, "'timeout' must be a positive number"),
        ({"command": "x", "enabled": "yes"}, "'enabled' and 'disabled' must be true or false"),
        ("just a string", "expected a table/object"),
        ({"command": "${TURNSTONED_TEST_UNSET_VAR}"}, "TURNSTONED_TEST_UNSET_VAR is not set"),
    ],
)
def test_a_bad_entry_becomes_an_issue_naming_the_server(entry: Any, fragment: str) -> None:
    specs, issues = load_servers(
        {"bad": entry, "good": {"command": "ok"}},
        mcp_config_path=None,
        environ={},
    )

    assert [s.name for s in specs] == ["good"]
    assert [i.name for i in issues] == ["bad"]
    assert fragment in issues[0].message
    assert issues[0].message.startswith("MCP server 'bad' (config): ")


def test_a_name_with_spaces_is_rejected() -> None:
    _, issues = load_servers(
        {"my server": {"command": "x"}}, mcp_config_path=None
    )
    assert "letters, digits" in issues[0].message


def test_an_invalid_json_file_is_one_file_level_issue_and_other_sources_still_load(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "m.json"
    broken.write_text('{"mcpServers": {"a": {"command": "x",}}}')

    specs, issues = load_servers({"t": {"command": "y"}}, mcp_config_path=broken)

    assert [s.name for s in specs] == ["t"]
    assert len(issues) == 1
    assert issues[0].name == "" and issues[0].origin == f"mcp-config:{broken}"
    assert "invalid JSON at line 1" in issues[0].message


@pytest.mark.parametrize(
    ("content", "fragment"),
    [('{"servers": {}}', "expected a top-level object"), ("[1, 2]", "expected a top-level object")],
)
def test_a_json_file_without_mcp_servers_is_an_issue(
    tmp_path: Path, content: str, fragment: str
) -> None:
    path = tmp_path / "m.json"
    path.write_text(content)
    _, issues = load_servers(None, mcp_config_path=path)
    assert fragment in issues[0].message


def test_a_missing_mcp_config_file_is_an_issue(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    specs, issues = load_servers(None, mcp_config_path=missing)
    assert specs == [] and issues == [
        ConfigIssue(name="", origin=f"mcp-config:{missing}", message=f"{missing}: file not found")
    ]


def test_a_project_without_mcp_json_contributes_nothing(tmp_path: Path) -> None:
    assert read_project(tmp_path) is None


def test_transport_is_inferred_from_url_and_http_type_aliases_are_accepted() -> None:
    specs, issues = load_servers(
        {
            "u": {"url": "http://127.0.0.1:1/mcp"},
            "s": {"type": "streamable-http", "url": "https://example.invalid/mcp"},
            "c": {"type": "streamableHttp", "url": "http://127.0.0.1:2/mcp"},
            "p": {"command": "server", "args": ["--port", 8080]},
        },
        mcp_config_path=None,
    )
    assert issues == []
    got = by_name(specs)
    assert [got[n].type for n in "usc"] == ["http", "http", "http"]
    assert got["p"].type == "stdio" and got["p"].args == ["--port", "8080"]


def test_variables_are_expanded_from_the_environment_with_defaults() -> None:
    environ = {"TOKEN": "s3cret", "HOST": "127.0.0.1"}
    specs, issues = load_servers(
        {
            "h": {
                "url": "http://${HOST}:${PORT:-8000}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
            "s": {"command": "srv", "env": {"KEY": "${TOKEN}", "MODE": "${MODE:-dev}"}},
        },
        mcp_config_path=None,
        environ=environ,
    )
    assert issues == []
    got = by_name(specs)
    assert got["h"].url == "http://127.0.0.1:8000/mcp"
    assert got["h"].headers == {"Authorization": "Bearer s3cret"}
    assert got["s"].env == {"KEY": "s3cret", "MODE": "dev"}


def test_project_servers_run_in_the_project_and_relative_cwd_follows_the_json_file(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    write_json(
        project / ".mcp.json", {"p": {"command": "srv"}, "q": {"command": "srv", "cwd": "tools"}}
    )
    mcp_file = write_json(
        tmp_path / "conf" / "m.json",
        {"f": {"command": "srv", "cwd": "sub"}, "g": {"command": "srv"}},
    )

    specs, _ = load_servers(None, mcp_config_path=mcp_file)
    loaded = read_project(project)
    assert loaded is not None
    specs += parse_entries(loaded.table, loaded.origin, project_dir=project)[0]

    got = by_name(specs)
    assert got["p"].cwd == str(project)
    assert got["q"].cwd == str(project / "tools")
    assert got["f"].cwd == str(tmp_path / "conf" / "sub")
    assert got["g"].cwd is None


def test_disabled_entries_are_kept_but_marked_disabled() -> None:
    specs, _ = load_servers(
        {
            "a": {"command": "x", "disabled": True},
            "b": {"command": "y", "enabled": False},
            "c": {"command": "z", "timeout": 5},
        },
        mcp_config_path=None,
    )
    got = by_name(specs)
    assert (got["a"].enabled, got["b"].enabled, got["c"].enabled) == (False, False, True)
    assert got["c"].timeout == 5.0


def test_unknown_keys_from_other_agents_are_ignored() -> None:
    specs, issues = load_servers(
        {"a": {"command": "x", "autoApprove": ["t"], "description": "d"}},
        mcp_config_path=None,
    )
    assert issues == [] and specs[0].command == "x"


async def test_issues_and_disabled_servers_show_in_status_without_connecting(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "m.json"
    broken.write_text("not json")
    specs, issues = load_servers(
        {"bad__name": {"command": "x"}, "off": {"command": "x", "enabled": False}},
        mcp_config_path=broken,
    )
    manager = MCPManager(specs, issues)
    await manager.start()
    await manager.wait_ready(5)

    statuses = {(s.name, s.status) for s in manager.status()}
    assert statuses == {("", "disabled"), ("bad__name", "disabled"), ("off", "disabled")}
    assert all(s.error for s in manager.status() if s.name != "off")
    assert manager.tools() == []
    [change] = await manager.refresh("off")
    assert change.status == "disabled"
    await manager.close()


def test_importing_the_mcp_package_does_not_load_the_sdk() -> None:
    code = (
        "import sys, turnstoned.mcp.manager, turnstoned.mcp.config, turnstoned.mcp.catalog\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
