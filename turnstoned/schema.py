"""Generate everything derived from ``turnstoned.protocol``.

``python -m turnstoned.schema`` rewrites the JSON Schema
(``schema/protocol-v1.json``), the VS Code extension's TypeScript declarations
(``clients/vscode/src/protocol.ts``), the Neovim plugin's Lua annotations and
method constants (``clients/neovim/lua/turnstoned/protocol.lua``) and the
method tables of ``docs/protocol.md``; ``--check`` exits 1 when any is stale.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

import msgspec

from turnstoned import bindings
from turnstoned import protocol as p

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "schema" / "protocol-v1.json"
TS_FILE = ROOT / "clients" / "vscode" / "src" / "protocol.ts"
LUA_FILE = ROOT / "clients" / "neovim" / "lua" / "turnstoned" / "protocol.lua"
DOCS_FILE = ROOT / "docs" / "protocol.md"


def _aliases() -> dict[str, Any]:
    """The protocol's named Literal and Union types (``ToolStatus``, ``Item``, ...)."""
    found = {}
    for name, value in vars(p).items():
        if name.startswith("_") or typing.get_origin(value) not in (typing.Literal, typing.Union, types.UnionType):
            continue
        found[name] = value
    return found


def generate() -> dict[str, Any]:
    types: list[Any] = []
    for m in p.METHODS:
        types.extend(t for t in (m.params, m.result) if t is not None)
    refs, components = msgspec.json.schema_components(
        types, ref_template="#/$defs/{name}")
    it = iter(refs)
    methods: dict[str, Any] = {}
    for m in p.METHODS:
        entry: dict[str, Any] = {"direction": m.direction, "kind": m.kind, "description": m.doc}
        if m.lsp:
            entry["lsp"] = True
        if m.params is not None:
            entry["params"] = next(it)
        if m.result is not None:
            entry["result"] = next(it)
        methods[m.name] = entry
    errors = {code.name: {"code": int(code), "kind": p.ERROR_KINDS[code]} for code in p.ErrorCode}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "turnstoned protocol",
        "protocolVersion": p.PROTOCOL_VERSION,
        "protocolRevision": p.PROTOCOL_REVISION,
        "methods": methods,
        "errors": errors,
        "$defs": components,
    }


def render() -> str:
    return json.dumps(generate(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    """Every generated file and the text it must hold."""
    schema = generate()
    aliases = _aliases()
    alias_refs, _ = msgspec.json.schema_components(list(aliases.values()),
                                                   ref_template="#/$defs/{name}")
    alias_nodes = dict(zip(aliases, alias_refs, strict=True))
    docs = DOCS_FILE.read_text(encoding="utf-8") if DOCS_FILE.exists() else ""
    return {
        SCHEMA_FILE: render(),
        TS_FILE: bindings.render_typescript(schema, alias_nodes),
        LUA_FILE: bindings.render_lua(schema, alias_nodes),
        DOCS_FILE: bindings.splice_docs(docs, bindings.render_docs_tables(schema)),
    }


def stale() -> list[Path]:
    return [path for path, text in outputs().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        paths = stale()
        for path in paths:
            sys.stderr.write(f"{path.relative_to(ROOT)} is stale: run python -m turnstoned.schema\n")
        return 1 if paths else 0
    for path, text in outputs().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
