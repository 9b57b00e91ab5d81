"""Generate the JSON Schema of protocol v1 from ``turnstoned.protocol``.

``python -m turnstoned.schema`` rewrites ``schema/protocol-v1.json``;
``python -m turnstoned.schema --check`` exits 1 when the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from turnstoned import protocol as p

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "protocol-v1.json"


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
        "methods": methods,
        "errors": errors,
        "$defs": components,
    }


def render() -> str:
    return json.dumps(generate(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
        if current != text:
            sys.stderr.write(f"{SCHEMA_FILE} is stale: run python -m turnstoned.schema\n")
            return 1
        return 0
    SCHEMA_FILE.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
