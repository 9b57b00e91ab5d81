"""Choosing a model: what the servers list, a local server found on a first run, the choice
saved to config.toml, and a session's own model."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import MODEL_ID, ScriptedModel, text
from tests.turnkit import run, start
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.llm import discovery


async def test_the_configured_server_lists_its_models_with_the_current_one(
        engine: Engine, model: ScriptedModel) -> None:
    listed = await engine.list_models()
    assert listed.configured and listed.current == "scripted" and listed.error is None
    assert MODEL_ID == "scripted"  # the server lists the configured model once
    assert [(m.name, m.current, m.context_window, m.server) for m in listed.models] == [
        ("scripted", True, 32768, "configured")]


async def test_a_first_run_finds_a_local_server_and_the_choice_is_saved_and_used(
        make_engine: Callable[[str], Engine], sink: RecordingSink, isolated_home: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedModel() as local:
        port = int(local.base_url.rsplit(":", 1)[1].split("/")[0])
        monkeypatch.setattr(discovery, "LOCAL_SERVERS", (("Ollama", port), ("vLLM", 1)))
        for name in ("TURNSTONED_MODEL", "OPENAI_BASE_URL"):  # nothing configured
            monkeypatch.delenv(name)
        engine = make_engine("[session]\nkeep_recent_turns = 2\n")
        listed = await engine.list_models()
        assert not listed.configured and listed.current is None
        assert [(m.name, m.server, m.base_url) for m in listed.models] == [
            (MODEL_ID, "Ollama", f"http://127.0.0.1:{port}/v1")]

        used = engine.use_model(p.ModelUseParams(name=MODEL_ID, base_url=listed.models[0].base_url))
        saved = tomllib.loads(paths.config_file().read_text())
        assert saved["model"] == {"name": MODEL_ID, "base_url": f"http://127.0.0.1:{port}/v1"}
        assert saved["session"] == {"keep_recent_turns": 2}  # the rest of the file kept
        assert used.saved_to == str(paths.config_file())
        local.push(text("hello from the local server"))
        await run(engine, sink, start(engine, tmp_path), "hi")
        assert local.requests[0]["model"] == MODEL_ID


async def test_a_session_gets_a_model_of_its_own(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    sid = start(engine, tmp_path)
    model.push(text("one"), text("two"))
    await run(engine, sink, sid, "first")
    changed = engine.set_session_model(p.SessionSetModelParams(session_id=sid, model="bigger"))
    assert changed.previous is None and changed.model == "bigger"
    await run(engine, sink, sid, "second")
    assert [r["model"] for r in model.requests] == ["scripted", "bigger"]
    assert engine.row(sid).model == "bigger"  # kept with the session
    assert engine.get(sid).info().model == "bigger"  # and what session/resume says
    assert next(s for s in engine.list_sessions() if s.session_id == sid).model == "bigger"


def test_saving_a_model_keeps_the_file_and_updates_the_section(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text('# mine\n[model]\nname = "old"\ncontext_window = 8192\n\n[tools]\ntimeout = 30\n')
    config.save_model('qwen "coder"', "http://127.0.0.1:8080/v1", file)
    text_now = file.read_text()
    assert text_now.startswith("# mine\n[model]\n")
    assert tomllib.loads(text_now) == {
        "model": {"name": 'qwen "coder"', "base_url": "http://127.0.0.1:8080/v1",
                  "context_window": 8192}, "tools": {"timeout": 30}}
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nunknown_key = 1\n")
    with pytest.raises(config.ConfigError):
        config.save_model("x", None, bad)
    assert bad.read_text() == "[model]\nunknown_key = 1\n"  # a file that cannot load: untouched


def test_where_local_servers_are_looked_for_can_be_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNSTONED_LOCAL_SERVERS", "Ollama=9, LM Studio=12345,bad")
    assert discovery.local_servers() == (("Ollama", 9), ("LM Studio", 12345))
    monkeypatch.setenv("TURNSTONED_LOCAL_SERVERS", "")
    assert discovery.local_servers() == () and discovery.find_local() == []
    monkeypatch.delenv("TURNSTONED_LOCAL_SERVERS")
    assert discovery.local_servers() == discovery.LOCAL_SERVERS
