"""Reads that leave the workspace or reach a credential store ask first and name the real path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.tooling import prepare, tool_ctx
from tests.turnkit import run, start, tool_messages
from tests.unit.test_guard_line_prefixes import OPENSSH_BODY, OPENSSH_KEY, leaked
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.tools import diff_file, read_file, search
from turnstoned.tools.base import ToolContext


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory with an SSH key, AWS credentials and a .netrc."""
    home = tmp_path_factory.mktemp("user")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("\n".join(OPENSSH_KEY) + "\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = abc\n")
    (home / ".netrc").write_text("machine example.com login me password pw\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print('hi')\n")
    return ws


def ctx_in(project: Path) -> ToolContext:
    return tool_ctx(project)


def test_reading_inside_the_workspace_does_not_ask(project: Path, home: Path) -> None:
    call = prepare(read_file, ctx_in(project), path="src/a.py")
    assert not call.needs_approval and call.header == "⚙ read_file: src/a.py"


def test_a_symlink_to_an_ssh_key_asks_every_time_and_shows_the_real_path(
        project: Path, home: Path) -> None:
    link = project / "deploy_key"
    link.symlink_to(home / ".ssh" / "id_ed25519")
    ctx = ctx_in(project)
    call = prepare(read_file, ctx, path="deploy_key")
    assert call.needs_approval and not call.grantable
    assert call.approval_label == "read_credentials"
    real = os.path.realpath(home / ".ssh" / "id_ed25519")
    assert call.header == f"⚙ read_file: deploy_key → {real} (credential store)"
    assert real not in ctx.env.read_set  # not marked read until it really runs


@pytest.mark.parametrize("path", ["~/.ssh/id_ed25519", "~/.aws/credentials", "~/.netrc",
                                  "/proc/self/environ", "/etc/shadow"])
def test_credential_stores_ask_and_cannot_be_granted(project: Path, home: Path, path: str) -> None:
    call = prepare(read_file, ctx_in(project), path=path)
    assert call.needs_approval and not call.grantable, path
    assert call.header.endswith("(credential store)")


def test_reading_outside_the_workspace_asks_and_can_be_granted(
        project: Path, home: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("x\n")
    call = prepare(read_file, ctx_in(project), path="../elsewhere.txt")
    assert call.needs_approval and call.grantable
    assert call.approval_label == "read_outside_workspace"
    real = os.path.realpath(tmp_path / "elsewhere.txt")
    assert call.header == f"⚙ read_file: ../elsewhere.txt → {real} (outside the workspace)"


def test_the_workspace_folder_counts_not_only_the_cwd(project: Path, home: Path) -> None:
    ctx = tool_ctx(project / "src")
    ctx.env.workspace = project
    (project / "README").write_text("r\n")
    assert not prepare(read_file, ctx, path="../README").needs_approval
    outside = prepare(read_file, ctx, path="../../x")
    assert outside.needs_approval and outside.header.endswith("(outside the workspace)")


def test_search_and_diff_file_follow_the_same_rule(project: Path, home: Path,
                                                   tmp_path: Path) -> None:
    ctx = ctx_in(project)
    assert not prepare(search, ctx, query="hi", path="src").needs_approval
    keys = prepare(search, ctx, query="BEGIN", path="~/.ssh")
    assert keys.needs_approval and not keys.grantable
    assert keys.header.endswith(f"→ {os.path.realpath(home / '.ssh')} (credential store)")
    (tmp_path / "other.py").write_text("print('hi')\n")
    out = prepare(diff_file, ctx, path_a="src/a.py", path_b=str(tmp_path / "other.py"))
    assert out.needs_approval and out.grantable and "(outside the workspace)" in out.header
    inside = prepare(diff_file, ctx, path_a="src/a.py", content_b="x\n")
    assert not inside.needs_approval


async def test_a_window_that_starts_inside_a_key_starts_at_its_begin_line(
        project: Path, home: Path) -> None:
    (project / "key.pem").write_text("\n".join(["# key", *OPENSSH_KEY, "tail"]) + "\n")
    ctx = ctx_in(project)
    call = prepare(read_file, ctx, path="key.pem", offset=5, limit=3)
    out = await read_file.execute(call, ctx)
    lines = out.text().splitlines()
    assert lines[0] == f"   2\t{OPENSSH_KEY[0]}" and lines[-1].startswith("   7\t")
    assert out.summary == f"6 lines (lines 2-7 of {len(OPENSSH_KEY) + 2})"


async def test_the_model_never_sees_a_linked_key_and_always_grants_nothing(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, project: Path,
        home: Path) -> None:
    (project / "deploy_key").symlink_to(home / ".ssh" / "id_ed25519")
    (project / ".env").write_text("DEBUG=1\nDB_PASSWORD=hunter2-prod-7731\n")
    args = json.dumps({"path": "deploy_key"})
    model.push(tool_calls([("r1", "read_file", args)]), text("read it"),
               tool_calls([("r2", "read_file", args), ("r3", "read_file", '{"path": ".env"}')]),
               text("again"))
    sink.answers = [p.ApprovalResponse(decision="always"), p.ApprovalResponse(decision="approve")]
    sid = start(engine, project)
    await run(engine, sink, sid, "read the key")
    await run(engine, sink, sid, "read it again")
    assert len(sink.approvals) == 2  # "always" saved no grant for a credential store
    header = sink.approvals[0]["items"][0]["header"]
    assert f"→ {os.path.realpath(home / '.ssh' / 'id_ed25519')}" in header
    results = [m["content"] for req in model.requests for m in tool_messages(req)]
    assert results and all(leaked(r, OPENSSH_BODY) == [] for r in results)
    assert "[REDACTED:private_key]" in results[0]
    assert "hunter2-prod-7731" not in results[-1] and "DEBUG=1" in results[-1]
