"""The model stream against a real loopback server sending what real servers send."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.fakes.model_server import ScriptedModel, raw, text, tool_calls
from turnstoned.config import ModelSettings
from turnstoned.llm.openai_chat import _ThinkSplitter, prewarm, stream_reply
from turnstoned.llm.types import ModelReply


def settings(model: ScriptedModel) -> ModelSettings:
    return ModelSettings(name="scripted", base_url=model.base_url, api_key="sk", context_window=8192,
                         supports_vision=False, max_tokens=None, temperature=None, request_timeout=10)


async def call(model: ScriptedModel) -> tuple[ModelReply, str, str]:
    texts: list[str] = []
    thoughts: list[str] = []
    reply = await stream_reply(settings(model), [{"role": "user", "content": "x"}], [],
                               texts.append, thoughts.append)
    return reply, "".join(texts), "".join(thoughts)


async def test_a_turn_waits_for_the_connection_being_warmed(model: ScriptedModel) -> None:
    """The model list is still on its way when the turn starts: the turn waits for that
    connection instead of opening a second one beside it."""
    model.models_gate = threading.Event()
    model.push(text("hello"))
    warming = asyncio.create_task(prewarm(settings(model)))
    (_, port), = await asyncio.to_thread(model.wait_gets, 1, 5)
    turn = asyncio.create_task(call(model))
    await asyncio.sleep(0.2)  # long enough for a turn that does not wait to have connected
    assert model.client_ports == []
    model.models_gate.set()
    (_, content, _), _ = await asyncio.gather(turn, warming)
    assert content == "hello" and model.client_ports == [port]


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_parallel_calls_assemble_by_index(model: ScriptedModel) -> None:
    model.push(tool_calls([("a" * 32, "read_file", '{"path": "x.py"}'),
                           ("b" * 32, "bash", '{"command": "ls"}')], split=4))
    reply, content, _ = await call(model)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("a" * 32, "read_file", '{"path": "x.py"}'), ("b" * 32, "bash", '{"command": "ls"}')]
    assert content == ""
    assert reply.usage and reply.usage["total_tokens"] > 0


async def test_index_reused_for_a_new_call_and_missing_ids(model: ScriptedModel) -> None:
    model.push(raw([
        chunk({"tool_calls": [{"index": 0, "id": "one", "function": {"name": " bash\n", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "two", "function": {"name": "read_file", "arguments": "{"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"path": "a"}'}}]}),
        chunk({"tool_calls": [{"index": 5, "function": {"name": "search", "arguments": "{}"}}]}),
        chunk({}, finish="length"),
    ]))
    reply, _, _ = await call(model)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls][:2] == [
        ("one", "bash", "{}"), ("two", "read_file", '{"path": "a"}')]
    third = reply.tool_calls[2]
    assert third.name == "search" and third.id.startswith("call_")
    assert reply.finish_reason == "length"


async def test_inline_think_block_becomes_reasoning(model: ScriptedModel) -> None:
    model.push(text("<think>plan the change</think>\nHere is the answer.", chunk_size=3))
    reply, content, thoughts = await call(model)
    assert thoughts == "plan the change"
    assert content == "Here is the answer." == reply.content


async def test_reasoning_content_field(model: ScriptedModel) -> None:
    model.push(text("Done.", reasoning="first I look"))
    reply, content, thoughts = await call(model)
    assert (content, thoughts, reply.reasoning) == ("Done.", "first I look", "first I look")


@pytest.mark.parametrize(("pieces", "content", "reasoning"), [
    (["<thi", "nk>a", "b</th", "ink>rest"], "rest", "ab"),
    (["  <think>x</think>y"], "y", "x"),
    (["no think here <think>x</think>"], "no think here <think>x</think>", ""),
    (["<th", "is is text"], "<this is text", ""),
    (["<think>never closed"], "", "never closed"),
])
def test_think_splitter(pieces: list[str], content: str, reasoning: str) -> None:
    splitter = _ThinkSplitter()
    out_c, out_r = [], []
    for piece in pieces:
        c, r = splitter.feed(piece)
        out_c.append(c)
        out_r.append(r)
    c, r = splitter.flush()
    assert ("".join(out_c) + c, "".join(out_r) + r) == (content, reasoning)


async def test_unreadable_events_are_skipped_and_odd_types_tolerated(model: ScriptedModel) -> None:
    model.push(raw([
        "{not json", "[1, 2]",
        chunk({"content": None, "reasoning": {"unexpected": "shape"}}),
        chunk({"content": "fine", "tool_calls": ["junk", {"index": "x", "function": {"name": "bash",
                                                                                     "arguments": "{}"}}]}),
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": None, "total_tokens": 3}},
    ]))
    reply, content, _ = await call(model)
    assert content == "fine"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("bash", "{}")]
    assert reply.usage == {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}


async def test_error_event_mid_stream_is_typed(model: ScriptedModel) -> None:
    from turnstoned.llm.types import ModelError

    model.push(raw([chunk({"content": "par"}), {"error": {"message": "context length exceeded"}}]))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == "contextWindowExceeded"
