"""Forgetting sessions, and listing those of one folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text
from tests.turnkit import run, start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError


async def test_a_deleted_session_is_gone_with_its_history_and_recall(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "a" / "sub"
    b.mkdir(parents=True)
    (tmp_path / "other").mkdir()
    model.push(text("zebra-unicorn noted"), text("fine"))
    first = start(engine, a)
    await run(engine, sink, first, "remember zebra-unicorn")
    second = start(engine, b)
    third = start(engine, tmp_path / "other")
    listed = {s.session_id for s in engine.list_sessions(str(a))}
    assert listed == {first, second}  # a folder and below it, not the others
    assert third in {s.session_id for s in engine.list_sessions()}

    await engine.delete_session(first)
    assert first not in {s.session_id for s in engine.list_sessions()}
    assert engine.store.get_session(first) is None
    assert engine.store.query("SELECT COUNT(*) FROM messages WHERE session_id = ?",
                              (first,))[0][0] == 0
    hits = engine.store.query("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?",
                              ('"zebra"',))[0][0]
    assert hits == 0  # recall forgets it too
    with pytest.raises(EngineError) as err:
        await engine.delete_session(first)
    assert err.value.code == p.ErrorCode.SESSION_NOT_FOUND
