"""The scripted model server, exercised through the real openai AsyncOpenAI client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.model_server import (
    NO_SCRIPT_TEXT,
    Response,
    ScriptedModel,
    error,
    hang,
    raw,
    text,
    tool_calls,
)

REPO = Path(__file__).resolve().parents[2]
MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]
READ_TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=model.base_url, api_key="sk-test",
                                  max_retries=0) as api:
        yield api


async def collect(client: openai.AsyncOpenAI, **kwargs: Any) -> list[Any]:
    stream = await client.chat.completions.create(
        model=kwargs.pop("model", "qwen-test"), messages=kwargs.pop("messages", MESSAGES),
        stream=True, **kwargs)
    return [chunk async for chunk in stream]


def joined(chunks: list[Any], field: str) -> str:
    return "".join((getattr(c.choices[0].delta, field, None) or "") for c in chunks if c.choices)


async def test_text_stream_assembles_and_reports_usage(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    content = "Hello there, this is a streamed answer."
    model.push(text(content, chunk_size=5))
    chunks = await collect(client, stream_options={"include_usage": True})

    assert joined(chunks, "content") == content
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == 8
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert {c.model for c in chunks} == {"qwen-test"}
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    last = chunks[-1]
    assert last.choices == []
    assert last.usage.completion_tokens == 10
    assert last.usage.total_tokens == last.usage.prompt_tokens + 10
    assert "timings" in (last.model_extra or {})


async def test_usage_only_when_requested(model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(text("short"))
    chunks = await collect(client)
    assert joined(chunks, "content") == "short"
    assert all(c.usage is None and c.choices for c in chunks)


async def test_parallel_tool_calls_assemble_by_index(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    calls = [("A1b2C3d4e5F6g7H8i9J0k1L2m3N4o5P6", "read_file", '{"path": "src/main.py"}'),
             ("second-call", "grep", '{"pattern": "TODO", "path"')]
    model.push(tool_calls(calls, content="Let me look.", finish_reason="length"))
    chunks = await collect(client, tools=[READ_TOOL])

    assembled: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        delta = chunk.choices[0].delta
        for part in delta.tool_calls or []:
            assert delta.content == ""
            slot = assembled.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += part.id or ""
            slot["name"] += (part.function.name if part.function else None) or ""
            slot["arguments"] += (part.function.arguments if part.function else None) or ""
    assert assembled == {i: {"id": c[0], "name": c[1], "arguments": c[2]}
                         for i, c in enumerate(calls)}
    assert sum(1 for c in chunks if c.choices[0].delta.tool_calls) == 6
    assert joined(chunks, "content") == "Let me look."
    assert chunks[-1].choices[0].finish_reason == "length"


async def test_tool_calls_without_content_key(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(tool_calls([("c1", "read_file", "{}")], content=None, split=1))
    chunks = await collect(client)
    assert all(c.choices[0].delta.content is None for c in chunks)
    call = chunks[0].choices[0].delta.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("c1", "read_file", "{}")


async def test_start_delay_is_cut_short_by_a_client_timeout(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(text("late", start_delay=60.0), text("on time"))
    with pytest.raises(openai.APITimeoutError):
        await collect(client.with_options(timeout=0.3))
    assert await asyncio.to_thread(model.wait_disconnects, 1, 10.0) == 1
    assert joined(await collect(client), "content") == "on time"


async def test_reasoning_content_arrives_before_content(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(text("The answer is 4.", reasoning="2 plus 2 makes 4."))
    chunks = await collect(client)
    reasoning = [(c.choices[0].delta.model_extra or {}).get("reasoning_content") for c in chunks]
    assert "".join(r for r in reasoning if r) == "2 plus 2 makes 4."
    first_content = next(i for i, c in enumerate(chunks) if c.choices[0].delta.content)
    assert all(r is None for r in reasoning[first_content:])
    assert joined(chunks, "content") == "The answer is 4."


async def test_errors_map_to_openai_exceptions(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(error(429, "slow down", type_="rate_limit_error"), error(401, "bad key"),
               text("recovered"))
    with pytest.raises(openai.RateLimitError) as limited:
        await collect(client)
    assert limited.value.status_code == 429 and "slow down" in str(limited.value)
    with pytest.raises(openai.AuthenticationError):
        await collect(client)
    assert joined(await collect(client), "content") == "recovered"


async def test_hang_is_interrupted_by_closing_the_stream(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(hang(60.0, after_text="partial"), text("next"))
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    seen = ""
    async for chunk in stream:
        seen += chunk.choices[0].delta.content or ""
        if seen == "partial":
            break
    await asyncio.wait_for(stream.close(), 10)
    assert await asyncio.to_thread(model.wait_disconnects, 1, 10.0) == 1

    assert joined(await collect(client), "content") == "next"


async def test_stop_ends_a_hanging_reply(model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(hang(60.0))
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    await asyncio.wait_for(asyncio.to_thread(model.stop), 10)
    with pytest.raises(openai.APIError):
        await asyncio.wait_for(anext(aiter(stream)), 10)


async def test_requests_are_recorded(model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    await collect(client, tools=[READ_TOOL], stream_options={"include_usage": True},
                  temperature=0.2)
    await collect(client, messages=[{"role": "user", "content": "again"}])
    first, second = model.wait_requests(2)
    assert first["tools"] == [READ_TOOL]
    assert first["stream_options"] == {"include_usage": True}
    assert first["stream"] is True and first["temperature"] == 0.2
    assert first["messages"] == MESSAGES and first["model"] == "qwen-test"
    assert second["messages"][0]["content"] == "again"
    assert model.headers[0]["authorization"] == "Bearer sk-test"


def test_wait_requests_times_out(model: ScriptedModel) -> None:
    with pytest.raises(TimeoutError):
        model.wait_requests(1, timeout=0.05)


async def test_empty_queue_answers_placeholder(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    assert joined(await collect(client), "content") == NO_SCRIPT_TEXT


async def test_pushed_function_and_default_answer_from_the_request() -> None:
    def echo(request: dict[str, Any]) -> Response:
        return text(request["messages"][-1]["content"].upper())

    with ScriptedModel(default=lambda request: text("default")) as model:
        model.push(echo)
        async with openai.AsyncOpenAI(base_url=model.base_url, api_key="k", max_retries=0) as api:
            assert joined(await collect(api, messages=[{"role": "user", "content": "ab"}]),
                          "content") == "AB"
            assert joined(await collect(api), "content") == "default"


async def test_invalid_history_arguments_get_http_500(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(text("fine"))
    history = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "read_file", "arguments": "{"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "error"}]
    with pytest.raises(openai.InternalServerError):
        await collect(client, messages=history)
    assert model.pending() == 1
    history[1]["tool_calls"][0]["function"]["arguments"] = "{}"
    assert joined(await collect(client, messages=history), "content") == "fine"


async def test_a_tool_call_without_its_result_gets_http_400(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(text("fine"))
    call = {"id": "c0", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    unanswered = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [call]},
                  {"role": "user", "content": "go on"}]
    with pytest.raises(openai.BadRequestError, match="Missing: c0"):
        await collect(client, messages=unanswered)
    stray = [*MESSAGES, {"role": "tool", "tool_call_id": "c9", "content": "?"}]
    with pytest.raises(openai.BadRequestError, match="does not answer"):
        await collect(client, messages=stray)
    twice = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [call, call]},
             {"role": "tool", "tool_call_id": "c0", "content": "a"},
             {"role": "tool", "tool_call_id": "c0", "content": "b"}]
    with pytest.raises(openai.BadRequestError, match="duplicate"):
        await collect(client, messages=twice)
    assert len(model.rejected) == 3 and model.pending() == 1
    answered = [*unanswered[:-1], {"role": "tool", "tool_call_id": "c0", "content": "x"},
                unanswered[-1]]
    assert joined(await collect(client, messages=answered), "content") == "fine"


async def test_raw_sends_payloads_verbatim(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "raw!"}, "finish_reason": "stop"}],
             "vendor_extra": {"x": 1}}
    model.push(raw([chunk, json.dumps({**chunk, "choices": []})]))
    chunks = await collect(client)
    assert [c.id for c in chunks] == ["c1", "c1"]
    assert joined(chunks, "content") == "raw!"
    assert chunks[0].model_extra == {"vendor_extra": {"x": 1}}


async def test_non_streaming_request_gets_one_body(
        model: ScriptedModel, client: openai.AsyncOpenAI) -> None:
    model.push(tool_calls([("id1", "read_file", '{"path": "a"}')], content="ok"))
    reply = await client.chat.completions.create(model="m", messages=MESSAGES)
    message = reply.choices[0].message
    assert message.content == "ok" and reply.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("id1", "read_file", '{"path": "a"}')]
    assert reply.usage is not None and reply.usage.completion_tokens > 0


async def test_models_endpoint(client: openai.AsyncOpenAI) -> None:
    assert [m.id async for m in client.models.list()] == ["scripted"]


async def test_command_line_serves_token_replies() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "tests.fakes.model_server", "--port", "0",
               "--text-tokens", "50"]
    with subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True) as proc:  # noqa: ASYNC220
        try:
            assert proc.stderr is not None
            line = await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), 30)
            base_url = line.strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
            async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as api:
                chunks = await collect(api)
            words = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
            assert len(words) == 50 and all(w.endswith(" ") for w in words)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
