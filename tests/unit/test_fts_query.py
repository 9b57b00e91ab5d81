"""Recall's query quoting and what it indexes of a stored message."""

from __future__ import annotations

import json

import pytest

from turnstoned.core import messages as m
from turnstoned.store.recall import index_entry, quote_query


@pytest.mark.parametrize(("text", "expected"), [
    ("hello world", '"hello" "world"'),
    ('say"hello', '"say""hello"'),
    ('"', '""""'),
    ('""', '""""""'),
    ("foo*", '"foo*"'),
    ("*", '"*"'),
    ("-foo bar", '"-foo" "bar"'),
    ("a NEAR b", '"a" "NEAR" "b"'),
    ("NEAR(a b)", '"NEAR(a" "b)"'),
    ("(unbalanced", '"(unbalanced"'),
    ("x) OR (y", '"x)" "OR" "(y"'),
    ("col:value ^start", '"col:value" "^start"'),
    ("  spaced\tout\nlines  ", '"spaced" "out" "lines"'),
    ("nul\x00byte", '"nul" "byte"'),
    ("", ""),
    ("   ", ""),
])
def test_any_text_becomes_a_conjunction_of_literal_strings(text: str, expected: str) -> None:
    assert quote_query(text) == expected


def body(**fields: object) -> str:
    return m.encode(m.Message(**fields))  # type: ignore[arg-type]


def test_user_and_notice_messages_are_indexed_with_their_kind() -> None:
    assert index_entry(body(role="user", content="fix the parser")) == ("fix the parser", "user")
    assert index_entry(body(role="user", content="shell exited", notice="shell")) == (
        "shell exited", "notice")


def test_assistant_text_and_tool_call_argument_values_are_indexed() -> None:
    call = m.ToolCall(id="c1", name="bash", arguments=json.dumps({"command": "make lint",
                                                                  "timeout": 30}))
    text, kind = index_entry(body(role="assistant", content="Running it.", tool_calls=[call]))
    assert kind == "assistant"
    assert text.splitlines() == ["Running it.", "bash make lint 30"]


def test_tool_results_are_indexed_with_the_tool_name_and_text_parts_only() -> None:
    parts = [{"type": "text", "text": "a red square"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    assert index_entry(body(role="tool", name="read_file", tool_call_id="c1", content=parts)) == (
        "a red square", "tool:read_file")


def test_recall_calls_and_results_are_never_indexed() -> None:
    call = m.ToolCall(id="r1", name="recall", arguments='{"query": "secret plan"}')
    assert index_entry(body(role="assistant", tool_calls=[call])) is None
    assert index_entry(body(role="tool", name="recall", tool_call_id="r1",
                            content="Conversations (1 matches): secret plan")) is None
    other = m.ToolCall(id="b1", name="bash", arguments='{"command": "ls"}')
    text, _ = index_entry(body(role="assistant", tool_calls=[call, other]))
    assert "secret" not in text and "ls" in text


@pytest.mark.parametrize("raw", ["", "not json", "[1, 2]", '{"role": "system", "content": "x"}',
                                 '{"role": "user", "content": "   "}'])
def test_unusable_or_empty_bodies_are_skipped(raw: str) -> None:
    assert index_entry(raw) is None
