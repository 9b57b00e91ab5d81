"""editor_symbol: a symbol's definition or references, from the editor's language servers.

The model names the symbol and a line (from 1) where it appears; the column is found
on that line of the file as the user sees it (an unsaved buffer, else the disk).
Offered only when an editor following the session serves ``editor/symbol``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from turnstoned.protocol import EditorSymbolParams, EditorSymbolResult
from turnstoned.tools import _editor
from turnstoned.tools._lenient import as_int
from turnstoned.tools.base import (
    EditorUnavailable,
    PreparedCall,
    SessionEnv,
    ToolContext,
    ToolOutput,
    prepare_error,
)


class Args(msgspec.Struct, kw_only=True):
    action: Any = "definition"
    path: Any = ""
    line: Any = None
    symbol: Any = ""


def available(env: SessionEnv) -> bool:
    return _editor.serves(env, "symbols")


def _line_text(env: SessionEnv, path: str, line: int) -> str | None:
    text = env.buffers.get(path)
    if text is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for n, row in enumerate(handle, 1):
                    if n == line:
                        return row
            return None
        except OSError:
            return None
    rows = text.splitlines()
    return rows[line - 1] if 0 < line <= len(rows) else None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    action = args.action if args.action in ("definition", "references") else None
    symbol = args.symbol.strip() if isinstance(args.symbol, str) else ""
    given = args.path.strip() if isinstance(args.path, str) else ""
    line = as_int(args.line)
    if action is None:
        return prepare_error("Error: action must be definition or references")
    if not symbol or not given or line is None or line < 1:
        return prepare_error("Error: give path, line (from 1) and symbol")
    path = os.path.realpath(ctx.env.resolve(given))
    row = _line_text(ctx.env, path, line)
    if row is None:
        return prepare_error(f"Error: {given} has no line {line}")
    found = re.search(rf"(?<![\w$]){re.escape(symbol)}(?![\w$])", row) or (
        re.search(re.escape(symbol), row))
    if found is None:
        return prepare_error(f"Error: {symbol!r} is not on line {line} of {given}: {row.strip()[:200]}")
    params = EditorSymbolParams(session_id=ctx.env.session_id, action=action, path=path,
                                line=line - 1,  # LSP counts characters in UTF-16 units
                                character=len(row[:found.start()].encode("utf-16-le")) // 2)
    return PreparedCall(header=f"⚙ editor_symbol: {action} of {symbol} ({given}:{line})",
                        data=(params, symbol))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    params, symbol = call.data
    try:
        result = await _editor.ask(ctx, params, EditorSymbolResult)
    except EditorUnavailable as exc:
        return _editor.unavailable(exc)
    if not result.locations:
        return ToolOutput(f"The editor knows no {params.action} of {symbol}.", summary="none")
    what = "Definition" if params.action == "definition" else "References"
    lines = [f"{what} of {symbol} ({len(result.locations)}):"]
    for loc in result.locations[:_editor.MAX_LISTED]:
        text = f": {loc.text.strip()[:200]}" if loc.text else ""
        lines.append(f"- {_editor.where(loc.path, loc.range, ctx.env)}{text}")
    if len(result.locations) > _editor.MAX_LISTED:
        lines.append(f"… and {len(result.locations) - _editor.MAX_LISTED} more")
    return ToolOutput("\n".join(lines), summary=f"{len(result.locations)} found")
