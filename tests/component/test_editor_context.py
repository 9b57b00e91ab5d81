"""What the editor shows reaches the model: the state sent with a prompt, the editor's
diagnostics, open files and symbols as tools, and its unsaved buffers; and the editor hears
which files the tools changed. The editor here is a fake one answering editor/* requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.tools.base import EditorUnavailable


class FakeEditor:
    """An editor serving what ``caps`` says, answering from its fields; records requests."""

    def __init__(self, caps: p.EditorCapabilities) -> None:
        self.caps = caps
        self.asked: list[p.Event] = []
        self.diagnostics: list[p.EditorDiagnostic] = []
        self.buffers: dict[str, str] = {}
        self.locations: list[p.EditorLocation] = []

    def features(self, session_id: str) -> p.EditorCapabilities:
        return self.caps

    async def ask(self, params: p.Event, result: type[Any]) -> Any:
        self.asked.append(params)
        if isinstance(params, p.EditorDiagnosticsParams):
            return result(diagnostics=[d for d in self.diagnostics
                                       if params.path in (None, d.path)])
        if isinstance(params, p.EditorBuffersParams):
            return result(buffers=[p.EditorBuffer(path=k, text=v)
                                   for k, v in self.buffers.items()])
        if isinstance(params, p.EditorSymbolParams):
            return result(locations=self.locations)
        if isinstance(params, p.EditorOpenFilesParams):
            return result(files=[p.OpenFile(path=k, modified=True) for k in self.buffers])
        raise EditorUnavailable("not served")


def rng(line: int, start: int = 0, end: int | None = None) -> p.EditorRange:
    return p.EditorRange(start_line=line, start_character=start, end_line=line,
                         end_character=start if end is None else end)


def editor(engine: Engine, **caps: bool) -> FakeEditor:
    fake = FakeEditor(p.EditorCapabilities(**caps))
    engine.services.editor = fake
    return fake


async def test_the_editor_state_leads_the_prompt_for_the_model_and_not_the_transcript(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    src = tmp_path / "src" / "app.py"
    src.parent.mkdir()
    src.write_text("def main():\n    return undefined_name\n")
    state = p.EditorState(
        active_file=str(src), language_id="python", modified=True,
        selection=p.EditorSelection(range=p.EditorRange(start_line=1, start_character=4,
                                                        end_line=1, end_character=25),
                                    text="return undefined_name"),
        visible=p.EditorRange(start_line=0, end_line=30),
        diagnostics=[p.EditorDiagnostic(path=str(src), range=rng(1, 11, 25),
                                        message="\"undefined_name\" is not defined",
                                        source="Pyright")])
    model.push(text("fixed"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "fix the error in this file", editor=state)
    sent = [m for m in model.requests[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert sent.startswith("[Editor state: what the user has open as they send this message]")
    assert "Active file: src/app.py (python) — unsaved changes" in sent
    assert "Selection: line 2:\n```\nreturn undefined_name\n```" in sent
    assert "- line 2: error: \"undefined_name\" is not defined [Pyright]" in sent
    assert sent.endswith("[End of editor state]\n\nfix the error in this file")
    items = engine.resume(sid).items()
    assert next(i.text for i in items if isinstance(i, p.UserMessageItem)) == "fix the error in this file"


async def test_diagnostics_open_files_and_symbols_are_tools_only_when_the_editor_serves_them(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\nvalue = helper(1)\n")
    model.push(text("none"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "hi")
    names = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert not names & {"editor_diagnostics", "editor_open_files", "editor_symbol"}

    fake = editor(engine, diagnostics=True, open_files=True, symbols=True)
    fake.diagnostics = [p.EditorDiagnostic(path=str(tmp_path / "a.py"), range=rng(1, 8, 14),
                                           message="helper is not defined", source="ruff",
                                           code="F821"),
                        p.EditorDiagnostic(path=str(tmp_path / "a.py"), range=rng(0, 7, 9),
                                           severity="warning", message="os imported but unused")]
    fake.locations = [p.EditorLocation(path=str(tmp_path / "lib.py"), range=rng(3, 4, 10),
                                       text="def helper(x):")]
    model.push(tool_calls([("d1", "editor_diagnostics", json.dumps({"path": "a.py"})),
                           ("o1", "editor_open_files", "{}"),
                           ("s1", "editor_symbol", json.dumps({"action": "definition",
                                                               "path": "a.py", "line": 2,
                                                               "symbol": "helper"}))]),
               text("found"))
    await run(engine, sink, sid, "what is wrong")
    names = {t["function"]["name"] for t in model.requests[1]["tools"]}
    assert {"editor_diagnostics", "editor_open_files", "editor_symbol"} <= names
    diag, opened, symbol = (m["content"] for m in tool_messages(model.requests[2]))
    assert diag.splitlines() == ["The editor shows 1 error, 1 warning in a.py:",
                                 "a.py:2:9: error: helper is not defined [ruff F821]",
                                 "a.py:1:8: warning: os imported but unused"]
    assert opened == "No files are open in the editor."
    assert symbol == "Definition of helper (1):\n- lib.py:4:5: def helper(x):"
    asked = next(a for a in fake.asked if isinstance(a, p.EditorSymbolParams))
    assert (asked.line, asked.character, asked.path) == (1, 8, str(tmp_path / "a.py"))
    assert len(sink.approvals) == 0  # reading what the editor shows asks nothing


async def test_unsaved_buffers_are_what_tools_read_and_edit(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("on disk\r\nsecond\r\n")
    fake = editor(engine, buffers=True)
    fake.buffers = {str(f): "typed, not saved\nsecond\n"}
    model.push(tool_calls([("r1", "read_file", json.dumps({"path": "notes.txt"}))]),
               tool_calls([("e1", "edit_file", json.dumps({
                   "path": "notes.txt", "old_string": "second", "new_string": "2nd"}))]),
               text("done"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    await run(engine, sink, start(engine, tmp_path), "edit my notes")
    read = tool_messages(model.requests[1])[0]["content"]
    assert read.startswith("[notes.txt has unsaved changes in the editor: this is the text")
    assert "typed, not saved" in read and "on disk" not in read
    proposal = sink.approvals[0]["items"][0]["fileChange"]["unifiedDiff"]
    assert "-second" in proposal and "+2nd" in proposal and "on disk" not in proposal
    assert f.read_bytes() == b"typed, not saved\r\n2nd\r\n"  # the user's text, the edit, CRLF
    changed = sink.of("workspace/filesChanged")
    assert changed == [{"sessionId": changed[0]["sessionId"], "commands": False,
                        "files": [{"path": str(f.resolve()), "fromBuffer": True}]}]


async def test_the_editor_hears_of_files_tools_and_commands_changed(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("w1", "write_file", json.dumps({"path": "new.txt", "content": "x"})),
                           ("b1", "bash", json.dumps({"command": "touch made.txt"}))]),
               tool_calls([("r1", "read_file", json.dumps({"path": "new.txt"}))]), text("ok"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    await run(engine, sink, start(engine, tmp_path), "make files")
    [changed] = sink.of("workspace/filesChanged")  # none for the batch that only read
    assert changed["commands"] is True
    assert changed["files"] == [{"path": str((tmp_path / "new.txt").resolve()),
                                 "fromBuffer": False}]


async def test_an_editor_that_does_not_answer_is_an_error_the_model_reads(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    fake = editor(engine, diagnostics=True)

    async def silent(params: p.Event, result: type[Any]) -> Any:
        raise EditorUnavailable("editor/diagnostics had no answer in 10 s")
    fake.ask = silent  # type: ignore[method-assign]
    model.push(tool_calls([("d1", "editor_diagnostics", "{}")]), text("ok"))
    done = await run(engine, sink, start(engine, tmp_path), "problems?")
    assert done["status"] == "completed"
    told = tool_messages(model.requests[1])[0]["content"]
    assert told == "Error: the editor did not answer: editor/diagnostics had no answer in 10 s"


async def test_search_finds_what_unsaved_buffers_say_not_their_files_on_disk(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "open.py").write_text("old_name = 1\n")
    (tmp_path / "closed.py").write_text("old_name = 2\n")
    fake = editor(engine, buffers=True)
    fake.buffers = {str(tmp_path / "open.py"): "new_name = 1\nprint(new_name)\n"}
    model.push(tool_calls([("s1", "search", json.dumps({"query": "old_name|new_name"}))]),
               text("ok"))
    await run(engine, sink, start(engine, tmp_path), "where is it used")
    found = tool_messages(model.requests[1])[0]["content"]
    assert "closed.py:1:old_name = 2" in found
    assert "open.py:1:new_name = 1" in found and "open.py:2:print(new_name)" in found
    assert "open.py:1:old_name" not in found
    assert found.endswith("(searched the editor's unsaved text of: ./open.py)")
