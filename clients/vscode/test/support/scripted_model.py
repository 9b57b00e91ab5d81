"""Serve the repository's scripted OpenAI-compatible model for the extension's tests.

Usage: python scripted_model.py SCRIPT.json
SCRIPT is a JSON list of replies, one per chat-completions request, in order:
  {"text": "...", "delay": 0.0}                      a streamed text reply
  {"toolCalls": [["call-1", "bash", "{...}"], ...]}  a batch of tool calls
  {"hang": 30, "text": "..."}                        stream the text, then nothing for N seconds
After the script, every request gets {"default": "..."} if given, else a fixed text.
{"requestLog": "FILE"} appends one JSON line per request: its model and Authorization header.
Prints the base URL on stdout, serves until stdin closes.
"""

from __future__ import annotations

import json
import sys
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

    def __init__(self, log_file: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log_file = log_file

    def _record(self, request: dict[str, Any], headers: dict[str, str]) -> None:
        super()._record(request, headers)
        if self.log_file:
            lower = {k.lower(): v for k, v in headers.items()}
            line = {"model": request.get("model"), "authorization": lower.get("authorization")}
            with open(self.log_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")


def main() -> int:
    script = json.loads(Path(sys.argv[1]).read_text())
    steps = script["replies"] if isinstance(script, dict) else script
    default = script.get("default") if isinstance(script, dict) else None
    log_file = script.get("requestLog") if isinstance(script, dict) else None
    server = LoggingModel(log_file, default=(lambda _r: text(default)) if default else None)
    server.push(*[reply(step) for step in steps])
    server.start()
    print(server.base_url, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
