"""Serve the repository's scripted OpenAI-compatible model for the Neovim specs.

Prints the server's base URL on the first stdout line, then reads one JSON command per
stdin line and answers each with one JSON line:

- ``{"push": [spec, ...]}`` queues replies; a spec is ``{"text": str, "reasoning"?: str,
  "delay"?: s, "chunk_size"?: n, "start_delay"?: s}``, ``{"tool_calls": [[id, name,
  arguments], ...], "start_delay"?: s}``, ``{"hang": seconds, "after_text"?: str}``, ``{"error": status,
  "message"?: str}`` or ``{"gated": name, "before": str, "after": str}`` (``before``, then
  ``after`` once gate ``name`` opens, at most 30 s later).
- ``{"open": name}`` opens gate ``name``.
- ``{"requests": true}`` answers how many chat requests arrived.
- ``{"request": n}`` answers the messages of the n-th chat request (from 1; -1 is the last),
  the names of the tools it offered and the model it named: ``{"messages": [...], "tools":
  [...], "model": str}``.

``--port N`` serves on that port of 127.0.0.1 (default: any free one). The server stops
when stdin closes.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fakes import model_server as ms

gates: dict[str, threading.Event] = {}


def gate(name: str) -> threading.Event:
    return gates.setdefault(name, threading.Event())


def build(spec: dict[str, Any]) -> ms.Response:
    """One scripted reply from its JSON description."""
    if "gated" in spec:
        return ms.gated(spec["before"], spec["after"], gate(spec["gated"]))
    if "text" in spec:
        return ms.text(spec["text"], chunk_size=spec.get("chunk_size", 4), reasoning=spec.get("reasoning"),
                       delay=spec.get("delay", 0.0), start_delay=spec.get("start_delay", 0.0))
    if "error" in spec:
        return ms.error(spec["error"], spec.get("message", "error"))
    if "tool_calls" in spec:
        calls = [(c[0], c[1], c[2]) for c in spec["tool_calls"]]
        return ms.tool_calls(calls, content=spec.get("content", ""),
                             start_delay=spec.get("start_delay", 0.0))
    if "hang" in spec:
        return ms.hang(spec["hang"], after_text=spec.get("after_text", ""))
    raise ValueError(f"unknown reply spec: {spec!r}")


def main() -> int:
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    with ms.ScriptedModel(port=port) as model:
        print(model.base_url, flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            answer: dict[str, Any] = {"ok": True}
            if "push" in command:
                model.push(*(build(spec) for spec in command["push"]))
            if "open" in command:
                gate(command["open"]).set()
            if command.get("requests"):
                answer["count"] = len(model.requests)
            if "request" in command:
                n = command["request"]
                request = model.requests[n - 1 if n > 0 else n] if model.requests else {}
                answer["messages"] = request.get("messages", [])
                answer["tools"] = [t.get("function", {}).get("name") for t in request.get("tools", [])]
                answer["model"] = request.get("model")
            print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
