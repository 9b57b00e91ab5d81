"""Text-mode tool calling against the scripted model server: a server that refuses tools,
a model that writes its calls as text, and the modes set in config."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import run, start
from turnstoned import paths
from turnstoned.core.engine import Engine

CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'


def deltas(sink: RecordingSink) -> str:
    return "".join(e["delta"] for e in sink.of("item/agentMessage/delta"))


async def test_a_server_that_refuses_tools_gets_them_as_text_from_then_on(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is tulip\n")
    model.refuse_tools = "registry.ollama.ai/library/tiny:1b does not support tools"
    model.push(text(f"I will read the notes.\n{CALL}"), text("The word is tulip."))
    done = await run(engine, sink, start(engine, tmp_path), "what is the word?")
    assert done["status"] == "completed", done
    assert model.refused_tools == 1
    first, second = model.requests[1:3]  # after the refused one
    assert "tools" not in first and "# Calling tools" in first["messages"][0]["content"]
    assert "- read_file:" in first["messages"][0]["content"]
    assert second["messages"][-2]["content"].endswith(CALL)
    assert second["messages"][-1]["role"] == "user"
    assert "<tool_response>\n" in second["messages"][-1]["content"]
    assert "tulip" in second["messages"][-1]["content"]
    assert "<tool_call>" not in deltas(sink) and "I will read the notes." in deltas(sink)

    model.push(text("hello again"))
    await run(engine, sink, start(engine, tmp_path), "hi")  # a new session: text mode at once
    assert model.refused_tools == 1 and "tools" not in model.requests[-1]
    remembered = json.loads((paths.data_dir() / "tool-calling.json").read_text())
    assert list(remembered.values()) == ["text"]


async def test_a_model_that_writes_a_fenced_call_is_understood_and_remembered(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("plain\n")
    fenced = '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```'
    model.push(text(fenced), text("It says plain."), text("ok"))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "read notes")
    assert done["status"] == "completed"
    assert "tools" in model.requests[0]  # native first: the server took them
    assert "plain" in model.requests[1]["messages"][-1]["content"]
    assert "tools" not in model.requests[1]  # from the second call on: text mode
    await run(engine, sink, sid, "again")
    assert "tools" not in model.requests[2]


async def test_configured_native_never_reads_calls_from_text(
        make_engine: Callable[[str], Engine], sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = make_engine('[model]\ntool_calling = "native"\n')
    model.push(text(CALL))
    await run(engine, sink, start(engine, tmp_path), "read")
    assert len(model.requests) == 1 and "<tool_call>" in deltas(sink)


async def test_configured_text_mode_starts_in_text(
        make_engine: Callable[[str], Engine], sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = make_engine('[model]\ntool_calling = "text"\n')
    (tmp_path / "notes.txt").write_text("x\n")
    model.push(text('<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}</tool_call>'
                    '<tool_call>{"name": "read_file", "arguments": {"path": "missing.txt"}}'
                    "</tool_call>"), text("done"))
    done = await run(engine, sink, start(engine, tmp_path), "read both")
    assert done["status"] == "completed" and "tools" not in model.requests[0]
    results = model.requests[1]["messages"][-1]["content"]
    assert results.count("<tool_response>") == 2 and "not found" in results.lower()


async def test_a_model_that_writes_tagged_calls_natively_is_switched_to_text_mode(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("tagged\n")
    model.push(text(f"Reading.\n{CALL}"), text("It says tagged."))
    await run(engine, sink, start(engine, tmp_path), "read notes")
    assert "tools" in model.requests[0] and "tools" not in model.requests[1]
    assert "tagged" in model.requests[1]["messages"][-1]["content"]
    assert "<tool_call>" not in deltas(sink)  # the markup never showed
