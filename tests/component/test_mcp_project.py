"""A project's .mcp.json before trust: hashed bytes, an unexpanded preview, placeholders only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from turnstoned.mcp import project as proj
from turnstoned.store import Store
from turnstoned.store.trust import TrustStore

SECRET = "s3cret-value-that-must-not-show"


def write(dir_: Path, servers: Any) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    path = dir_ / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", SECRET)
    monkeypatch.setenv("HOST", SECRET)


def test_the_hash_is_of_the_bytes_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path, {"a": {"command": "x"}})
    loaded = proj.read_project(tmp_path)
    assert loaded is not None
    assert loaded.hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.path == path and loaded.origin == f"project:{path}"
    path.write_text(path.read_text() + " ")
    again = proj.read_project(tmp_path)
    assert again is not None and again.hash != loaded.hash  # any change is a new version


def test_the_preview_is_what_is_written_with_the_names_of_what_it_would_read(
        tmp_path: Path) -> None:
    write(tmp_path, {
        "local": {"command": "~/bin/${TOOL:-srv}", "args": ["--token", "${TOKEN}", 3],
                  "env": {"API_KEY": "${TOKEN}", "MODE": "dev"}},
        "sub": {"command": "srv", "cwd": "${HOST}/x"},
        "remote": {"url": "http://${HOST}:8/mcp", "headers": {"Authorization": "Bearer ${AUTH}"}},
    })
    loaded = proj.read_project(tmp_path)
    assert loaded is not None
    got = {s.name: s for s in proj.preview(loaded)}
    local, sub, remote = got["local"], got["sub"], got["remote"]
    assert (local.transport, local.command) == ("stdio", "~/bin/${TOOL:-srv}")
    assert local.args == ["--token", "${TOKEN}", "3"] and local.cwd == str(tmp_path)
    assert local.env == ["API_KEY", "MODE"] and local.variables == ["TOKEN", "TOOL"]
    assert sub.cwd == "${HOST}/x" and sub.variables == ["HOST"]
    assert (remote.transport, remote.url, remote.cwd) == ("http", "http://${HOST}:8/mcp", None)
    assert remote.variables == ["AUTH", "HOST"]
    assert SECRET not in repr(got)


def test_bad_entries_are_shown_with_their_problem_and_never_become_servers(
        tmp_path: Path) -> None:
    write(tmp_path, {"ok": {"command": "a"}, "bad__name": {"command": "b"},
                     "old": {"type": "sse", "url": "http://x"}, "odd": ["not", "a", "table"]})
    loaded = proj.read_project(tmp_path)
    assert loaded is not None
    problems = {s.name: s.problem for s in proj.preview(loaded)}
    assert problems["ok"] is None and "__" in (problems["bad__name"] or "")
    assert "SSE" in (problems["old"] or "") and "table" in (problems["odd"] or "")
    specs, issues = proj.placeholders(loaded)
    shown = [(s.name, s.type, s.command, s.url, s.args) for s in specs]
    assert shown == [("ok", "stdio", "", "", [])]
    assert sorted(i.name for i in issues) == ["bad__name", "odd", "old"]


@pytest.mark.parametrize(("content", "expected"), [
    (b"{not json", "invalid JSON"),
    (b'{"servers": {}}', "mcpServers"),
    (b" " * (proj.MAX_BYTES + 1), "larger than"),
])
def test_an_unusable_file_has_no_servers_and_one_issue(
        tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / ".mcp.json").write_bytes(content)
    loaded = proj.read_project(tmp_path)
    assert loaded is not None and dict(loaded.table) == {}
    assert len(loaded.issues) == 1 and expected in loaded.issues[0].message


def test_no_file_is_no_project(tmp_path: Path) -> None:
    assert proj.read_project(tmp_path) is None
    assert proj.read_project(tmp_path / "missing") is None


def test_decisions_persist_per_workspace_and_hash(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite3"
    store = Store(db)
    trust = TrustStore(store)
    trust.record("/w", "/w/.mcp.json", "h1", "trusted")
    trust.record("/w", "/w/.mcp.json", "h2", "denied")
    trust.record("/other", "/other/.mcp.json", "h1", "denied")
    assert trust.decision("/w", "h1") == "trusted" and trust.decision("/w", "h2") == "denied"
    assert trust.decision("/w", "h3") is None and trust.decision("/other", "h1") == "denied"
    store.close()
    reopened = TrustStore(Store(db))
    assert reopened.decision("/w", "h1") == "trusted" and reopened.ever_trusted("/w")
    reopened.revoke("/w")
    assert reopened.decision("/w", "h1") is None and not reopened.ever_trusted("/w")
    assert reopened.decision("/w", "h2") == "denied"
    reopened.record("/w", "/w/.mcp.json", "h2", "trusted")  # a later answer replaces the earlier
    assert reopened.decision("/w", "h2") == "trusted"
