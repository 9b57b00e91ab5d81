"""Project instructions and the system prompt: what the model's first request carries."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import run, start, tool_messages
from turnstoned.core import instructions
from turnstoned.core.engine import Engine


def system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with instructions at its root and in a sub-folder; the sub-folder."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run the tests with `make check`.\n")
    (root / "CLAUDE.md").write_text("ignored: AGENTS.md wins in this folder\n")
    sub = root / "pkg" / "api"
    sub.mkdir(parents=True)
    (sub / "CLAUDE.md").write_text("In pkg/api, handlers return typed errors.\n")
    (root / "pkg" / ".clinerules").mkdir()
    (root / "pkg" / ".clinerules" / "style.md").write_text("pkg: no global state.\n")
    return root, sub


async def test_layered_instructions_reach_the_first_request_most_general_first(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path,
        isolated_home: Path) -> None:
    root, sub = repo(tmp_path)
    (isolated_home / "config" / "AGENTS.md").write_text("The user prefers short answers.\n")
    (tmp_path / "AGENTS.md").write_text("outside the repository: not read\n")
    model.push(text("ok"))
    sid = start(engine, sub)
    await run(engine, sink, sid, "hi")
    prompt = system(model.requests[0])
    order = ["The user prefers short answers.", "Run the tests with `make check`.",
             "pkg: no global state.", "In pkg/api, handlers return typed errors."]
    assert [prompt.index(x) for x in order] == sorted(prompt.index(x) for x in order)
    assert "AGENTS.md wins" not in prompt and "outside the repository" not in prompt
    assert "they cannot change the approval mode" in prompt
    files = [f.path for f in engine.instruction_files(engine.get(sid))]
    assert files == [str(isolated_home / "config" / "AGENTS.md"), str(root / "AGENTS.md"),
                     str(root / "pkg" / ".clinerules" / "style.md"), str(sub / "CLAUDE.md")]


async def test_instructions_are_read_again_when_changed_capped_and_without_secrets(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "copilot-instructions.md").write_text("first version\n")
    model.push(text("one"), text("two"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "one")
    assert "first version" in system(model.requests[0])

    agents = tmp_path / "AGENTS.md"
    agents.write_text("deploy key: ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n"
                      + "x" * (instructions.MAX_CHARS + 500))
    await run(engine, sink, sid, "two")
    prompt = system(model.requests[1])
    assert "first version" not in prompt  # AGENTS.md is there now: it wins
    assert "ghp_a1B2" not in prompt and "[REDACTED" in prompt
    assert "the instructions are capped at 32,000 characters" in prompt
    assert len(prompt) < instructions.MAX_CHARS + 8_000
    [loaded] = engine.instruction_files(engine.get(sid))
    assert loaded.truncated and loaded.chars == instructions.MAX_CHARS


async def test_a_4k_window_gets_the_compact_prompt_and_finds_other_tools_by_search(
        make_engine: Callable[[str], Engine], sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = make_engine("[model]\ncontext_window = 4096\n")
    (tmp_path / "AGENTS.md").write_text("Tests: `make check`.\n")
    model.push(tool_calls([("s1", "tool_search", json.dumps({"query": "memory notes"}))]),
               tool_calls([("m1", "memory", json.dumps({"action": "list"}))]), text("done"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "remember things")
    first = model.requests[0]
    fixed = len(system(first)) + len(json.dumps(first["tools"]))
    assert fixed <= 8_000, fixed
    assert "Tests: `make check`." in system(first) and "# How to work" not in system(first)
    names = [t["function"]["name"] for t in first["tools"]]
    assert set(names) == {"read_file", "edit_file", "write_file", "bash", "search", "tool_search"}
    found = tool_messages(model.requests[1])[0]["content"]
    assert "memory [built-in]" in found
    assert "memory" in [t["function"]["name"] for t in model.requests[2]["tools"]]
    assert not tool_messages(model.requests[2])[-1]["content"].startswith("Error: unknown tool")


async def test_a_large_window_gets_the_full_prompt(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("ok"))
    await run(engine, sink, start(engine, tmp_path), "hi")
    prompt = system(model.requests[0])
    assert "# How to work" in prompt and "# Safety" in prompt and "Approval mode: read-only" in prompt
    assert "memory" in [t["function"]["name"] for t in model.requests[0]["tools"]]


async def test_a_server_that_names_a_small_window_gets_the_compact_prompt_without_compacting(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.max_prompt_tokens = 4000  # the config believes in 32,768 tokens
    model.push(text("fits now"))
    done = await run(engine, sink, start(engine, tmp_path), "hi")
    assert done["status"] == "completed" and model.refused_for_size == 1
    assert "# How to work" in system(model.requests[0])  # refused: too long
    assert "# How to work" not in system(model.requests[1])
    assert sink.of("session/compacted") == []


def test_a_symlinked_cwd_finds_the_repository_root(tmp_path: Path) -> None:
    root, sub = repo(tmp_path)
    link = tmp_path / "link"
    os.symlink(sub, link)
    found = instructions.candidates(link)
    assert root / "AGENTS.md" in found and sub / "CLAUDE.md" in found
