"""Serve the repository's scripted OpenAI-compatible model for the extension's tests.

Usage: python scripted_model.py SCRIPT.json
SCRIPT is a JSON list of replies, one per chat-completions request, in order:
  {"text": "...", "delay": 0.0}                      a streamed text reply
  {"toolCalls": [["call-1", "bash", "{...}"], ...]}  a batch of tool calls
  {"hang": 30, "text": "..."}                        stream the text, then nothing for N seconds
After the script, every request gets {"default": "..."} if given, else a fixed text.
Prints the base URL on stdout, serves until stdin closes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from tests.fakes.model_server import Response, ScriptedModel, hang, text, tool_calls  # noqa: E402


def reply(step: dict[str, Any]) -> Response:
    """One scripted reply from its JSON description."""
    if "toolCalls" in step:
        calls = [(str(c[0]), str(c[1]), str(c[2])) for c in step["toolCalls"]]
        return tool_calls(calls, content=step.get("text", ""))
    if "hang" in step:
        return hang(float(step["hang"]), after_text=str(step.get("text", "")))
    return text(str(step.get("text", "")), delay=float(step.get("delay", 0.0)),
                reasoning=step.get("reasoning"))


def main() -> int:
    script = json.loads(Path(sys.argv[1]).read_text())
    steps = script["replies"] if isinstance(script, dict) else script
    default = script.get("default") if isinstance(script, dict) else None
    server = ScriptedModel(default=(lambda _r: text(default)) if default else None)
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
