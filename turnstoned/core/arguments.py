"""Reading a tool call's arguments as the model wrote them: JSON, repaired where possible.

Small local models send broken JSON, bare strings, or JSON strings where an
object belongs. What can be recovered becomes an argument dict; what cannot
becomes the error text the model reads (never an exception).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

SALVAGE_KEYS = (
    "action", "command", "code", "content", "initial_message", "message", "name", "page",
    "parent_ws_id", "path", "pattern", "prompt", "query", "status", "task_id", "title", "uri",
    "url", "ws_id",
)
_SALVAGE = {k: re.compile(rf'"{k}"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL) for k in SALVAGE_KEYS}


def _salvage(raw: str) -> dict[str, Any] | None:
    for key, pattern in _SALVAGE.items():
        m = pattern.search(raw)
        if m:
            try:
                return {key: json.loads(f'"{m.group(1)}"')}
            except ValueError:
                return {key: m.group(1)}
    return None


def parse_arguments(name: str, raw: str | None, primary_key: str | None) -> dict[str, Any] | str:
    """The call's arguments as a dict, or the error text the model should read."""
    text = raw if raw and raw.strip() else "{}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        salvaged = _salvage(text)
        if salvaged is not None:
            return salvaged
        if primary_key and text.strip() and not text.strip().startswith("{"):
            return {primary_key: text}
        hint = (f'Expected valid JSON, e.g. {{"{primary_key}": "..."}}' if primary_key
                else "Arguments must be valid JSON.")
        return (f"JSON parse error for tool '{name}': {exc}\nRaw arguments (first 500 chars): "
                f"{text[:500]}\n{hint}\nPlease retry with correctly formatted JSON arguments.")
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and primary_key:
        return {primary_key: value}  # beyond the original: a JSON string is a bare value
    return (f"Error: arguments for tool '{name}' must be a JSON object, got "
            f"{type(value).__name__}: {text[:200]}")


def is_object(text: str | None) -> bool:
    try:
        return isinstance(json.loads(text or ""), dict)
    except ValueError:
        return False


def unknown_tool_text(name: str, available: Sequence[str]) -> str:
    return (f"Unknown tool: '{name}'. Available tools: {', '.join(available)}. "
            "Use one of the listed tool names exactly.")
