"""Protocol v1: one table, camelCase wire names, committed schema without drift."""

from __future__ import annotations

import msgspec

from turnstoned import protocol as p
from turnstoned import schema

REQUIRED_METHODS = {
    "session/start", "session/list", "session/resume", "session/close", "turn/start",
    "turn/interrupt", "tool/list", "mcpServer/list", "mcpServer/refresh", "daemon/health",
    "turn/started", "item/started", "item/agentMessage/delta", "item/reasoning/delta",
    "item/toolCall/outputDelta", "item/completed", "approval/resolved", "turn/completed",
    "item/tool/requestApproval",
}


def test_every_contract_method_is_in_the_table() -> None:
    assert REQUIRED_METHODS <= set(p.METHODS_BY_NAME)
    assert len(p.METHODS_BY_NAME) == len(p.METHODS)


def test_generated_files_match_protocol() -> None:
    """The schema, the TypeScript and Lua bindings and the docs tables all derive from the table."""
    stale = [str(path.relative_to(schema.ROOT)) for path in schema.stale()]
    assert not stale, f"{stale} stale: run `python -m turnstoned.schema`"


def test_bindings_name_every_method() -> None:
    outputs = schema.outputs()
    ts, lua, docs = outputs[schema.TS_FILE], outputs[schema.LUA_FILE], outputs[schema.DOCS_FILE]
    for method in p.METHODS:
        assert f'"{method.name}"' in ts and f'"{method.name}"' in lua
        assert f"| `{method.name}` |" in docs
    assert "export type Item = " in ts and "---@alias turnstoned.Item " in lua
    assert "export interface ToolCallItem {" in ts and "---@class turnstoned.ToolCallItem" in lua


def test_binding_names() -> None:
    from turnstoned import bindings

    assert bindings.const_name("item/agentMessage/delta") == "itemAgentMessageDelta"
    assert bindings.snake_name("mcpServer/statusChanged") == "mcp_server_status_changed"
    assert bindings.const_name("$/cancelRequest") == "cancelRequest"


def test_wire_names_are_camel_case() -> None:
    item = p.ToolCallItem(id="c1", call_id="c1", tool="bash", needs_approval=True,
                          status="pending", is_error=False)
    wire = msgspec.to_builtins(p.ItemStarted(session_id="s", turn_id="t", item_id="c1", item=item))
    assert wire["sessionId"] == "s" and wire["itemId"] == "c1"
    assert wire["item"]["type"] == "toolCall"
    assert wire["item"]["callId"] == "c1" and wire["item"]["needsApproval"] is True
    assert wire["item"]["isError"] is False


def test_input_items_are_tagged() -> None:
    params = msgspec.convert({"sessionId": "s", "input": [{"type": "text", "text": "hi"}]},
                             p.TurnStartParams)
    assert params.input[0].text == "hi"


def test_error_codes_have_kinds() -> None:
    assert set(p.ERROR_KINDS) == set(p.ErrorCode)
    assert p.ErrorCode.METHOD_NOT_FOUND == -32601 and p.ErrorCode.INVALID_PARAMS == -32602


def test_the_lsp_lifecycle_is_in_the_table_and_schema() -> None:
    lifecycle = {"initialize", "initialized", "shutdown", "exit", "$/cancelRequest",
                 "window/showMessage"}
    assert {m.name for m in p.METHODS if m.lsp} == lifecycle
    methods = schema.generate()["methods"]
    assert all(methods[name]["lsp"] is True for name in lifecycle)
    assert methods["initialize"]["result"] == {"$ref": "#/$defs/InitializeResult"}


def test_only_turnstoned_handlers_are_registered() -> None:
    from turnstoned.daemon.server import create

    features = create().protocol.fm.features
    for m in p.METHODS:
        if m.direction == "client->daemon" and not m.lsp:
            assert m.name in features
    assert "initialize" not in features and "exit" not in features


def test_the_docs_keep_method_tables_only_in_the_generated_section() -> None:
    from turnstoned import bindings

    text = schema.DOCS_FILE.read_text(encoding="utf-8")
    outside = text[:text.index(bindings.DOCS_BEGIN)] + text[text.index(bindings.DOCS_END):]
    rows = [line for line in outside.splitlines() if line.startswith("| `")]
    named = [line for line in rows if line.split("`")[1] in p.METHODS_BY_NAME]
    assert named == [], "method tables outside the generated section can drift"


def test_every_event_type_knows_its_one_method() -> None:
    outgoing = [m for m in p.METHODS if m.direction == "daemon->client"]
    assert all(m.params is not None and m.params.method == m.name for m in outgoing)  # type: ignore[attr-defined]
    assert len({m.params for m in outgoing}) == len(outgoing)
    assert p.ItemDelta.method == "" and p.Event.method == ""


def test_handlers_are_registered_against_the_table_and_checked() -> None:
    import pytest

    from turnstoned.daemon import handlers

    assert set(handlers.HANDLERS) == {m.name for m in p.METHODS
                                      if m.direction == "client->daemon" and not m.lsp}
    with pytest.raises(TypeError):
        handlers.handles("turn/started")  # a notification has no handler
    with pytest.raises(TypeError):
        handlers.handles("daemon/health")(handlers.daemon_health)  # one handler per request

    async def mistyped(get_engine: handlers.GetEngine, params: p.SessionRef) -> p.Empty:
        return p.Empty()

    real = handlers.HANDLERS["turn/interrupt"]
    handlers.HANDLERS["turn/interrupt"] = mistyped
    try:
        with pytest.raises(TypeError, match="turn/interrupt"):
            handlers._check()
    finally:
        handlers.HANDLERS["turn/interrupt"] = real
