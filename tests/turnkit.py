"""Driving whole turns of an in-process engine in tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink
from turnstoned import protocol as p
from turnstoned.core.engine import Engine


async def run(engine: Engine, sink: RecordingSink, session_id: str, prompt: str,
              timeout: float = 20.0) -> dict[str, Any]:
    """Start a turn (it must not be queued) and return its ``turn/completed``."""
    turn_id, queued = engine.start_turn(session_id, [prompt])
    assert not queued
    return await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id, timeout)


def start(engine: Engine, cwd: Path, **kw: Any) -> str:
    return engine.start_session(p.SessionStartParams(cwd=str(cwd), **kw)).id


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in a recorded model request."""
    return [m for m in request["messages"] if m["role"] == "tool"]


def completed_tools(sink: RecordingSink) -> list[dict[str, Any]]:
    return [e["item"] for e in sink.of("item/completed") if e["item"]["type"] == "toolCall"]
