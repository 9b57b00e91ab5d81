"""MCP results rendered for the model: tool results, resource contents, prompts.

Works on the SDK's result objects by attribute (duck-typed), so this module
does not import the SDK. Text becomes text; images become OpenAI
``image_url`` parts with a data URI; embedded resources are shown with their
URI; other binary data is summarised (type and size), never dumped.
"""

from __future__ import annotations

import json
from typing import Any

from turnstoned.mcp.models import MCPCallResult

NO_OUTPUT = "(no output)"
EMPTY_RESOURCE = "(empty resource)"
# Binary resource contents up to this size are passed to the model as base64.
MAX_INLINE_BLOB = 64 * 1024

Part = dict[str, Any]


def tool_result(result: Any) -> MCPCallResult:
    """A ``CallToolResult`` for the model; ``isError: true`` makes it an error."""
    parts: list[Part] = []
    for item in getattr(result, "content", None) or ():
        parts.extend(content_parts(item))
    if not parts:
        structured = getattr(result, "structured_content", None)
        if structured is not None:
            parts.append(_text(json.dumps(structured, ensure_ascii=False)))
    return MCPCallResult(
        content=_collapse(parts, NO_OUTPUT), is_error=bool(getattr(result, "is_error", False))
    )


def resource_result(result: Any) -> MCPCallResult:
    """A ``ReadResourceResult`` for the model."""
    parts: list[Part] = []
    for contents in getattr(result, "contents", None) or ():
        parts.extend(_resource_contents(contents, inline_blob=True))
    return MCPCallResult(content=_collapse(parts, EMPTY_RESOURCE))


def prompt_result(result: Any) -> MCPCallResult:
    """A ``GetPromptResult`` as ``[role]: content`` blocks separated by blank lines."""
    blocks: list[str] = []
    for message in getattr(result, "messages", None) or ():
        role = str(getattr(message, "role", "user"))
        text = "\n".join(_as_text(p) for p in content_parts(getattr(message, "content", None)))
        blocks.append(f"[{role}]: {text}")
    return MCPCallResult(content="\n\n".join(blocks) if blocks else NO_OUTPUT)


def content_parts(item: Any) -> list[Part]:
    """One MCP content block as OpenAI content parts."""
    kind = getattr(item, "type", None)
    if kind == "text":
        return [_text(item.text)]
    if kind == "image":
        return [_image(item.mime_type, item.data)]
    if kind == "audio":
        return [_text(f"[audio {item.mime_type}, {_b64_size(item.data)} bytes]")]
    if kind == "resource_link":
        return [_text(_link_text(item))]
    if kind == "resource":
        return _resource_contents(item.resource, inline_blob=False)
    return [] if item is None else [_text(str(item))]


def _resource_contents(contents: Any, *, inline_blob: bool) -> list[Part]:
    uri = getattr(contents, "uri", "")
    mime = getattr(contents, "mime_type", None) or "application/octet-stream"
    text = getattr(contents, "text", None)
    if text is not None:
        return [_text(text if inline_blob else f"[resource {uri}]\n{text}")]
    blob = getattr(contents, "blob", None) or ""
    if mime.startswith("image/"):
        return [_text(f"[resource {uri}]"), _image(mime, blob)]
    size = _b64_size(blob)
    if inline_blob and len(blob) <= MAX_INLINE_BLOB:
        return [_text(f"[resource {uri}: {mime}, {size} bytes, base64]\n{blob}")]
    return [_text(f"[resource {uri}: {mime}, {size} bytes]")]


def _link_text(item: Any) -> str:
    line = f"[resource link] {item.uri}"
    if getattr(item, "name", None):
        line += f" ({item.name})"
    if getattr(item, "description", None):
        line += f": {item.description}"
    return line


def _text(text: str) -> Part:
    return {"type": "text", "text": text}


def _image(mime: str, data: str) -> Part:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _as_text(part: Part) -> str:
    if part["type"] == "text":
        return str(part["text"])
    return "[image]"


def _collapse(parts: list[Part], empty: str) -> str | list[Part]:
    """Plain text when every part is text (the common case), else the part list."""
    if not parts:
        return empty
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0
