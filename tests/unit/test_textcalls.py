"""Tool calls written as text: every markup, split anywhere across stream chunks."""

from __future__ import annotations

import json

import pytest

from turnstoned.llm import textcalls
from turnstoned.llm.textcalls import Scanner, as_text, calls_in, refuses_tools

NAMES = {"read_file", "bash"}
READ = '{"name": "read_file", "arguments": {"path": "src/app.py"}}'


def scan(text: str, cuts: list[int], fences: bool = True) -> tuple[str, list[tuple[str, dict]]]:
    scanner = Scanner(NAMES, fences=fences)
    pieces, last = [], 0
    for cut in [*cuts, len(text)]:
        pieces.append(scanner.feed(text[last:cut]))
        last = cut
    rest, calls = scanner.finish()
    return "".join(pieces) + rest, [(c.name, json.loads(c.arguments)) for c in calls]


REPLIES = {
    "hermes": (f"Let me look.\n<tool_call>\n{READ}\n</tool_call>", "Let me look.\n"),
    "two hermes": ((f"<tool_call>{READ}</tool_call>\n<tool_call>"
                   '{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'), "\n"),
    "fenced": (f"I will read it:\n```json\n{READ}\n```\nthen answer.", "I will read it:\n\nthen answer."),
    "mistral": (f'[TOOL_CALLS] [{READ}]', ""),
    "llama": ('<|python_tag|>{"name": "read_file", "parameters": {"path": "src/app.py"}}', ""),
    "broken json": ('<tool_call>{"name": "read_file", "arguments": {"path": "src/app.py"}</tool_call>', ""),
    "bare, doubled braces": ('{{"name": "read_file", "arguments": {"path": "src/app.py"}}}', ""),
    "single quotes": ("<tool_call>{'name': 'read_file', 'arguments': {'path': 'src/app.py'}}</tool_call>", ""),
    "string arguments": (('<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"src/app.py\\"}"}'
                         "</tool_call>"), ""),
}


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_every_markup_is_read_wherever_the_stream_splits_it(kind: str) -> None:
    text, shown = REPLIES[kind]
    whole = scan(text, [])
    assert whole[0] == shown and whole[1][0] == ("read_file", {"path": "src/app.py"})
    for cut in range(1, len(text)):
        assert scan(text, [cut]) == whole, cut
    assert scan(text, list(range(1, len(text)))) == whole  # one character at a time


def test_two_calls_in_one_reply_keep_their_order() -> None:
    _, calls = scan(REPLIES["two hermes"][0], [17, 40])
    assert calls == [("read_file", {"path": "src/app.py"}), ("bash", {"command": "ls"})]


def test_code_that_is_no_call_is_shown_as_it_was() -> None:
    text = "Here:\n```python\nprint({'name': 1})\n```\nand ```json\n{\"name\": \"other\"}\n``` too"
    assert scan(text, [7, 30]) == (text, [])
    assert scan("a <tool_ without a call", [5]) == ("a <tool_ without a call", [])
    assert scan("unclosed ```json\n{\"na", []) == ("unclosed ```json\n{\"na", [])
    assert scan(' {"answer": 42}', [3]) == (' {"answer": 42}', [])  # JSON that is no call


def test_native_mode_leaves_fences_to_the_end_of_the_reply() -> None:
    text = REPLIES["fenced"][0]
    assert scan(text, [], fences=False) == (text, [])
    shown, calls = calls_in(text, NAMES)
    assert shown == "I will read it:\n\nthen answer." and calls[0].name == "read_file"
    assert calls_in("just prose", NAMES) == ("just prose", [])


def test_the_conversation_in_text_form() -> None:
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                               "parameters": {"type": "object", "properties": {
                                                   "path": {"type": "string",
                                                            "description": "The file."}},
                                                   "required": ["path"]}}}]
    messages = [{"role": "system", "content": "You are turnstoned."},
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "hello"},
                {"role": "user", "content": "and?"}]
    out = as_text(messages, tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "- read_file: Read a file.\n  - path (string, required): The file." in out[0]["content"]
    assert out[2]["content"] == '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
    assert out[3]["content"] == "<tool_response>\nhello\n</tool_response>\n\nand?"
    assert all("tool_calls" not in m for m in out)


def test_refusals_of_tools_are_recognised() -> None:
    assert refuses_tools("registry.ollama.ai/library/gemma:2b does not support tools")
    assert refuses_tools('"auto" tool choice requires --enable-auto-tool-choice and '
                         "--tool-call-parser to be set")
    assert refuses_tools("tools param requires --jinja flag")
    assert not refuses_tools("the request exceeds the available context size")
    assert textcalls.mode_for(None, "m", "text") == "text"
