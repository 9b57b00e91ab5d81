"""Slash commands: one list for every client, and a skill run from a /name prompt."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import run, start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine


def skill(ws: Path, name: str, body: str) -> None:
    folder = ws / ".turnstone" / "skills"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: Write {name} entries\n"
                                       f"---\n{body}\n")


async def test_the_list_has_the_builtins_then_the_sessions_skills(
        engine: Engine, tmp_path: Path) -> None:
    skill(tmp_path, "changelog", "Keep entries short.")
    skill(tmp_path, "compact", "a skill whose name a built-in has")
    listed = engine.session_commands(p.SessionCommandsParams(
        session_id=start(engine, tmp_path))).commands
    before = engine.session_commands(p.SessionCommandsParams(root=str(tmp_path))).commands
    assert [c.name for c in before] == [c.name for c in listed]  # the same before a session
    names = [c.name for c in listed]
    assert names[:7] == ["compact", "undo", "redo", "mode", "model", "new", "clear"]
    assert names[7:] == ["changelog"]
    mode = next(c for c in listed if c.name == "mode")
    assert mode.request == "session/setMode" and mode.arguments[0].choices == [
        "read-only", "auto", "full-access", "plan"]
    assert listed[-1].kind == "skill" and listed[-1].description == "Write changelog entries"


async def test_a_skill_run_as_a_command_is_loaded_and_the_transcript_keeps_what_was_typed(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    skill(tmp_path, "changelog", "Every entry starts with a verb.")
    model.push(text("Added the entry."))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "/changelog for the login fix")
    request = model.requests[0]
    assert "# Active skill: changelog" in request["messages"][0]["content"]
    assert "Every entry starts with a verb." in request["messages"][0]["content"]
    sent = request["messages"][-1]["content"]
    assert sent.startswith("[The user ran /changelog: its instructions are now in your system")
    assert sent.endswith("/changelog for the login fix")
    items = [i for i in engine.resume(sid).items() if isinstance(i, p.UserMessageItem)]
    assert items[0].text == "/changelog for the login fix"
    assert len(sink.approvals) == 0  # the user ran it: nothing to approve


async def test_a_slash_that_names_no_skill_is_plain_text(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("ok"))
    await run(engine, sink, start(engine, tmp_path), "/usr/bin is where it lives")
    assert model.requests[0]["messages"][-1]["content"] == "/usr/bin is where it lives"
