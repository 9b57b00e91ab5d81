"""The model stream against a real loopback server sending what real servers send."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from types import TracebackType
from typing import Any, Literal, Self

import pytest

from tests.fakes.model_server import (
    ScriptedModel,
    error,
    error_text,
    flood,
    raw,
    text,
    tool_calls,
)
from turnstoned.config import ModelSettings
from turnstoned.llm.openai_chat import MAX_REPLY_CHARS, _ThinkSplitter, prewarm, stream_reply
from turnstoned.llm.types import ModelError, ModelReply

MIB = 1024 * 1024


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
    model.push(raw([chunk({"content": "par"}), {"error": {"message": "context length exceeded"}}]))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == "contextWindowExceeded"


# ---------------------------------------------------------------- a reply without end


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssWatch:
    """The process's peak RSS growth while the block runs, sampled in a thread. Past
    ``abort_over`` bytes of growth it cancels ``task``, so a build without a ceiling fails
    the test instead of eating the shared machine."""

    def __init__(self, task: asyncio.Task[Any], abort_over: int = 400 * MIB) -> None:
        self.task, self.abort_over = task, abort_over
        self.loop = asyncio.get_running_loop()
        self.base = self.peak = rss()
        self.aborted = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def growth(self) -> int:
        return self.peak - self.base

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, rss())
            if self.growth > self.abort_over and not self.aborted:
                self.aborted = True
                self.loop.call_soon_threadsafe(self.task.cancel)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()


def counted_call(model: ScriptedModel, **kwargs: Any) -> tuple[asyncio.Task[ModelReply], list[int]]:
    """A call whose streamed text and reasoning are only counted (the test keeps none)."""
    seen = [0]

    def count(piece: str) -> None:
        seen[0] += len(piece)

    reply = stream_reply(settings(model), [{"role": "user", "content": "x"}], [], count, count,
                         **kwargs)
    return asyncio.create_task(reply), seen


@pytest.mark.parametrize("kind", ["content", "reasoning", "arguments"])
async def test_an_endless_reply_fails_at_the_size_limit_in_bounded_memory(
        model: ScriptedModel, kind: Literal["content", "reasoning", "arguments"]) -> None:
    """A server streaming forever: the call fails once the reply passes 8 MiB, and the
    process grows by about that much, not by what the server sent."""
    model.push(flood(kind, "y" * 1024, batch=64))
    task, _ = counted_call(model)
    failure: BaseException | None = None
    with RssWatch(task) as watch:
        try:
            await asyncio.wait_for(task, 30)
        except (ModelError, asyncio.CancelledError, TimeoutError) as exc:
            failure = exc
    assert not watch.aborted, f"RSS grew by {watch.growth // MIB} MiB"
    assert isinstance(failure, ModelError), failure
    assert failure.kind == "upstreamUnavailable"
    assert "exceeded 8 MiB" in failure.message
    assert watch.growth < 64 * MIB, f"RSS grew by {watch.growth // MIB} MiB"
    assert MAX_REPLY_CHARS == 8 * MIB


async def test_tiny_pieces_count_toward_the_limit(model: ScriptedModel) -> None:
    model.push(flood("content", "x", batch=2048))
    task, seen = counted_call(model, max_chars=256 * 1024)
    with pytest.raises(ModelError) as info:
        await asyncio.wait_for(task, 30)
    assert "exceeded 256 KiB" in info.value.message
    assert 256 * 1024 <= seen[0] <= 256 * 1024 + 1


async def test_an_interrupt_mid_flood_ends_the_call_at_once(model: ScriptedModel) -> None:
    """Thousands of one-character chunks a millisecond: the loop still runs other tasks,
    and cancelling the call ends it (and its connection) within a fraction of a second."""
    model.push(flood("content", "x", batch=4096))
    task, seen = counted_call(model)
    lags: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            lags.append(now - last - 0.005)
            last = now

    tick = asyncio.create_task(ticker())
    async with asyncio.timeout(20):
        while seen[0] < 200_000:
            await asyncio.sleep(0.01)
    assert not task.done()
    start = time.monotonic()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    elapsed = time.monotonic() - start
    tick.cancel()
    assert done and task.cancelled()
    assert elapsed < 1.0, f"the call took {elapsed:.2f}s to end"
    assert max(lags) < 0.25, f"the event loop stalled for {max(lags):.2f}s"
    assert await asyncio.to_thread(model.wait_disconnects, 1, 5) >= 1


# ---------------------------------------------------------------- a reply cut short


@pytest.mark.parametrize("cut", ["end", "abort"])
async def test_a_stream_cut_mid_tool_call_fails(model: ScriptedModel,
                                                cut: Literal["end", "abort"]) -> None:
    """The server goes away in the middle of a call's arguments (without a finish_reason or
    [DONE]): the call fails, so no half-written tool call runs."""
    model.push(tool_calls([("call_1", "write_file", '{"path": "a.py", "content": "x = 1"}')],
                          split=4, cut=cut))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == "upstreamUnavailable"
    assert "ended the reply before it was complete" in info.value.message


async def test_a_text_stream_without_finish_or_done_fails(model: ScriptedModel) -> None:
    model.push(raw([chunk({"content": "half an ans"})], done=False))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert "ended the reply before it was complete" in info.value.message


async def test_a_finish_reason_without_done_is_complete(model: ScriptedModel) -> None:
    """Some proxies drop the [DONE] line; the finish_reason already ended the reply."""
    model.push(tool_calls([("call_1", "bash", '{"command": "ls"}')]), text("fine", done=False))
    reply, _, _ = await call(model)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("bash", '{"command": "ls"}')]
    reply, content, _ = await call(model)
    assert (content, reply.finish_reason) == ("fine", "stop")


async def test_done_without_a_finish_reason_is_complete(model: ScriptedModel) -> None:
    model.push(raw([chunk({"content": "all of it"})]))
    reply, content, _ = await call(model)
    assert (content, reply.finish_reason) == ("all of it", None)


# ---------------------------------------------------------------- errors that echo a key

KEY = "sk-proj-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz1Q"
ENV_TOKEN = "OPENAI_API_KEY=" + "a8F3kL9zQ2xW7vB4nM6pR1tY5uE0iO3s"


def assert_redacted(exc: ModelError, *kept: str) -> None:
    for text_ in (exc.message, str(exc)):
        assert KEY[8:20] not in text_ and "a8F3kL9zQ2xW7vB4" not in text_, text_
        assert "[REDACTED" in text_
        for words in kept:
            assert words in text_


async def test_a_401_that_echoes_the_key_is_redacted(model: ScriptedModel) -> None:
    assert len(KEY) == len("sk-proj-") + 40
    model.push(error(401, f"Incorrect API key provided: {KEY}. Or set {ENV_TOKEN} instead.",
                     type_="invalid_request_error"))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == "unauthorized"
    assert_redacted(info.value, "Incorrect API key provided", "OPENAI_API_KEY")


async def test_a_plain_text_error_body_that_echoes_the_key_is_redacted(
        model: ScriptedModel) -> None:
    model.push(error_text(403, f"proxy: key {KEY} is not allowed; {ENV_TOKEN}"))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == "unauthorized"
    assert_redacted(info.value, "is not allowed")


@pytest.mark.parametrize(("message", "kind"), [
    (f"upstream refused {KEY} ({ENV_TOKEN})", "upstreamUnavailable"),
    (f"context length exceeded for {KEY} ({ENV_TOKEN})", "contextWindowExceeded"),
])
async def test_an_error_event_that_echoes_the_key_is_redacted(
        model: ScriptedModel, message: str, kind: str) -> None:
    model.push(raw([chunk({"content": "par"}), {"error": {"message": message}}]))
    with pytest.raises(ModelError) as info:
        await call(model)
    assert info.value.kind == kind
    assert_redacted(info.value)
