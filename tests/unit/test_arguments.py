"""Phase 1 argument parsing: the salvage and primary-key rules, and prepare isolation."""

from __future__ import annotations

from typing import Any

import pytest

from turnstoned.core.arguments import parse_arguments, unknown_tool_text
from turnstoned.core.pipeline import prepare_one
from turnstoned.llm.types import RawToolCall
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext, ToolOutput


@pytest.mark.parametrize(("raw", "pk", "expected"), [
    (None, "command", {}),
    ("", "command", {}),
    ("   ", "command", {}),
    ('{"command": "ls"}', "command", {"command": "ls"}),
    ('{"command": "ls", "extra": 1}', "command", {"command": "ls", "extra": 1}),
    # key salvage from broken JSON, fixed key order, JSON-unescaped
    ('{"command": "echo \\"hi\\"\\n", "timeout": }', "command", {"command": 'echo "hi"\n'}),
    ('{"path": "a.py", "content": "x', "content", {"path": "a.py"}),
    ('{"zzz": "1", "query": "foo', "query", None),
    # bare strings reach the primary key, raw and unstripped
    ("ls -la", "command", {"command": "ls -la"}),
    ("  list ", "action", {"action": "  list "}),
    # beyond the original: a JSON string is a bare value too
    ('"ls"', "command", {"command": "ls"}),
])
def test_parse_table(raw: str | None, pk: str, expected: dict[str, Any] | None) -> None:
    result = parse_arguments("tool", raw, pk)
    if expected is None:
        assert isinstance(result, str) and "JSON parse error" in result
    else:
        assert result == expected


def test_unsalvageable_error_text() -> None:
    result = parse_arguments("bash", "{command: echo hi}", "command")
    assert isinstance(result, str)
    assert "JSON parse error for tool 'bash'" in result
    assert '{"command": "..."}' in result
    assert "Please retry" in result


def test_no_primary_key_hint() -> None:
    result = parse_arguments("x", "not json", None)
    assert isinstance(result, str) and "Arguments must be valid JSON." in result


@pytest.mark.parametrize("raw", ["123", "[1, 2]", "null", "true"])
def test_non_object_json_is_an_error(raw: str) -> None:
    result = parse_arguments("x", raw, "command")
    assert isinstance(result, str) and "must be a JSON object" in result


class _Echo:
    name = "echo"
    primary_key = "text"

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        if args.get("text") == "boom":
            raise RuntimeError("kaput")
        return PreparedCall(header=f"echo {args['text']}")

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("ok")


def _ctx(tmp_path: Any) -> ToolContext:
    return ToolContext(env=SessionEnv(session_id="s", kind="interactive", cwd=tmp_path))


def test_prepare_fills_identity_and_repairs_arguments(tmp_path: Any) -> None:
    call = prepare_one(RawToolCall("c1", " echo\n", "hello"), _Echo(), ["echo"], _ctx(tmp_path))
    assert (call.call_id, call.tool, call.arguments, call.error) == ("c1", "echo", '{"text": "hello"}', None)


def test_broken_arguments_are_never_sent_back(tmp_path: Any) -> None:
    call = prepare_one(RawToolCall("c1", "echo", "{"), _Echo(), ["echo"], _ctx(tmp_path))
    assert call.error and "JSON parse error" in call.error
    assert call.arguments == "{}"


def test_preparer_exception_stays_in_its_call(tmp_path: Any) -> None:
    call = prepare_one(RawToolCall("c1", "echo", '{"text": "boom"}'), _Echo(), ["echo"], _ctx(tmp_path))
    assert call.error is not None
    assert call.error.startswith("Internal error preparing echo: RuntimeError: kaput")
    assert "Sibling tool calls" in call.error


def test_unknown_tool_lists_the_available_ones(tmp_path: Any) -> None:
    call = prepare_one(RawToolCall("c9", "rm_everything", "{}"), None, ["bash", "read_file"], _ctx(tmp_path))
    assert call.error == unknown_tool_text("rm_everything", ["bash", "read_file"])
    assert "Available tools: bash, read_file" in call.error
    assert call.needs_approval is False
