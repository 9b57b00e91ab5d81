"""A grant covers the workspace only: writes outside it, or to credentials, ask every time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.tooling import prepare, tool_ctx
from tests.turnkit import run, start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.tools import edit_file, read_file, write_file


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("user")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA me\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    return ws


def test_writes_inside_the_workspace_stay_grantable(project: Path, home: Path) -> None:
    call = prepare(write_file, tool_ctx(project), path="b.txt", content="x")
    assert call.needs_approval and call.grantable and call.approval_label == "write_file"
    assert call.header == "⚙ write_file (write): b.txt (1 chars)"


@pytest.mark.parametrize("path", ["../elsewhere/x", "~/.ssh/authorized_keys2",
                                  "{tmp}/elsewhere/new/x", "link-out/x"])
def test_writes_outside_or_to_credentials_can_never_be_granted(
        project: Path, home: Path, tmp_path: Path, path: str) -> None:
    path = path.format(tmp=tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (project / "link-out").symlink_to(tmp_path / "elsewhere")
    call = prepare(write_file, tool_ctx(project), path=path, content="x")
    assert call.needs_approval and not call.grantable, path
    real = os.path.realpath(tool_ctx(project).env.resolve(path))
    assert f"→ {real}" in call.header or call.header.startswith(f"⚙ write_file (write): {real}")


def test_a_symlink_inside_the_workspace_shows_its_target(project: Path, home: Path) -> None:
    (project / "real.txt").write_text("r\n")
    (project / "link.txt").symlink_to("real.txt")
    call = prepare(write_file, tool_ctx(project), path="link.txt", content="x", mode="append")
    assert call.grantable  # it stays inside the workspace
    assert call.header.startswith(f"⚙ write_file (append): link.txt → {project / 'real.txt'} ")


async def test_edit_outside_the_workspace_asks_every_time(project: Path, home: Path) -> None:
    ctx = tool_ctx(project)
    prepare(read_file, ctx, path="~/.ssh/authorized_keys")
    await read_file.execute(prepare(read_file, ctx, path="~/.ssh/authorized_keys"), ctx)
    call = prepare(edit_file, ctx, path="~/.ssh/authorized_keys", old_string="me",
                   new_string="attacker")
    assert call.error is None and call.needs_approval and not call.grantable
    real = os.path.realpath(home / ".ssh" / "authorized_keys")
    assert call.header == f"⚙ edit_file: ~/.ssh/authorized_keys → {real} (credential store)"


async def test_always_inside_does_not_reach_elsewhere(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, project: Path, home: Path,
        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write = [("w1", "write_file", json.dumps({"path": "inside.txt", "content": "a"}))]
    model.push(tool_calls(write), text("ok"))
    later = [("w2", "write_file", json.dumps({"path": str(elsewhere / "x"), "content": "b"})),
             ("w3", "write_file", json.dumps({"path": "~/.ssh/authorized_keys2", "content": "k"})),
             ("w4", "write_file", json.dumps({"path": "inside2.txt", "content": "c"}))]
    model.push(tool_calls(later), text("ok"))
    sink.answers = [p.ApprovalResponse(decision="always"), p.ApprovalResponse(decision="deny")]
    sid = start(engine, project)
    await run(engine, sink, sid, "write inside")
    assert (project / "inside.txt").read_text() == "a"
    await run(engine, sink, sid, "write elsewhere")
    assert len(sink.approvals) == 2, "the outside writes ran under the inside grant"
    asked = dict(zip(("w2", "w3", "w4"), sink.approvals[1]["items"], strict=True))  # model order
    headers = {name: i["header"] for name, i in asked.items() if i["needsApproval"]}
    assert set(headers) >= {"w2", "w3"}
    assert "(outside the workspace)" in headers["w2"]
    assert "(credential store)" in headers["w3"]
    assert not (elsewhere / "x").exists() and not (home / ".ssh" / "authorized_keys2").exists()
