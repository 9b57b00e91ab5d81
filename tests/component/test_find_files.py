"""@-mentions: fuzzy file search over a real workspace, and what a mention gives the model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.search.fuzzy import FileIndex


def workspace(root: Path) -> Path:
    for rel in ["src/app/main.py", "src/app/models.py", "src/apple.txt", "docs/api.md",
                "tests/test_app_main.py", "build/app_main.o", "node_modules/x/app.js",
                "secret/app.key"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{rel}\n")
    (root / ".gitignore").write_text("secret/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def test_find_ranks_file_names_and_word_starts_and_honours_gitignore(
        engine: Engine, tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    found = await engine.find_files(p.FindFilesParams(root=str(ws), query="appmain"))
    paths = [f.path for f in found.files]
    # All of it in one file name beats a match spread over a folder and a name.
    assert paths[:2] == ["tests/test_app_main.py", "src/app/main.py"]
    assert not any(x.startswith(("build/", "node_modules/", "secret/")) for x in paths)
    assert found.indexed == 5 and found.root == str(ws)  # hidden files are left out too
    first = found.files[0]
    assert "".join(first.path[i] for i in first.positions) == "appmain"
    names = [f.path for f in (await engine.find_files(
        p.FindFilesParams(root=str(ws), query="mod"))).files]
    assert names[0] == "src/app/models.py"


async def test_what_the_user_had_open_ranks_first_and_bad_roots_are_refused(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    sid = start(engine, ws)
    before = await engine.find_files(p.FindFilesParams(session_id=sid, query="app"))
    assert before.files[0].path != "docs/api.md"
    model.push(text("ok"))
    engine.start_turn(sid, ["look"], p.EditorState(active_file=str(ws / "docs/api.md")))
    await sink.wait_for("turn/completed", lambda e: True, 20)
    after = await engine.find_files(p.FindFilesParams(session_id=sid, query="ap"))
    assert after.files[0].path == "docs/api.md"
    with pytest.raises(EngineError):
        await engine.find_files(p.FindFilesParams(root="relative/path", query="x"))


async def test_mentions_give_the_model_the_file_a_range_or_a_listing_never_a_credential(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path,
        isolated_home: Path) -> None:
    ws = workspace(tmp_path / "ws")
    (ws / "src/app/main.py").write_text("".join(f"line {i}\n" for i in range(1, 51)))
    model.push(text("seen"))
    sid = start(engine, ws)
    engine.start_turn(sid, ["explain @src/app/main.py:10-12 and @docs"], None, [
        p.MentionInput(path="src/app/main.py", start_line=10, end_line=12),
        p.MentionInput(path="docs"), p.MentionInput(path=str(Path.home() / ".ssh" / "id_rsa"))])
    await sink.wait_for("turn/completed", lambda e: True, 20)
    sent = [m for m in model.requests[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert "[Mentioned src/app/main.py lines 10-12]\n```\nline 10\nline 11\nline 12\n```" in sent
    assert "line 13" not in sent and "line 9\n" not in sent
    assert "[Mentioned folder docs: 1 entries]\napi.md" in sent
    assert "id_rsa: not read, it is in a credential store]" in sent
    assert sent.endswith("explain @src/app/main.py:10-12 and @docs")
    shown = [i for i in engine.resume(sid).items() if isinstance(i, p.UserMessageItem)]
    assert shown[0].text == "explain @src/app/main.py:10-12 and @docs"


def test_typing_narrows_and_stays_correct() -> None:
    index = FileIndex(["a/b/config.py", "conf/fig.txt", "x/confirm.md", "readme"])
    seen = [[h.path for h in index.find(q, 10)] for q in ["c", "co", "con", "conf", "confi"]]
    assert seen[0][0] in ("conf/fig.txt", "a/b/config.py", "x/confirm.md")
    assert "readme" not in seen[1]
    assert set(seen[4]) == {"a/b/config.py", "conf/fig.txt", "x/confirm.md"}
    assert [h.path for h in index.find("zz", 10)] == []
    assert next(h.path for h in index.find("cfg", 10)) == "a/b/config.py"


async def test_a_mention_sent_while_a_turn_runs_is_read_at_its_next_seam(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    import threading

    from tests.fakes.model_server import gated

    ws = workspace(tmp_path / "ws")
    gate = threading.Event()
    model.push(gated("fir", "st", gate), text("second"))
    sid = start(engine, ws)
    first, _ = engine.start_turn(sid, ["start"])
    _, queued = engine.start_turn(sid, ["and @docs/api.md"], None,
                                  [p.MentionInput(path="docs/api.md")])
    assert queued
    gate.set()
    await sink.wait_for("turn/completed", lambda e: e["turnId"] == first, 20)
    sent = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "user"]
    assert any("[Mentioned docs/api.md]" in c and "and @docs/api.md" in c for c in sent)
