"""Undo, redo, review and fork of turns on a real git workspace, with a real shadow
repository: the workspace goes back byte for byte (contents, modes, symlinks, ignored
files, deletions, creations, renames), a file the user changed in between is not
overwritten without a resolution, and the conversation follows when asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.component.test_approval_scenario import bash, replies, tool
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import run, start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine

FULL = '[approvals]\nmode = "full-access"\n'
MakeEngine = Callable[[str], Engine]


def state(root: Path) -> str:
    """A hash of every file under ``root`` but .git: path, kind, mode, bytes or link target."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(
                os.path.join(dirpath, d))]):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            info = os.lstat(full)
            if os.path.islink(full):
                body = b"link:" + os.readlink(full).encode()
            else:
                body = Path(full).read_bytes()
            digest.update(f"{rel}\0{info.st_mode:o}\0".encode() + body + b"\0")
    return digest.hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "build").mkdir()
    (ws / ".gitignore").write_text("build/\n")
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    (ws / "src" / "util.py").write_text("X = 1\n")
    (ws / "notes.txt").write_text("keep me\n")
    (ws / "old_name.txt").write_text("renamed later\n")
    (ws / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (ws / "run.sh").write_text("#!/bin/sh\necho run\n")
    (ws / "link").symlink_to("notes.txt")
    (ws / "build" / "out.txt").write_text("built 1\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   cwd=ws, check=True)
    return ws


def git_tree(ws: Path) -> str:
    """The user's own repository's view of the work tree (git add -A; write-tree), taken in
    a scratch index so the user's index is untouched."""
    env = {**os.environ, "GIT_INDEX_FILE": str(ws / ".git" / "scratch-index")}
    subprocess.run(["git", "add", "-A"], cwd=ws, env=env, check=True)
    out = subprocess.run(["git", "write-tree"], cwd=ws, env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


# One turn: three tool edits, a command that creates, deletes, renames, changes a mode,
# a binary file and a symlink, and a tool write into the ignored build dir.
TURN = [
    [tool("read_file", path="src/app.py")],
    [tool("edit_file", path="src/app.py", old_string="return 1", new_string="return 2"),
     tool("write_file", path="src/util.py", content="X = 2\n"),
     tool("write_file", path="src/new.py", content="NEW = True\n")],
    [bash("echo made > created.txt && rm notes.txt && mv old_name.txt new_name.txt && "
          "chmod +x run.sh && printf '\\001\\002' >> logo.bin && ln -sfn src/app.py link")],
    [tool("write_file", path="build/out.txt", content="built 2\n")],
]


async def one_turn(engine: Engine, sink: RecordingSink, model: ScriptedModel, ws: Path,
                   sid: str | None = None) -> tuple[str, dict[str, Any]]:
    sid = sid or start(engine, ws)
    model.push(*replies(TURN, "t"))
    done = await run(engine, sink, sid, "refactor the project")
    assert done["status"] == "completed", done
    return sid, done


async def test_undo_puts_the_workspace_back_byte_for_byte_and_redo_brings_the_turn_back(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    before, before_tree = state(workspace), git_tree(workspace)
    sid, done = await one_turn(engine, sink, model, workspace)
    after, after_tree = state(workspace), git_tree(workspace)
    assert after != before
    assert (workspace / "created.txt").exists() and not (workspace / "notes.txt").exists()

    changed = {Path(f["path"]).relative_to(workspace).as_posix(): f["kind"]
               for f in done["checkpoint"]["files"]}
    assert changed == {
        "src/app.py": "modify", "src/util.py": "modify", "src/new.py": "create",
        "created.txt": "create", "notes.txt": "delete", "old_name.txt": "delete",
        "new_name.txt": "create", "run.sh": "modify", "logo.bin": "modify", "link": "modify",
        "build/out.txt": "modify"}
    assert done["checkpoint"]["undoable"] is True

    undo = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert undo.applied and undo.undo_id and not undo.conflicts
    assert state(workspace) == before
    assert git_tree(workspace) == before_tree
    assert os.readlink(workspace / "link") == "notes.txt"
    assert not os.access(workspace / "run.sh", os.X_OK)

    redo = await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=undo.undo_id))
    assert redo.applied
    assert state(workspace) == after
    assert git_tree(workspace) == after_tree

    # The redone turn can be undone again, and a second redo of the same undo is refused.
    again = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert again.applied and state(workspace) == before
    with pytest.raises(Exception, match="redone already"):
        await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=undo.undo_id))


async def test_turn_changes_lists_every_file_with_its_diff(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid, done = await one_turn(engine, sink, model, workspace)
    result = await engine.turn_changes(p.TurnRef(session_id=sid, turn_id=done["turnId"]))
    by_path = {Path(f.path).relative_to(workspace).as_posix(): f for f in result.files}
    assert "-    return 1\n+    return 2" in (by_path["src/app.py"].diff or "")
    assert "+made" in (by_path["created.txt"].diff or "")
    assert "-keep me" in (by_path["notes.txt"].diff or "")
    assert by_path["logo.bin"].binary and by_path["logo.bin"].diff is None
    assert "+built 2" in (by_path["build/out.txt"].diff or "")  # an ignored file, by its bytes


async def test_a_file_the_user_changed_since_is_a_conflict_until_resolved(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    original = (workspace / "src" / "app.py").read_bytes()
    sid, done = await one_turn(engine, sink, model, workspace)
    (workspace / "src" / "app.py").write_text("def main():\n    return 'mine'\n")
    mid = state(workspace)

    asked = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert not asked.applied and asked.undo_id is None
    assert [c.path for c in asked.conflicts] == [str(workspace / "src" / "app.py")]
    assert "+    return 'mine'" in asked.conflicts[0].diff
    assert state(workspace) == mid  # nothing was done

    app = str(workspace / "src" / "app.py")
    kept = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"],
                                              resolutions={app: "mine"}))
    assert kept.applied and kept.kept == [app]
    assert "mine" in (workspace / "src" / "app.py").read_text()
    assert (workspace / "notes.txt").read_text() == "keep me\n"  # the rest went back

    # Taking the checkpoint instead: redo first, then undo with the other answer.
    assert kept.undo_id
    await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=kept.undo_id))
    took = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"],
                                              resolutions={app: "checkpoint"}))
    assert took.applied and (workspace / "src" / "app.py").read_bytes() == original


async def test_redo_asks_about_a_file_changed_after_the_undo(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid, done = await one_turn(engine, sink, model, workspace)
    undo = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert undo.undo_id
    (workspace / "src" / "util.py").write_text("X = 'user'\n")
    asked = await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=undo.undo_id))
    assert not asked.applied
    assert [c.path for c in asked.conflicts] == [str(workspace / "src" / "util.py")]
    util = str(workspace / "src" / "util.py")
    done2 = await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=undo.undo_id,
                                               resolutions={util: "mine"}))
    assert done2.applied and (workspace / "src" / "util.py").read_text() == "X = 'user'\n"
    assert (workspace / "src" / "app.py").read_text().endswith("return 2\n")


async def test_undoing_an_earlier_turn_takes_the_later_ones_back_too(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    before = state(workspace)
    sid = start(engine, workspace)
    model.push(*replies([[tool("write_file", path="a.txt", content="one\n")]], "a"))
    first = await run(engine, sink, sid, "write a")
    model.push(*replies([[tool("write_file", path="a.txt", content="two\n"),
                          bash("echo b > b.txt")]], "b"))
    await run(engine, sink, sid, "change a, add b")
    undo = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=first["turnId"]))
    assert undo.applied and len(undo.turn_ids) == 2
    assert state(workspace) == before


async def test_rewind_takes_the_turn_out_of_the_conversation_and_redo_brings_it_back(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid, done = await one_turn(engine, sink, model, workspace)
    undo = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"],
                                              rewind=True))
    assert undo.rewound and undo.prompt == "refactor the project"
    assert not any(isinstance(i, p.ToolCallItem) for i in engine.get(sid).items())
    notice = sink.of("session/notice")[-1]
    assert notice["kind"] == "undo" and notice["data"]["rewound"] is True

    model.push(text("fresh start"))
    await run(engine, sink, sid, "do it differently")
    sent = json.dumps(model.requests[-1]["messages"])
    assert "refactor the project" not in sent and "src/new.py" not in sent
    assert "The user undid" not in sent

    assert undo.undo_id
    with pytest.raises(Exception, match="rewind takes whole turns"):
        await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"],
                                           rewind=True, paths=[]))
    await engine.redo(p.TurnRedoParams(session_id=sid, undo_id=undo.undo_id))
    assert any(isinstance(i, p.ToolCallItem) for i in engine.get(sid).items())


async def test_an_undo_kept_in_the_conversation_is_told_to_the_model(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid, done = await one_turn(engine, sink, model, workspace)
    await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    model.push(text("noted"))
    await run(engine, sink, sid, "what now?")
    last_user = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert "The user undid your last turn" in last_user["content"]
    assert "src/app.py" in last_user["content"] and "what now?" in last_user["content"]


async def test_rewinding_a_turn_gives_back_only_what_the_user_typed_and_items_name_turns(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid, done = await one_turn(engine, sink, model, workspace)
    kept = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    changes = await engine.turn_changes(p.TurnRef(session_id=sid, turn_id=done["turnId"]))
    assert changes.undone_by == kept.undo_id and changes.files  # undone: Redo takes it back
    model.push(*replies([[tool("write_file", path="later.txt", content="x")]], "w"))
    second = await run(engine, sink, sid, "try it differently")  # the undo notice leads it
    users = [i for i in engine.resume(sid).items() if isinstance(i, p.UserMessageItem)]
    assert [u.turn_id for u in users] == [done["turnId"], second["turnId"]]
    undone = await engine.undo(p.TurnUndoParams(session_id=sid, rewind=True))
    assert undone.turn_ids == [second["turnId"]] and undone.prompt == "try it differently"


async def test_undo_of_some_files_leaves_the_rest_and_the_turn_undoable(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    before = state(workspace)
    sid, done = await one_turn(engine, sink, model, workspace)
    one = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"],
                                             paths=[str(workspace / "src" / "app.py")]))
    assert [f.path for f in one.restored] == [str(workspace / "src" / "app.py")]
    assert (workspace / "src" / "app.py").read_text().endswith("return 1\n")
    assert (workspace / "src" / "util.py").read_text() == "X = 2\n"
    rest = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert rest.applied and state(workspace) == before


async def test_fork_continues_from_before_a_turn_with_or_without_the_files(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid = start(engine, workspace)
    model.push(text("hello"))
    await run(engine, sink, sid, "say hello")
    _, done = await one_turn(engine, sink, model, workspace, sid)
    after = state(workspace)

    fork = await engine.fork(p.SessionForkParams(session_id=sid, turn_id=done["turnId"]))
    assert fork.session and fork.prompt == "refactor the project"
    assert state(workspace) == after  # the files stayed
    texts = [i.text for i in engine.get(fork.session.session_id).items()
             if isinstance(i, p.UserMessageItem)]
    assert texts == ["say hello"]
    model.push(text("forked"))
    await run(engine, sink, fork.session.session_id, "another way")
    sent = json.dumps(model.requests[-1]["messages"])
    assert "say hello" in sent and "refactor the project" not in sent

    moved = await engine.fork(p.SessionForkParams(session_id=sid, turn_id=done["turnId"],
                                                  restore_files=True))
    assert moved.session and moved.undo and moved.undo.applied
    assert not (workspace / "created.txt").exists()


async def test_a_workspace_too_big_to_snapshot_says_so_and_the_turn_still_runs(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from turnstoned.checkpoint import shadow
    monkeypatch.setattr(shadow, "MAX_FILES", 3)
    engine = make_engine(FULL)
    sid = start(engine, workspace)
    model.push(*replies([[tool("write_file", path="a.txt", content="one\n")]], "a"))
    done = await run(engine, sink, sid, "write a")
    assert done["status"] == "completed" and (workspace / "a.txt").exists()
    assert done["checkpoint"]["undoable"] is False
    assert "too many to checkpoint" in done["checkpoint"]["note"]
    off = [n for n in sink.of("session/notice") if n["kind"] == "checkpointsOff"]
    assert len(off) == 1 and "cannot be undone" in off[0]["text"]


async def test_a_turn_that_only_reads_has_no_checkpoint(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(FULL)
    sid = start(engine, workspace)
    model.push(*replies([[tool("read_file", path="notes.txt")]], "r"))
    done = await run(engine, sink, sid, "read notes")
    assert done.get("checkpoint") is None
    undo = await engine.undo(p.TurnUndoParams(session_id=sid, turn_id=done["turnId"]))
    assert undo.applied and not undo.restored
