"""The front-matter block of a skill file: a small subset of YAML, parsed by hand.

Supported: ``key: value`` scalars (optionally quoted), flow lists
``key: [a, "b c"]``, block lists (``key:`` followed by ``- item`` lines),
blank lines and ``#`` comment lines. Anything else is an error: a skill whose
header cannot be read is skipped rather than half understood.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$")
_DELIMITER = "---"

Value = str | list[str]


class FrontMatterError(ValueError):
    """The header is malformed; the text says where."""


def split(text: str) -> tuple[dict[str, Value], str]:
    """``(fields, body)`` of a document that starts with a ``---`` block."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != _DELIMITER:
        raise FrontMatterError("no front-matter: the file must start with a '---' line")
    for end in range(1, len(lines)):
        if lines[end].strip() == _DELIMITER:
            fields = parse(lines[1:end])
            return fields, "\n".join(lines[end + 1:]).strip("\n")
    raise FrontMatterError("front-matter is not closed by a '---' line")


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    if " #" in raw:  # a trailing comment on an unquoted value
        raw = raw.split(" #", 1)[0].rstrip()
    return raw


def _flow_list(raw: str, line_no: int) -> list[str]:
    inner = raw.strip()
    if not inner.endswith("]"):
        raise FrontMatterError(f"line {line_no}: a list opened with '[' must end with ']'")
    items = [_scalar(part) for part in inner[1:-1].split(",")]
    return [item for item in items if item]


def parse(lines: list[str]) -> dict[str, Value]:
    """The fields of the lines between the delimiters (line numbers count from the file's 2nd)."""
    fields: dict[str, Value] = {}
    current: str | None = None
    for offset, line in enumerate(lines):
        line_no = offset + 2
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") or stripped == "-":
            block = fields.get(current) if current else None
            if not isinstance(block, list):
                raise FrontMatterError(f"line {line_no}: a '- item' line outside a list")
            item = _scalar(stripped[1:])
            if item:
                block.append(item)
            continue
        match = _KEY.match(stripped)
        if match is None:
            raise FrontMatterError(f"line {line_no}: expected 'key: value', got {stripped[:60]!r}")
        key, raw = match.group(1).lower(), match.group(2)
        if raw.strip().startswith("["):
            fields[key] = _flow_list(raw, line_no)
        elif raw.strip():
            fields[key] = _scalar(raw)
        else:
            fields[key] = []  # a block list may follow
        current = key
    return fields
