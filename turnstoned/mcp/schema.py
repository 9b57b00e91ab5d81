"""MCP tool schemas and names converted to function-calling form (pure, no SDK)."""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

log = logging.getLogger(__name__)

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# Keywords OpenAI-compatible servers reject at the top of a function's parameters.
_TOP_LEVEL_REJECTED = ("anyOf", "oneOf", "allOf", "not", "enum", "const")


def to_parameters(schema: Any) -> dict[str, Any]:
    """An MCP ``inputSchema`` as function-calling ``parameters``.

    Always an object schema with a ``properties`` dict; ``$schema`` is dropped at
    every level; ``required`` keeps only declared properties; top-level
    combinators that strict servers refuse are removed. Everything else
    (descriptions, nested schemas, ``$defs``/``$ref``) is kept as sent.
    """
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    cleaned: dict[str, Any] = _strip_schema_keyword(schema)
    for key in _TOP_LEVEL_REJECTED:
        if cleaned.pop(key, None) is not None:
            log.debug("dropped top-level %r from a tool input schema", key)
    properties = cleaned.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    cleaned["type"] = "object"
    cleaned["properties"] = properties
    required = cleaned.pop("required", None)
    if isinstance(required, list):
        kept = [name for name in required if isinstance(name, str) and name in properties]
        if kept:
            cleaned["required"] = kept
    return cleaned


def _strip_schema_keyword(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_schema_keyword(v) for k, v in node.items() if k != "$schema"}
    if isinstance(node, list):
        return [_strip_schema_keyword(v) for v in node]
    return node


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """``mcp__{server}__{tool}`` made safe and unique; adds the result to ``taken``.

    Characters outside ``[A-Za-z0-9_-]`` become ``_``; a name longer than 64
    characters, or one that collides after that, is cut and given a short hash
    of the original so it stays stable across refreshes.
    """
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) > MAX_NAME or name in taken:
        digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
        counter = 2
        while name in taken:
            name = f"{name[: MAX_NAME - 12]}_{digest[:5]}{counter}"
            counter += 1
    taken.add(name)
    return name
