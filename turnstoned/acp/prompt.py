"""A ``session/prompt``'s content blocks as the engine's input: one text.

- ``text``: as it is;
- ``resource`` (embedded context: a file the user attached, as the editor has it,
  unsaved changes included): its path or URI and its text in a code fence; a
  binary one (``blob``) is named with its type and size, never decoded;
- ``resource_link``: named with its path (``file://``) or URI; the model reads it
  with its tools, through the same approvals as any read;
- ``image`` and ``audio``: refused (``-32602``): the engine's turn input is text, so
  ``initialize`` does not offer them.
"""

from __future__ import annotations

import base64
import binascii
from urllib.parse import unquote, urlsplit

from turnstoned.acp import updates
from turnstoned.acp.rpc import INVALID_PARAMS, AcpError
from turnstoned.acp.wire import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)

MAX_EMBEDDED = 1 << 20  # characters of one attached text passed on (the rest is cut)


def where(uri: str) -> str:
    """A ``file://`` URI as its path; any other URI as it is."""
    if uri.lower().startswith("file:"):
        parts = urlsplit(uri)
        if parts.netloc in ("", "localhost"):
            return unquote(parts.path)
    return uri


def block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ResourceLinkBlock):
        label = block.title or block.name
        described = f": {block.description}" if block.description else ""
        return f"[Attached: {label} ({where(block.uri)}){described}]"
    if isinstance(block, ResourceBlock):
        res = block.resource
        if res.text is not None:
            text = res.text
            cut = ""
            if len(text) > MAX_EMBEDDED:
                cut = f"\n[... {len(text) - MAX_EMBEDDED} more characters not attached]"
                text = text[:MAX_EMBEDDED]
            return f"Attached {where(res.uri)}:\n{updates.fenced(text)}{cut}"
        size = _decoded_size(res.blob or "")
        kind = res.mime_type or "binary data"
        return f"[Attached {where(res.uri)}: {kind}, {size} bytes, not shown]"
    kind = "images" if isinstance(block, ImageBlock) else "audio"
    assert isinstance(block, ImageBlock | AudioBlock)
    raise AcpError(INVALID_PARAMS, f"Invalid params: this agent takes no {kind} in a prompt "
                   "(see promptCapabilities in the answer to initialize)", "invalidParams")


def _decoded_size(blob: str) -> int:
    try:
        return len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        return len(blob) * 3 // 4


def to_text(blocks: list[ContentBlock]) -> str:
    """The prompt as one text (blocks joined by blank lines); ``-32602`` for content the
    engine cannot take, or for a prompt with no text at all."""
    text = "\n\n".join(part for part in (block_text(b) for b in blocks) if part)
    if not text.strip():
        raise AcpError(INVALID_PARAMS, "Invalid params: the prompt holds no text",
                       "invalidParams")
    return text
