"""`turnstoned chat` with work beyond one turn: a task agent nested under its call, a watch
followed until it fires."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_cli import chat
from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls


def test_a_task_agents_work_is_indented_under_its_call(model: ScriptedModel, isolated_home: Path,
                                                      tmp_path: Path) -> None:
    model.push(tool_calls([("t1", "task_agent", json.dumps({"prompt": "Count the files."}))]),
               tool_calls([("b1", "bash", '{"command": "echo two files"}')]),
               text("There are two files."),
               text("The agent counted two files."))
    out = chat(["--yes", "--cwd", str(tmp_path), "count with an agent"], model, isolated_home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "The agent counted two files."
    lines = out.stderr.splitlines()
    assert any(line.startswith("⚙ task_agent (autonomous agent)") for line in lines)
    assert "    ⚙ bash: echo two files" in lines
    agent = lines.index("    ⤷ agent:")
    assert lines[agent + 1] == "    There are two files."
    assert "    ✓ bash completed: two files" in lines
    assert any(line.startswith("✓ task_agent completed: There are two files.") for line in lines)


def test_follow_stays_until_the_watch_fired_and_its_turn_ended(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    (tmp_path / "deploy.log").write_text("deploy finished OK\n")
    create = json.dumps({"action": "create", "name": "deploy", "command": "cat deploy.log",
                         "poll_every": "10s", "stop_on": '"finished" in output'})
    model.push(tool_calls([("w1", "watch", create)]), text("Watching the deploy."),
               text("The deploy finished."))
    out = chat(["--yes", "--follow", "--cwd", str(tmp_path), "tell me when it deploys"], model,
               isolated_home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Watching", "the", "deploy.", "The", "deploy", "finished."]
    assert "following: active watches deploy" in out.stderr
    assert '[watch] [Watch "deploy" — poll #1/100' in out.stderr


def test_a_coordinator_shows_its_childrens_steps(model: ScriptedModel, isolated_home: Path,
                                                 tmp_path: Path) -> None:
    from tests.component.test_coordinator import router

    def coordinator(step: int, msgs: list[dict[str, Any]]) -> Response:
        if step == 0:
            return tool_calls([("s", "spawn_workstream", json.dumps(
                {"name": "writer", "initial_message": "writer: create notes.md"}))])
        if step == 1:
            spawned = json.loads([m for m in msgs if m["role"] == "tool"][-1]["content"])
            return tool_calls([("w", "wait_for_workstream",
                                json.dumps({"ws_ids": [spawned["ws_id"]], "timeout": 30}))])
        return text("The writer created notes.md.")

    def writer(step: int, msgs: list[dict[str, Any]]) -> Response:
        if step == 0:
            return tool_calls([("f", "write_file", '{"path": "notes.md", "content": "# Notes"}')])
        return text("notes.md is written.")

    model.push(*[router({"coord": coordinator, "writer": writer})] * 5)
    out = chat(["--yes", "--coordinator", "--cwd", str(tmp_path), "get notes written"], model,
               isolated_home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "The writer created notes.md."
    assert (tmp_path / "notes.md").read_text() == "# Notes"
    child = [line for line in out.stderr.splitlines() if line.startswith("  [")]
    assert "write_file" in child[0] and "notes.md" in child[0]
    assert child[-1].endswith("⤷ notes.md is written.")
