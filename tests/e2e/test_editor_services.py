"""An editor's services through the real daemon: declared at initialize, asked as
editor/* requests while a turn runs, answered by the client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import protocol as p
from turnstoned.client import Client


async def test_an_editor_serves_diagnostics_and_unsaved_buffers_to_the_model(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "app.py"
    src.write_text("x = 1\n")
    model.push(tool_calls([("d1", "editor_diagnostics", json.dumps({"path": "app.py"})),
                           ("r1", "read_file", json.dumps({"path": "app.py"}))]),
               text("it is undefined"))
    client = await Client.spawn(cwd=str(tmp_path), env={"TURNSTONED_HOME": str(isolated_home)},
                                initialize=False)
    asked: list[tuple[str, dict[str, Any]]] = []

    async def diagnostics(params: dict[str, Any]) -> Any:
        asked.append(("editor/diagnostics", params))
        return {"diagnostics": [{"path": str(src), "severity": "error", "message": "y is undefined",
                                 "range": {"startLine": 1, "startCharacter": 4, "endLine": 1,
                                           "endCharacter": 5}}]}

    async def buffers(params: dict[str, Any]) -> Any:
        asked.append(("editor/buffers", params))
        return {"buffers": [{"path": str(src), "text": "x = 1\nz = y\n"}]}

    client.request_handlers.update({"editor/diagnostics": diagnostics, "editor/buffers": buffers})
    try:
        await client.initialize(p.InitializationOptions(turnstoned=p.ClientOptions(
            editor=p.EditorCapabilities(diagnostics=True, buffers=True))))
        sid = await client.start_session(cwd=str(tmp_path))
        done = await client.run_turn(sid, "why does it fail?", timeout=60)
        assert done["status"] == "completed"
    finally:
        await client.close()
    assert [method for method, _ in asked] == ["editor/buffers", "editor/diagnostics"]
    assert asked[1][1] == {"sessionId": sid, "path": str(src.resolve())}
    results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "The editor shows 1 error in app.py:\napp.py:2:5: error: y is undefined"
    assert "z = y" in results[1] and "unsaved changes in the editor" in results[1]
    assert "editor_open_files" not in {t["function"]["name"] for t in model.requests[0]["tools"]}
