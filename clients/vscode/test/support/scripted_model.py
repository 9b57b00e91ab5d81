"""Serve the repository's scripted OpenAI-compatible model for the extension's tests.

Usage: python scripted_model.py SCRIPT.json
SCRIPT is a JSON list of replies, one per chat-completions request, in order:
  {"text": "...", "delay": 0.0}                      a streamed text reply
  {"toolCalls": [["call-1", "bash", "{...}"], ...]}  a batch of tool calls
  {"hang": 30, "text": "..."}                        stream the text, then nothing for N seconds
After the script, every request gets {"default": "..."} if given, else a fixed text.
{"routes": {"writer:": [...]}} gives a request whose first user message contains the key the
next reply of that list instead (a coordinator's children run beside it, in any order).
{"summary": "..."} answers every request without tools (a compaction's summary) with that text.
{"requestLog": "FILE"} appends one JSON line per request: its model and Authorization header.
{"messageLog": "FILE"} appends one JSON line per request: its messages and the names of its tools.
{"port": N} serves on 127.0.0.1:N (a local server's default port) instead of an ephemeral one.
Prints the base URL on stdout, serves until stdin closes.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from tests.fakes.model_server import Response, ScriptedModel, hang, text, tool_calls


def reply(step: dict[str, Any]) -> Response:
    """One scripted reply from its JSON description."""
    if "toolCalls" in step:
        calls = [(str(c[0]), str(c[1]), str(c[2])) for c in step["toolCalls"]]
        return tool_calls(calls, content=step.get("text", ""),
                          start_delay=float(step.get("startDelay", 0.0)))
    if "hang" in step:
        return hang(float(step["hang"]), after_text=str(step.get("text", "")))
    return text(str(step.get("text", "")), delay=float(step.get("delay", 0.0)),
                reasoning=step.get("reasoning"))


class LoggingModel(ScriptedModel):
    """A scripted model that also appends what each request said about itself to a file."""

    def __init__(self, log_file: str | None, message_log: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log_file = log_file
        self.message_log = message_log

    def _record(self, request: dict[str, Any], headers: dict[str, str]) -> None:
        super()._record(request, headers)
        if self.log_file:
            lower = {k.lower(): v for k, v in headers.items()}
            line = {"model": request.get("model"), "authorization": lower.get("authorization")}
            with open(self.log_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        if self.message_log:
            tools = [t.get("function", {}).get("name") for t in request.get("tools") or []]
            entry = {"messages": request.get("messages", []), "tools": tools}
            with open(self.message_log, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def first_user_text(request: dict[str, Any]) -> str:
    """What the conversation's first user message says ("" when it has none)."""
    for message in request.get("messages", []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def responder(script: dict[str, Any]) -> Callable[[dict[str, Any]], Response]:
    """Each request's reply: the summary, the next of a matching route, else of the main list."""
    main = list(script.get("replies", []))
    routes = {str(k): list(v) for k, v in script.get("routes", {}).items()}
    summary, default = script.get("summary"), script.get("default")
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> Response:
        if summary is not None and not request.get("tools"):
            return text(str(summary))
        first = first_user_text(request)
        with lock:
            queue = next((q for key, q in routes.items() if key in first and q), main)
            step = queue.pop(0) if queue else None
        if step is not None:
            return reply(step)
        return text(str(default) if default else "(no scripted response)")

    return respond


def main() -> int:
    script = json.loads(Path(sys.argv[1]).read_text())
    if not isinstance(script, dict):
        script = {"replies": script}
    server = LoggingModel(script.get("requestLog"), script.get("messageLog"),
                          default=responder(script), port=int(script.get("port", 0)))
    server.start()
    print(server.base_url, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
