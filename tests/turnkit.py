"""Driving whole turns of an in-process engine in tests, and a scripted model that reads files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.conftest import RecordingSink
from tests.fakes.model_server import Response, error, text, tool_calls
from turnstoned import protocol as p
from turnstoned.core.engine import Engine


async def run(engine: Engine, sink: RecordingSink, session_id: str, prompt: str,
              timeout: float = 20.0, editor: p.EditorState | None = None) -> dict[str, Any]:
    """Start a turn (it must not be queued) and return its ``turn/completed``."""
    turn_id, queued = engine.start_turn(session_id, [prompt], editor)
    assert not queued
    return await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id, timeout)


def start(engine: Engine, cwd: Path, **kw: Any) -> str:
    return engine.start_session(p.SessionStartParams(cwd=str(cwd), **kw)).id


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in a recorded model request."""
    return [m for m in request["messages"] if m["role"] == "tool"]


def completed_tools(sink: RecordingSink) -> list[dict[str, Any]]:
    return [e["item"] for e in sink.of("item/completed") if e["item"]["type"] == "toolCall"]


SUMMARY = "SUMMARY-7731: the user had files read one by one; each was summarised."


class Brain:
    """The scripted model's default answer: a summary to a request without tools; else the
    next planned response, or: read the file the last user message names, then say so."""

    def __init__(self, summary: str = SUMMARY) -> None:
        self.summary = summary
        self.fail_summaries = False
        self.summary_delay = 0.0  # seconds before the summary's response starts
        self.plan: list[Response] = []
        self.summary_requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> Response:
        if not request.get("tools"):
            self.summary_requests.append(request)
            if self.fail_summaries:
                return error(500, "the summariser is down")
            return text(self.summary, start_delay=self.summary_delay)
        if self.plan:
            return self.plan.pop(0)
        last = request["messages"][-1]
        names = re.findall(r"read (\S+)", last["content"]) if last["role"] == "user" else []
        if names:  # (a user message may also be the guard's advisory after a result)
            return tool_calls([("call_0", "read_file", json.dumps({"path": names[-1]}))])
        return text("I read it.")


def files(root: Path, count: int, size: int = 3000) -> None:
    """``f<n>.txt`` holding ``word<n>`` (findable by recall) among filler."""
    for n in range(1, count + 1):
        (root / f"f{n}.txt").write_text(f"word{n} begins here\n" + f"line of f{n}\n" * (size // 12))
